# expected_score: 23
# expected_status: graded
# based_on: correct_loops
# Prints 50,000 lines (5 MB) before a correct softmax: nbgrader truncates the output; full marks.
# (200,000 lines took the cell past the tests' 10 s limit on 2 busy cores: that is a timeout.)
# %% softmax
for i in range(50_000):
    print("spam " * 20, i)

def softmax(x, axis=-1):
    shifted = np.exp(x - np.amax(x, axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)
