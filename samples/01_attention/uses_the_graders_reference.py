# expected_score: 15
# expected_status: flagged
# based_on: correct_loops
# Exercise 2 not written: apply_self_attention calls whatever other function in globals() ends in
# "self_attention" (the course's reference, if a hidden test had left one in the kernel). Exercise
# 2's own hidden test runs before any reference of exercise 2 exists, so exercise 2 earns nothing
# (5 points); the mask test, which calls it again, runs after the test that defines the reference
# has ended and the reference is gone with it, so its self-attention points go too (15 of 23). The
# globals() lookup is flagged all the same: the TA's page shows it beside the cell.
# %% self_attention
def apply_self_attention(x, W_q, W_k, W_v, W_o, mask=None):
    for name, function in list(globals().items()):
        if name.endswith("self_attention") and name != "apply_self_attention" and callable(function):
            return function(x, W_q, W_k, W_v, W_o, mask=mask)
    raise NotImplementedError()
