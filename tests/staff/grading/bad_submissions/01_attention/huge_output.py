# expected_score: 20
# expected_status: graded
# based_on: correct_loops
# Prints 200,000 lines before a correct softmax: nbgrader truncates the output; full marks.
# %% softmax
for i in range(200_000):
    print("spam " * 20, i)

def softmax(x, axis=-1):
    shifted = np.exp(x - np.amax(x, axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)
