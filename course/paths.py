"""Where things live. Every path in the course is resolved here, never relative to the cwd.

Under ``nbgrader autograde`` the kernel's working directory is
``autograded/<student>/<assignment>/``: a relative path that works from ``source/`` silently
fails there and a correct solution loses its points. So notebooks find fixtures through
:func:`fixtures_dir`, which honours ``COURSE_FIXTURES`` (set in ``nbgrader_config.py`` and
inherited by the grading kernel) and otherwise uses the folder next to this package.
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES_VARIABLE = "COURSE_FIXTURES"

SOURCE = ROOT / "source"
RELEASE = ROOT / "release"
SUBMITTED = ROOT / "submitted"
AUTOGRADED = ROOT / "autograded"
FEEDBACK = ROOT / "feedback"
DATA = ROOT / "data"


def fixtures_dir() -> Path:
    return Path(os.environ.get(FIXTURES_VARIABLE) or ROOT / "fixtures").resolve()


def visibility_dir(hidden: bool) -> Path:
    """Public fixtures ship to students; hidden ones live only where grading happens."""
    return fixtures_dir() / ("hidden" if hidden else "public")


def samples_dir(assignment: str) -> Path:
    """Bundled sample submissions (instructor side: they contain correct answers)."""
    return fixtures_dir() / "submissions" / assignment


def assignments() -> list[str]:
    """Assignment names, in course order, read off ``source/``."""
    return sorted(p.name for p in SOURCE.iterdir() if (p / f"{p.name}.ipynb").is_file())


def source_notebook(assignment: str) -> Path:
    return SOURCE / assignment / f"{assignment}.ipynb"


def release_notebook(assignment: str, release_root: Path = RELEASE) -> Path:
    return release_root / assignment / f"{assignment}.ipynb"
