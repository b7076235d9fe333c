# expected_score: 23
# expected_status: flagged
# based_on: correct_loops
# Correct, plus code the integrity scan must see however it is written: a shell escape through
# %sx, a module imported by a name built at run time, and a sys.modules lookup by a built name.
# Nothing here changes a grade (the sandbox has no network and the judge decides); the scan
# flags each for a TA.
# %% softmax
import importlib
import sys

listing = %sx ls
runner = importlib.import_module("sub" + "process")
same = sys.modules["sub" + "process"]


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
