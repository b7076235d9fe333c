# expected_score: 17
# expected_status: graded
# A memory bomb in the positional-encoding cell: the grading process's memory limit turns it
# into a MemoryError in that cell instead of taking the machine down.
# %% softmax
def softmax(x, axis=-1):
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    out = np.empty_like(x)
    for index in np.ndindex(x.shape[:-1]):
        row = x[index]
        e = np.exp(row - row.max())
        out[index] = e / e.sum()
    return np.moveaxis(out, -1, axis)
# %% self_attention
import math

def apply_self_attention(x, W_q, W_k, W_v, W_o, mask=None):
    Q, K, V = np.dot(x, W_q), np.dot(x, W_k), np.dot(x, W_v)
    n, d = Q.shape
    weights = np.zeros((n, n))
    for i in range(n):
        scores = np.array([Q[i] @ K[j] for j in range(n)]) / math.sqrt(d)
        if mask is not None:
            scores = np.where(mask[i], scores, -np.inf)
        weights[i] = softmax(scores)
    out = np.zeros((n, V.shape[1]))
    for i in range(n):
        for j in range(n):
            out[i] += weights[i, j] * V[j]
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
hog = [np.ones(2**27) for _ in range(10**6)]
import math

def positional_encoding(seq_len, d_model):
    pe = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(d_model):
            angle = pos / 10000 ** ((i - i % 2) / d_model)
            pe[pos, i] = math.sin(angle) if i % 2 == 0 else math.cos(angle)
    return pe
# %% causal_mask
def causal_mask(seq_len):
    return np.arange(seq_len)[None, :] <= np.arange(seq_len)[:, None]
# %% q_scaling
Each score is a sum of d_k products of unit-variance numbers, so its variance is d_k. Big scores make the softmax nearly one-hot and its gradient tiny; dividing by sqrt(d_k) keeps the variance at 1.
# %% q_cost
Quadratic in the sequence length n: QK^T costs n^2 d operations and the attention matrix has n^2 entries per head.
# %% q_values
One value vector per token (n of them, each d_qkv long); each output is their weighted average, weights from the softmax row.
# %% q_heads
Several heads can look at different positions and relations at the same time instead of one averaged distribution, for about the same parameters.
