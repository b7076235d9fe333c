# expected_score: 7
# expected_status: flagged
# based_on: correct_loops
# Exercise 2 not written: apply_self_attention calls whatever other function in globals() ends in
# "self_attention" (the course's reference, if a hidden test has brought one into the kernel).
# Exercise 2's own hidden test runs before its reference exists, so exercise 2 earns nothing (and
# the shuffle and mask tests that call it lose their share); the mask test, which runs after
# exercise 2's reference exists, finds it for the single-head checks; the scan flags the globals()
# lookup for a TA (7 of 23, flagged).
# %% self_attention
def apply_self_attention(x, W_q, W_k, W_v, W_o, mask=None):
    for name, function in list(globals().items()):
        if name.endswith("self_attention") and name != "apply_self_attention" and callable(function):
            return function(x, W_q, W_k, W_v, W_o, mask=mask)
    raise NotImplementedError()
