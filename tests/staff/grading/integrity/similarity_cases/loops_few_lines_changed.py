# expected_score: 23
# correct_loops.py with five lines changed (np.max, np.sqrt, the angle, a row built by a loop, np.tril).
# %% softmax
def softmax(x, axis=-1):
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    out = np.empty_like(x)
    for index in np.ndindex(x.shape[:-1]):
        row = x[index]
        e = np.exp(row - np.max(row))
        out[index] = e / e.sum()
    return np.moveaxis(out, -1, axis)
# %% self_attention
def apply_self_attention(x, W_q, W_k, W_v, W_o, mask=None):
    Q, K, V = np.dot(x, W_q), np.dot(x, W_k), np.dot(x, W_v)
    n, d = Q.shape
    weights = np.zeros((n, n))
    for i in range(n):
        scores = np.array([Q[i] @ K[j] for j in range(n)]) / np.sqrt(d)
        if mask is not None:
            scores = np.where(mask[i], scores, -np.inf)
        weights[i] = softmax(scores)
    out = np.zeros((n, V.shape[1]))
    for i in range(n):
        out[i] = weights[i] @ V
    return out @ W_o, weights
# %% multihead_attention
def apply_multihead_attention(x, W_q, W_k, W_v, W_o, mask=None):
    d = W_q.shape[2]
    Q, K, V = x[None] @ W_q, x[None] @ W_k, x[None] @ W_v    # (h, seq, d)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)
    if mask is not None:
        scores = np.where(mask[None], scores, -np.inf)
    weights = softmax(scores)
    concat = np.concatenate(list(weights @ V), axis=-1)      # (seq, h * d)
    return concat @ W_o, weights
# %% positional_encoding
import math

def positional_encoding(seq_len, d_model):
    pe = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(d_model):
            angle = pos / 10000 ** (2 * (i // 2) / d_model)
            pe[pos, i] = math.sin(angle) if i % 2 == 0 else math.cos(angle)
    return pe
# %% shuffle_experiment
def shuffle_experiment(x, perm, W_q, W_k, W_v, W_o, pe=None):
    positions = 0.0 if pe is None else pe                    # belongs to the slots, not the tokens
    shuffled = np.stack([x[p] for p in perm])
    y, _ = apply_self_attention(x + positions, W_q, W_k, W_v, W_o)
    y_shuffled, _ = apply_self_attention(shuffled + positions, W_q, W_k, W_v, W_o)
    return y_shuffled, np.take(y, perm, axis=0)
# %% causal_mask
def causal_mask(seq_len):
    return np.tril(np.ones((seq_len, seq_len), dtype=bool))
