"""Scratch folders of graders and workers: named after the process that made them, so the next
grader on a machine can remove what a killed one left behind (it could not clean up).

Each grading batch has one (``course-grading-<pid>-...``: the fixtures view it packs) and each
submission's runner one (``course-kernel-<pid>-...``: the sandbox's scratch, removed when the
submission is done). A process killed with SIGKILL removes neither; :func:`sweep` runs at the
start of every batch and once in every worker process.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def folder(kind: str) -> Path:
    """A new temporary folder named after this process (``course-<kind>-<pid>-...``), so the next
    grader on this machine can tell a left-over of a dead one from a folder still in use."""
    return Path(tempfile.mkdtemp(prefix=f"course-{kind}-{os.getpid()}-"))


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, dead but not yet reaped by whoever adopted
    it, does not: a killed grader's workers can stay zombies for a while)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's, alive
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2] != "Z"
    except (OSError, ValueError, IndexError):
        return True  # no /proc (not Linux): alive as far as we can tell


def sweep(kinds: tuple[str, ...] = ("kernel", "grading")) -> list[Path]:
    """Remove the scratch folders of graders and workers that are gone (killed before they could
    clean up): their process id is in the name and no longer alive. Returns what was removed."""
    import re

    removed = []
    for path in Path(tempfile.gettempdir()).glob("course-*-*"):
        found = re.fullmatch(rf"course-({'|'.join(kinds)})-(\d+)-.*", path.name)
        if not found or not path.is_dir():
            continue
        if alive(int(found.group(2))):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
