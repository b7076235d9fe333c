# expected_score: 21.2
# expected_status: graded
# based_on: correct_loops
# The trick-free twin of the tampering submissions below: a softmax that forgets to normalise.
# It costs only its own exercise: 3 of its 5 hidden cases fail (1.8 of 3 points; the two left
# have a single element along the axis); the attention exercises built on it are graded with the
# course's softmax in place of it, and pass.
# %% softmax
def softmax(x, axis=-1):
    return np.exp(x - x.max(axis=axis, keepdims=True))
