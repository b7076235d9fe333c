"""Disk limits of a grading kernel: a submission may not fill the grading machine's disk.

A kernel writes in two kinds of places. Its own working, temporary and home folders are
size-limited tmpfs inside its sandbox (:data:`PRIVATE`, mounted by :mod:`sandbox`): filling one is
"No space left on device" in the student's cell, and nothing reaches this machine's disk. The
folders the grader must read from outside (the records of its checks, the sockets it is driven
through) are on this machine's disk: there no file may exceed :data:`MAX_FILE_BYTES`
(``RLIMIT_FSIZE``), and :func:`watch` stops the kernel once they hold more than
:data:`SHARED_BYTES` (the submission's status is then ``disk quota``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from course.record import MAX_RECORD_BYTES

#: The kernel's own writable folders, each a size-limited tmpfs inside the sandbox (bytes): a kernel
#: that fills one gets "No space left on device" there, and the grader's disk is never touched.
PRIVATE = {"work": 512 * 2**20, "tmp": 512 * 2**20, "home": 256 * 2**20}
#: The largest file a kernel may write anywhere (RLIMIT_FSIZE); its records are far smaller.
MAX_FILE_BYTES = 4 * MAX_RECORD_BYTES
#: The folders the grader reads (records, sockets) are on its disk: the worker stops a kernel that
#: has left more than this in them (:class:`worker.Runner`).
SHARED_BYTES = 512 * 2**20


def shared_bytes(scratch: Path, limit: int = 100_000) -> int:
    """What a kernel has left in the folders of its sandbox the grader can see (its records and
    sockets), in bytes; a folder of more than ``limit`` entries counts as over any quota."""
    total, seen = 0, 0
    stack = [scratch / "records", scratch / "ipc"]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        seen += len(entries)
        if seen > limit:
            return 1 << 62
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                else:
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total


def watch(scratch: Path, done: threading.Event, over: Callable[[], None], every: float = 0.5) -> None:
    """Call ``over`` (which kills the kernel) once the sandbox ``scratch`` holds more than
    :data:`SHARED_BYTES` where the grader reads; return when ``done`` is set."""
    while not done.wait(every):
        if shared_bytes(scratch) > SHARED_BYTES:
            over()
            return
