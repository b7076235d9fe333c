# expected_score: 0
# expected_status: flagged
# based_on: stub
# include: zero_work_tricks.py
# Does no work and tries every trick against the grader at once (samples/zero_work_tricks.py).
# It must score 0; the integrity scan flags it for a TA.
# %% layer_norm
def layer_norm(x, gamma, beta, eps=1e-5):
    raise NotImplementedError()
