# expected_score: 0
# The untouched released notebook: the answer still raises NotImplementedError.
