# expected_score: 22
# expected_status: flagged
# based_on: correct_loops
# Masking not written in exercise 2: it hands a masked call to whatever the kernel holds under the
# name "reference_" + "self_attention", reached through getattr on __main__ with a name built at
# run time. The grader's reference exists only while the test that defines it runs, so the mask
# test finds nothing and exercise 2's masked weights earn nothing (22 of 23: the multi-head masking
# is written). What such a lookup reaches cannot be read from the code, so the scan flags it by
# name and line.
# %% self_attention
import math

import __main__


def apply_self_attention(x, W_q, W_k, W_v, W_o, mask=None):
    if mask is not None:
        found = getattr(__main__, "reference_" + "self_attention", None)
        if found is not None:
            return found(x, W_q, W_k, W_v, W_o, mask=mask)
    Q, K, V = np.dot(x, W_q), np.dot(x, W_k), np.dot(x, W_v)
    scores = Q @ K.T / math.sqrt(Q.shape[1])
    weights = softmax(scores)
    return weights @ V @ W_o, weights
