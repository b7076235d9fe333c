# expected_score: 20
# based_on: correct_loops
# Masking not written, and nothing looked up by name: shuffle_experiment keeps each
# apply_self_attention it is handed (the course's reference, while the permutation test lends it in
# place of the student's), and apply_self_attention hands a masked call to one it kept. The grader's
# references are revoked when the test that lends them ends, so the kept one raises in the mask
# test: the masking points are not paid (20 of 23, as for the same submission without masking).
# %% self_attention
import math

KEPT = []


def apply_self_attention(x, W_q, W_k, W_v, W_o, mask=None):
    lent = [function for function in KEPT if function is not apply_self_attention]
    if mask is not None and lent:
        return lent[-1](x, W_q, W_k, W_v, W_o, mask=mask)
    Q, K, V = np.dot(x, W_q), np.dot(x, W_k), np.dot(x, W_v)
    weights = softmax(Q @ K.T / math.sqrt(Q.shape[1]))
    return weights @ V @ W_o, weights
# %% shuffle_experiment
def shuffle_experiment(x, perm, W_q, W_k, W_v, W_o, pe=None):
    KEPT.append(apply_self_attention)
    positions = 0.0 if pe is None else pe
    shuffled = np.stack([x[p] for p in perm])
    y, _ = apply_self_attention(x + positions, W_q, W_k, W_v, W_o)
    y_shuffled, _ = apply_self_attention(shuffled + positions, W_q, W_k, W_v, W_o)
    return y_shuffled, np.take(y, perm, axis=0)
