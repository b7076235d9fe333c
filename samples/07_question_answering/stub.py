# expected_score: 0
# The untouched released notebook: every answer still raises NotImplementedError.
