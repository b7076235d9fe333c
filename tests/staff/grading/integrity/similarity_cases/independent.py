# expected_score: 23
# Written independently of the reference and of correct_loops: helpers, matmul, a loop over heads.
# %% softmax
def _stable_exp(values, axis):
    # subtract the maximum so exp never overflows
    return np.exp(values - np.amax(values, axis=axis, keepdims=True))


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    numer = _stable_exp(x, axis)
    denom = numer.sum(axis=axis, keepdims=True)
    return numer / denom
# %% self_attention
def _attention_scores(queries, keys):
    scale = 1.0 / np.sqrt(queries.shape[-1])
    return np.matmul(queries, np.swapaxes(keys, -1, -2)) * scale


def _apply_mask(scores, mask):
    if mask is None:
        return scores
    blocked = np.logical_not(mask)
    return np.where(blocked, -np.inf, scores)


def apply_self_attention(x, W_q, W_k, W_v, W_o, mask=None):
    queries = np.matmul(x, W_q)
    keys = np.matmul(x, W_k)
    values = np.matmul(x, W_v)
    attn = softmax(_apply_mask(_attention_scores(queries, keys), mask), axis=-1)
    context = np.matmul(attn, values)
    return np.matmul(context, W_o), attn
# %% multihead_attention
def apply_multihead_attention(x, W_q, W_k, W_v, W_o, mask=None):
    per_head, maps = [], []
    for h in range(W_q.shape[0]):
        queries, keys, values = x @ W_q[h], x @ W_k[h], x @ W_v[h]
        attn = softmax(_apply_mask(_attention_scores(queries, keys), mask), axis=-1)
        maps.append(attn)
        per_head.append(attn @ values)
    merged = np.hstack(per_head)
    return merged @ W_o, np.stack(maps)
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len, dtype=np.float64).reshape(-1, 1)
    dim = np.arange(d_model)
    rates = np.power(10000.0, -(2 * (dim // 2)) / d_model)
    table = pos * rates.reshape(1, -1)
    return np.where(dim % 2 == 0, np.sin(table), np.cos(table))
# %% shuffle_experiment
def shuffle_experiment(x, perm, W_q, W_k, W_v, W_o, pe=None):
    offsets = np.zeros_like(x) if pe is None else pe
    original, _ = apply_self_attention(x + offsets, W_q, W_k, W_v, W_o)
    permuted_input = x[np.asarray(perm)]
    permuted, _ = apply_self_attention(permuted_input + offsets, W_q, W_k, W_v, W_o)
    return permuted, original[np.asarray(perm)]
# %% causal_mask
def causal_mask(seq_len):
    rows, cols = np.indices((seq_len, seq_len))
    return cols <= rows
