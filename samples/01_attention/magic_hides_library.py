# expected_score: 23
# expected_status: flagged
# based_on: correct_loops
# Exercise 1's softmax handed to PyTorch inside a %%time cell magic, with imports of subprocess
# and socket: IPython runs the magic's body as Python, so the integrity scan reads it as the cell's
# own code and names each (the values are right: every check passes; a TA decides).
# %% softmax
%%time
import socket
import subprocess

import torch


def softmax(x, axis=-1):
    return torch.softmax(torch.as_tensor(x, dtype=torch.float64), dim=axis).numpy()
