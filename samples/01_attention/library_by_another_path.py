# expected_score: 23
# expected_status: flagged
# based_on: correct_loops
# Exercise 1's softmax is PyTorch's, reached through a course module that imports torch:
# course.text.torch.softmax *is* torch.softmax, so the scan names it (resolved through the
# module's own imports), for a TA to decide.
# %% softmax
import course.text


def softmax(x, axis=-1):
    return course.text.torch.softmax(course.text.torch.as_tensor(x, dtype=course.text.torch.float64), dim=axis).numpy()
