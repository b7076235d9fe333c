# expected_score: 3
# expected_status: graded
# based_on: correct_loops
# The trick-free twin of the tampering submissions below: a softmax that forgets to normalise
# (its tests fail, and so do the attention tests built on it: 3 points, for the positional encoding).
# %% softmax
def softmax(x, axis=-1):
    return np.exp(x - x.max(axis=axis, keepdims=True))
