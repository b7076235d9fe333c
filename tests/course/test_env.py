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


def test_mixed_precision_is_bfloat16_only_where_it_is_native(monkeypatch):
    """Faked GPUs on a CPU: a T4 says bfloat16 is supported (emulated), an A100 computes it natively."""
    def gpu(native: bool):
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: native or including_emulation)

    gpu(native=False)                                   # T4: emulated bfloat16 -> float16 + GradScaler
    assert torch.cuda.is_bf16_supported() and env.amp_dtype("cuda") == torch.float16
    gpu(native=True)                                    # A100 / L4: native bfloat16
    assert env.amp_dtype("cuda") == torch.bfloat16
    assert env.amp_dtype("cpu") is None


def test_no_gpu_warning_only_before_a_long_run_on_a_cpu(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setenv("COURSE_ONLINE", "1")
    assert "no GPU" in env.no_gpu_warning("cpu") and "COURSE_ONLINE=0" in env.no_gpu_warning("cpu")
    assert env.no_gpu_warning("cuda") is None
    monkeypatch.setenv("COURSE_ONLINE", "0")            # offline: the small model trains in a minute
    assert env.no_gpu_warning("cpu") is None
    monkeypatch.setenv("COURSE_ONLINE", "1")
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert env.no_gpu_warning("cpu") is None
