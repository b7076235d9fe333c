"""Where the student-side files live. Every path is resolved here, never relative to the cwd.

Under ``nbgrader autograde`` the kernel's working directory is
``autograded/<student>/<assignment>/``: a relative path that works from ``source/`` silently
fails there and a correct solution loses its points. So notebooks find fixtures through
:func:`fixtures_dir`, which follows ``COURSE_FIXTURES`` (see :mod:`course.settings`).
"""

from __future__ import annotations

from pathlib import Path

from course import settings

#: The repository (or, on Colab, the student bundle) that holds this package.
ROOT = settings.ROOT
DATA = ROOT / "data"


def fixtures_dir() -> Path:
    return settings.current().fixtures


def visibility_dir(hidden: bool) -> Path:
    """Public fixtures ship to students; hidden ones live only where grading happens."""
    return fixtures_dir() / ("hidden" if hidden else "public")
