# expected_score: 0
# expected_status: flagged
# based_on: correct_loops
# The wrong softmax of wrong_softmax.py, plus code built at run time (no scan can read it) that
# swaps every check in course.checks for one that passes, past the module's read-only guard.
# The kernel then "passes" every test cell; the judge finds no records at all: 0, below the twin.
# The scan flags the exec of a decoded string.
# %% softmax
import base64
exec(base64.b64decode(
    "aW1wb3J0IHR5cGVzLCBjb3Vyc2UuY2hlY2tzIGFzIG0KZm9yIG4gaW4gKCJjaGVja19jbG9zZSIsICJjaGVja19lcXVhbCIsICJjaGVja19yb3dzX3N1bV90b19vbmUiLCAiY2hlY2tfc2hhcGUiKToKICAgIHR5cGVzLk1vZHVsZVR5cGUuX19zZXRhdHRyX18obSwgbiwgbGFtYmRhICphLCAqKms6IE5vbmUpCg=="
).decode())

def softmax(x, axis=-1):
    return np.exp(x - x.max(axis=axis, keepdims=True))
