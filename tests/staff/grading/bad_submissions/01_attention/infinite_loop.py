# expected_score: 17
# expected_status: timeout
# based_on: correct_loops
# An infinite loop in the positional-encoding cell: interrupted after the per-cell limit, that
# function is never defined, everything else is graded.
# %% positional_encoding
while True:
    pass
