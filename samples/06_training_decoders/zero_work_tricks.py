# expected_score: 0
# expected_status: flagged
# based_on: stub
# include: zero_work_tricks.py
# Does no work and tries every trick against the grader at once: comparisons that always succeed,
# records forged from the published fixtures by a thread (during and between cells), later cells
# compiled differently (errors swallowed), errors hidden, the notebook's helpers redefined.
# It must score 0; the integrity scan and the shell guard flag it for a TA.
# %% cross_attention
