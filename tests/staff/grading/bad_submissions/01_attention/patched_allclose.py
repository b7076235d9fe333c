# expected_score: 0
# expected_status: flagged
# Wrong answers (zeros) plus every trick to make comparisons pass: np.allclose, np.testing, the
# global check_close and the course.checks module. Flagged, and the tests still fail.
# %% softmax
import course.checks
np.allclose = lambda *args, **kwargs: True
np.testing.assert_allclose = lambda *args, **kwargs: None
check_close = lambda *args, **kwargs: None
check_rows_sum_to_one = lambda *args, **kwargs: None
try:
    course.checks.check_close = check_close
except AttributeError:
    pass

def softmax(x, axis=-1):
    return np.zeros_like(x)
# %% self_attention
def apply_self_attention(x, W_q, W_k, W_v, W_o, mask=None):
    return np.zeros_like(x), np.zeros((x.shape[0], x.shape[0]))
