# expected_score: 23
# independent.py with every name the student chose renamed, helpers moved after their callers and
# between cells, comments added and the layout changed.
# %% softmax
def softmax(x, axis=-1):
    # make it float
    x = np.asarray(x, dtype=np.float64)
    top = _safe_exponent(x, axis)
    bottom = top.sum(axis=axis,
                     keepdims=True)
    return top / bottom


def _masked(logits, mask):
    if mask is None:
        return logits
    forbidden = np.logical_not(mask)
    return np.where(forbidden, -np.inf, logits)


def _safe_exponent(arr, axis):
    return np.exp(arr - np.amax(arr, axis=axis, keepdims=True))
# %% self_attention
def apply_self_attention(x, W_q, W_k, W_v, W_o, mask=None):
    """My attention."""
    Q = np.matmul(x, W_q)
    K = np.matmul(x, W_k)
    V = np.matmul(x, W_v)
    probs = softmax(_masked(_dot_scores(Q, K), mask), axis=-1)
    mixed = np.matmul(probs, V)
    return np.matmul(mixed, W_o), probs


def _dot_scores(Q, K):
    factor = 1.0 / np.sqrt(Q.shape[-1])  # scaling
    return np.matmul(Q, np.swapaxes(K, -1, -2)) * factor
# %% multihead_attention
def apply_multihead_attention(x, W_q, W_k, W_v, W_o, mask=None):
    outs, all_probs = [], []
    for head in range(W_q.shape[0]):
        Q, K, V = x @ W_q[head], x @ W_k[head], x @ W_v[head]
        probs = softmax(_masked(_dot_scores(Q, K), mask), axis=-1)
        all_probs.append(probs)
        outs.append(probs @ V)
    joined = np.hstack(outs)
    return joined @ W_o, np.stack(all_probs)
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    p = np.arange(seq_len, dtype=np.float64).reshape(-1, 1)
    j = np.arange(d_model)
    freq = np.power(10000.0, -(2 * (j // 2)) / d_model)
    grid = p * freq.reshape(1, -1)
    return np.where(j % 2 == 0, np.sin(grid), np.cos(grid))
# %% shuffle_experiment
def shuffle_experiment(x, perm, W_q, W_k, W_v, W_o, pe=None):
    shift = np.zeros_like(x) if pe is None else pe
    base, _ = apply_self_attention(x + shift, W_q, W_k, W_v, W_o)
    mixed_in = x[np.asarray(perm)]
    mixed_out, _ = apply_self_attention(mixed_in + shift, W_q, W_k, W_v, W_o)
    return mixed_out, base[np.asarray(perm)]
# %% causal_mask
def causal_mask(seq_len):
    r, c = np.indices((seq_len, seq_len))
    return c <= r
