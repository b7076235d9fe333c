"""Where the code runs, and the one setting that switches offline defaults to the hub.

Notebooks call :func:`setup` in their header cell. Everything that differs between Colab,
a laptop and the autograder is decided here, so notebooks never need an edit.
"""
from __future__ import annotations

import importlib.util
import random
import subprocess
import sys

import numpy as np

from course import settings

#: What the notebooks need that Colab's image lacks: import name -> pip requirement.
COLAB_MISSING = {"bertviz": "bertviz==1.4.1", "datasets": "datasets==5.2.0"}

# Where the code runs: decided once, in course.settings (re-exported for the notebooks).
on_colab, under_autograde = settings.on_colab, settings.under_autograde


def is_online() -> bool:
    """Hub models and data (``COURSE_ONLINE``, see :mod:`course.settings`) or the offline ones."""
    return settings.current().online


def _torch():
    """torch if the notebook has imported it, else None. Assignment 1 is NumPy only: importing
    torch there just to seed it would cost every one of its kernels 1.3 s of CPU (measured)."""
    return sys.modules.get("torch")


def seed_everything(seed: int = 0) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch = _torch()
    if torch is not None:
        torch.manual_seed(seed)


_installed: list[str] = []  # what install_missing() put in, for setup()'s summary


def install_missing() -> list[str]:
    """On Colab, pip-install what the notebooks need and the runtime lacks; elsewhere nothing.

    The setup cell calls it before importing anything else, so nothing it installs has been
    imported yet. Returns the requirements it installed.
    """
    if not on_colab():
        return []
    missing = [req for name, req in COLAB_MISSING.items() if importlib.util.find_spec(name) is None]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *missing], check=True)
        _installed.extend(missing)
    return missing


def setup(seed: int = 0) -> str:
    """The header cell's last call: seed everything and report where the notebook runs.

    Returns (and prints) one line saying what it did, so a student can paste it into a question.
    """
    done = [f"installed {', '.join(_installed)}"] if _installed else []
    seed_everything(seed)
    where = "Colab" if on_colab() else "autograder" if under_autograde() else "local"
    models = "Hugging Face hub" if is_online() else "offline (shipped with the course)"
    done += [f"seed {seed}", f"device {device()}", f"models and data: {models}"]
    summary = f"setup ({where}): " + "; ".join(done)
    print(summary)
    return summary


def device() -> str:
    """"cuda" when a GPU is present (Colab) and the notebook uses torch, else "cpu"."""
    torch = _torch()
    return "cuda" if torch is not None and torch.cuda.is_available() else "cpu"


def amp_dtype(device: str):
    """The mixed-precision dtype for training on ``device``: bfloat16 where the GPU computes it
    natively (Ampere and newer), else float16 (with a ``GradScaler``); None (float32) on the CPU.

    ``torch.cuda.is_bf16_supported()`` alone says yes on a T4 (Colab's free GPU), where bfloat16 is
    only emulated and slow: asking with ``including_emulation=False`` picks float16 there.
    """
    torch = _torch()
    if device != "cuda" or torch is None:
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16


def no_gpu_warning(device: str) -> str | None:
    """What to switch on, when a long training run is about to start on a CPU: fine-tuning the hub
    model on SST-2 (``COURSE_ONLINE=1``, Colab's default) takes hours there. None when there is a
    GPU, offline (the small model and data train in about a minute on a CPU) or under the autograder."""
    if device != "cpu" or not is_online() or under_autograde():
        return None
    where = ("Runtime > Change runtime type > T4 GPU, then run the notebook again from the top"
             if on_colab() else "run it on a machine with a CUDA GPU")
    return (f"WARNING: no GPU. Fine-tuning DistilBERT on SST-2 (COURSE_ONLINE=1) takes hours on a CPU. {where}. "
            "(Or set COURSE_ONLINE=0 for the course's small offline model and data: about a minute on a CPU.)")

