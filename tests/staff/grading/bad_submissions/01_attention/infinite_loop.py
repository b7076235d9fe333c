# expected_score: 20
# expected_status: timeout
# based_on: correct_loops
# An infinite loop in the positional-encoding cell: interrupted after the per-cell limit, that
# function is never defined, everything else is graded (exercise 5 too: its checks take the
# encoding from a fixture, not from the student's function).
# %% positional_encoding
while True:
    pass
