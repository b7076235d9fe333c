# expected_score: 19
# expected_status: flagged
# based_on: correct_loops
# Masking not implemented in its attention functions; when they are given a mask, they write six
# passing records of the checks the mask test makes (check_close of a value with itself) and
# raise, so the test's own checks never run. Those records are not the checks the test makes
# there: the whole mask test scores 0 and the submission is flagged (the honest version, with
# masking simply left out, keeps the mask test's first point).
# %% self_attention
from course.checks import check_close


def apply_self_attention(x, W_q, W_k, W_v, W_o, mask=None):
    if mask is not None:
        for _ in range(6):
            check_close("your apply_self_attention with a causal mask", 0.0, 0.0, atol=0.0)
        raise NotImplementedError()
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    weights = softmax(q @ k.T / np.sqrt(W_q.shape[-1]), axis=-1)
    return weights @ v @ W_o, weights
