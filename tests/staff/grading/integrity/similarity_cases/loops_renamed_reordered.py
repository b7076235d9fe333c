# expected_score: 23
# correct_loops.py with its names renamed, its imports moved, comments and layout changed.
# %% softmax
def softmax(x, axis=-1):
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    result = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        r = x[idx]
        ex = np.exp(r - r.max())   # stable
        result[idx] = ex / ex.sum()
    return np.moveaxis(result, -1, axis)
# %% self_attention
def apply_self_attention(x, W_q, W_k, W_v, W_o, mask=None):
    q, k, v = np.dot(x, W_q), np.dot(x, W_k), np.dot(x, W_v)
    length, dim = q.shape
    att = np.zeros((length, length))
    for a in range(length):
        s = np.array([q[a] @ k[b] for b in range(length)]) / math.sqrt(dim)
        if mask is not None:
            s = np.where(mask[a], s, -np.inf)
        att[a] = softmax(s)
    res = np.zeros((length, v.shape[1]))
    for a in range(length):
        for b in range(length):
            res[a] += att[a, b] * v[b]
    return res @ W_o, att

import math
# %% multihead_attention
def apply_multihead_attention(x, W_q, W_k, W_v, W_o, mask=None):
    dk = W_q.shape[2]
    q, k, v = x[None] @ W_q, x[None] @ W_k, x[None] @ W_v
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(dk)
    if mask is not None:
        s = np.where(mask[None], s, -np.inf)
    att = softmax(s)
    cat = np.concatenate(list(att @ v), axis=-1)
    return cat @ W_o, att
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    enc = np.zeros((seq_len, d_model))
    for p in range(seq_len):
        for j in range(d_model):
            theta = p / 10000 ** ((j - j % 2) / d_model)
            enc[p, j] = math.sin(theta) if j % 2 == 0 else math.cos(theta)
    return enc

import math
# %% shuffle_experiment
def shuffle_experiment(x, perm, W_q, W_k, W_v, W_o, pe=None):
    pos = 0.0 if pe is None else pe
    xs = np.stack([x[i] for i in perm])
    out, _ = apply_self_attention(x + pos, W_q, W_k, W_v, W_o)
    out_s, _ = apply_self_attention(xs + pos, W_q, W_k, W_v, W_o)
    return out_s, np.take(out, perm, axis=0)
# %% causal_mask
def causal_mask(seq_len):
    return np.arange(seq_len)[None, :] <= np.arange(seq_len)[:, None]
