"""Where things live. Every path in the course is resolved here, never relative to the cwd.

Under ``nbgrader autograde`` the kernel's working directory is
``autograded/<student>/<assignment>/``: a relative path that works from ``source/`` silently
fails there and a correct solution loses its points. So notebooks find fixtures through
:func:`fixtures_dir`, which honours ``COURSE_FIXTURES`` (set in ``nbgrader_config.py`` and
inherited by the grading kernel) and otherwise uses the folder next to this package.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES_VARIABLE = "COURSE_FIXTURES"

DATA = ROOT / "data"


@dataclass(frozen=True)
class CourseDir:
    """An nbgrader course folder: the real one, or a scratch copy the tests grade in.

    Folder names are nbgrader's own workflow steps, so ``ls`` reads as the workflow.
    """

    root: Path

    @property
    def source(self) -> Path:
        return self.root / "source"

    @property
    def release(self) -> Path:
        return self.root / "release"

    @property
    def submitted(self) -> Path:
        return self.root / "submitted"

    @property
    def autograded(self) -> Path:
        return self.root / "autograded"

    @property
    def feedback(self) -> Path:
        return self.root / "feedback"

    @property
    def gradebook(self) -> Path:
        return self.root / "gradebook.db"

    @property
    def db_url(self) -> str:
        # timeout: parallel graders wait for SQLite's write lock instead of failing at once.
        return f"sqlite:///{self.gradebook}?timeout=60"

    def nbgrader_args(self) -> list[str]:
        """Command-line overrides pointing nbgrader at this folder (they beat nbgrader_config.py)."""
        return [f"--CourseDirectory.root={self.root}", f"--CourseDirectory.db_url={self.db_url}"]


COURSE = CourseDir(ROOT)
SOURCE = COURSE.source
RELEASE = COURSE.release


def fixtures_dir() -> Path:
    return Path(os.environ.get(FIXTURES_VARIABLE) or ROOT / "fixtures").resolve()


def visibility_dir(hidden: bool) -> Path:
    """Public fixtures ship to students; hidden ones live only where grading happens."""
    return fixtures_dir() / ("hidden" if hidden else "public")


def samples_dir(assignment: str) -> Path:
    """Bundled sample submissions (instructor side: they contain correct answers)."""
    return fixtures_dir() / "submissions" / assignment


def assignments() -> list[str]:
    """Assignment names, in course order, read off ``source/`` (always the real one)."""
    return sorted(p.name for p in SOURCE.iterdir() if (p / f"{p.name}.ipynb").is_file())


def source_notebook(assignment: str) -> Path:
    return SOURCE / assignment / f"{assignment}.ipynb"


def release_notebook(assignment: str, release_root: Path = RELEASE) -> Path:
    return release_root / assignment / f"{assignment}.ipynb"
