# expected_score: 23
# expected_status: flagged
# based_on: correct_loops
# Correct answers, but the softmax cell also opens a hidden fixture: full marks for the code,
# flagged so a TA looks at it.
# %% softmax
import os
with open(os.path.join(os.environ["COURSE_FIXTURES"], "hidden", "01_attention", "softmax.safetensors"), "rb") as secret:
    peek = secret.read(64)

def softmax(x, axis=-1):
    z = np.exp(x - x.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)
