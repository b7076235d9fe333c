"""Where the code runs, and the one setting that switches offline defaults to the hub.

Notebooks call :func:`setup` in their header cell. Everything that differs between Colab,
a laptop and the autograder is decided here, so notebooks never need an edit.
"""
from __future__ import annotations

import os
import random
import sys

import numpy as np

#: Set ``COURSE_ONLINE=1`` to use Hugging Face hub models and datasets instead of the offline
#: defaults shipped with the course (the default on Colab).
ONLINE_VARIABLE = "COURSE_ONLINE"


def on_colab() -> bool:
    return "google.colab" in sys.modules


def under_autograde() -> bool:
    """nbgrader sets NBGRADER_EXECUTION in the grading kernel; used to cap slow work."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def is_online() -> bool:
    value = os.environ.get(ONLINE_VARIABLE)
    if value is None:
        return on_colab() and not under_autograde()
    return value.strip().lower() in {"1", "true", "yes", "on"}


def seed_everything(seed: int = 0) -> None:
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:  # assignment 1 is NumPy only
        return
    torch.manual_seed(seed)


def device() -> str:
    """"cuda" when a GPU is present (Colab), else "cpu"."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"
