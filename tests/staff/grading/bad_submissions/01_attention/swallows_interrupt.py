# expected_score: 0
# expected_status: timeout
# based_on: correct_loops
# A loop that swallows KeyboardInterrupt, so the interrupt cannot stop it: nbgrader gives up on
# the notebook (or the wall-clock limit kills it) and the status says so.
# %% causal_mask
import time
while True:
    try:
        time.sleep(0.1)
    except KeyboardInterrupt:
        pass
