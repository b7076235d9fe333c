# expected_score: 18
# expected_status: flagged
# based_on: correct_loops
# Exercise 2 not written: apply_self_attention calls whatever other function in globals() ends in
# "self_attention" (the course's reference, if a hidden test has brought one into the kernel).
# Exercise 2's own hidden test runs before any reference of exercise 2 exists, so exercise 2 earns
# nothing (5 points). The later tests that call it again (the shuffle, the mask) run after the
# reference exists, and find it: those points are not its work, so the scan flags the globals()
# lookup, and the TA's page shows it beside the cell (18 of 23, flagged).
# %% self_attention
def apply_self_attention(x, W_q, W_k, W_v, W_o, mask=None):
    for name, function in list(globals().items()):
        if name.endswith("self_attention") and name != "apply_self_attention" and callable(function):
            return function(x, W_q, W_k, W_v, W_o, mask=mask)
    raise NotImplementedError()
