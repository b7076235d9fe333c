"""The notebooks' setup call (course/env.py)."""
from __future__ import annotations

import subprocess
import sys

import torch

from course import env


def test_seed_everything_seeds_torch_once_the_notebook_uses_it():
    env.seed_everything(3)
    first = torch.rand(2)
    env.seed_everything(3)
    assert torch.equal(torch.rand(2), first)


def test_a_numpy_only_notebook_does_not_pay_for_importing_torch():
    code = "import sys; from course import env; env.setup(0); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("False"), out
    assert "device cpu" in out
