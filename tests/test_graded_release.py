"""tests/graded.py hands the release/ and gradebook it generated to the test processes (conftest's
``released``) only once written whole, and lets them generate their own when no build can give it."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import graded


def _config(base):
    """What :func:`graded.folder` reads of pytest's config (a test process outside pytest-xdist)."""
    return SimpleNamespace(_tmp_path_factory=SimpleNamespace(getbasetemp=lambda: base))


def _build_wrote(shared, pid: int) -> None:
    shared.mkdir(parents=True)
    (shared / "pid").write_text(str(pid))
    (shared / graded.RELEASED / "release" / "01_attention").mkdir(parents=True)
    (shared / graded.RELEASED / "release" / "01_attention" / "01_attention.ipynb").write_text("{}")
    (shared / graded.RELEASED / "gradebook.db").write_text("db")


def test_a_written_release_is_copied(tmp_path):
    config = _config(tmp_path / "base")
    _build_wrote(graded.folder(config), os.getpid())
    course = tmp_path / "course"
    course.mkdir()
    assert graded.take_release(config, course)
    assert (course / "release" / "01_attention" / "01_attention.ipynb").read_text() == "{}"
    assert (course / "gradebook.db").read_text() == "db"


def test_no_build_or_one_that_stopped_before_writing_it_gives_nothing(tmp_path):
    config = _config(tmp_path / "base")
    course = tmp_path / "course"
    course.mkdir()
    assert not graded.take_release(config, course)  # no build in this session
    shared = graded.folder(config)
    shared.mkdir(parents=True)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (shared / "pid").write_text(str(gone.pid))
    assert not graded.take_release(config, course)  # died before generating
    (shared / "pid").write_text(str(os.getpid()))
    (shared / "failed").write_text("Traceback ...")
    assert not graded.take_release(config, course)  # failed before generating
    assert list(course.iterdir()) == []
