# expected_score: 23
# expected_status: flagged
# based_on: correct_loops
# Correct everywhere, but exercise 1's softmax is PyTorch's, in the "from scratch, in NumPy"
# assignment: every check passes (the values are right), and the integrity scan names the call,
# the cell and the exercise for a TA to decide what it is worth.
# %% softmax
import torch


def softmax(x, axis=-1):
    return torch.softmax(torch.as_tensor(x, dtype=torch.float64), dim=axis).numpy()
