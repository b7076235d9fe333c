"""Shared test set-up: offline, headless, and a scratch nbgrader course so tests never touch the
instructor's gradebook, release/ or submitted/."""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from course import grading, paths, release, samples  # noqa: E402


@pytest.fixture(scope="session")
def scratch_course(tmp_path_factory) -> paths.CourseDir:
    """A course folder in /tmp whose source/ is the real one: release generated from scratch,
    every bundled sample submitted and autograded there, exactly as `make demo` does."""
    root = tmp_path_factory.mktemp("course")
    (root / "source").symlink_to(paths.SOURCE, target_is_directory=True)
    course = paths.CourseDir(root)
    release.generate(course=course)
    samples.copy_to_submitted(course=course)
    grading.autograde(course=course)
    return course


def notebook_cells(path: Path) -> list:
    import nbformat

    return nbformat.read(path, as_version=4).cells
