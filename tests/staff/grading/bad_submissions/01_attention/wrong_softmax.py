# expected_score: 17
# expected_status: graded
# based_on: correct_loops
# The trick-free twin of the tampering submissions below: a softmax that forgets to normalise
# (the softmax tests fail; the rest is correct).
# %% softmax
def softmax(x, axis=-1):
    return np.exp(x - x.max(axis=axis, keepdims=True))
