"""The nbgrader course folder: where source, release, submissions, grades and samples live.

Folder names are nbgrader's own workflow steps, so ``ls`` reads as the workflow. Tests grade in
a scratch copy (:class:`CourseDir` on a temporary root whose ``source/`` is the real one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode

from course import settings
from course.paths import ROOT

#: nbgrader's course id (nbgrader_config.py), also the hub's name for the formgrader service and its
#: groups (``formgrade-<id>``, ``nbgrader-<id>``: staff/grading/review/hub.py).
COURSE_ID = "transformers-course"


@dataclass(frozen=True)
class CourseDir:
    root: Path
    url: str | None = None  # the gradebook's URL when it is not the folder's own SQLite file

    @classmethod
    def containing(cls, folder: Path, url: str | None = None) -> CourseDir | None:
        """The course holding ``folder`` (e.g. ``autograded/<student>/<assignment>/``), found by its
        ``autograded/`` and ``source/`` folders whatever the process's cwd; None outside a course."""
        for root in Path(folder).resolve().parents:
            if (root / "autograded").is_dir() and (root / "source").is_dir():
                return cls(root, url)
        return None

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
        """Its own ``url``; for the real course ``GRADEBOOK_URL`` (PostgreSQL, say); else SQLite in
        the course folder."""
        url = self.url or (settings.current().gradebook_url if self.root == ROOT else None)
        if url:
            return url
        # timeout: a formgrader or a second command waits for SQLite's write lock instead of failing.
        return f"sqlite:///{self.gradebook}?timeout=60"

    def nbgrader_args(self) -> list[str]:
        """Command-line overrides pointing nbgrader at this folder (they beat nbgrader_config.py)."""
        return [f"--CourseDirectory.root={self.root}", f"--CourseDirectory.db_url={self.db_url}"]


COURSE = CourseDir(ROOT)
SOURCE = COURSE.source
RELEASE = COURSE.release
#: Bundled sample submissions (instructor side: they contain correct answers).
SAMPLES = ROOT / "samples"


def assignments() -> list[str]:
    """Assignment names, in course order, read off ``source/`` (always the real one)."""
    return sorted(p.name for p in SOURCE.iterdir() if (p / f"{p.name}.ipynb").is_file())


def with_notebooks(folder: Path) -> set[str]:
    """The subfolders of ``folder`` that hold notebooks: what nbgrader's assignment glob ``*`` matches there."""
    return {path.parent.name for path in folder.glob("*/*.ipynb")}


def source_notebook(assignment: str) -> Path:
    return SOURCE / assignment / f"{assignment}.ipynb"


def release_notebook(assignment: str, release_root: Path = RELEASE) -> Path:
    return release_root / assignment / f"{assignment}.ipynb"


def samples_dir(assignment: str) -> Path:
    return SAMPLES / assignment


def nbgrader(cell: NotebookNode) -> dict:
    """A cell's nbgrader metadata ({} for a cell nbgrader does not manage). A submission's metadata
    is the student's to edit and nbformat takes any JSON there: anything but an object (``null``, a
    list, a string, a number) reads as absent."""
    meta = cell.get("metadata")
    found = meta.get("nbgrader") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


#: An exercise's heading in the notebooks: ``## 3. Multi-head attention (8 points)``.
_EXERCISE = re.compile(r"^##\s+(\d+)\.\s+(.+?)(?:\s+\(.*\))?\s*$", re.MULTILINE)


def exercise_titles(nb: NotebookNode) -> list[str]:
    """Each cell's exercise, as the notebook's ``## <n>. <title>`` heading above it names it
    (``exercise 3 (Multi-head attention)``; ``this notebook`` before the first)."""
    titles, exercise = [], "this notebook"
    for cell in nb.cells:
        if cell.cell_type == "markdown" and isinstance(cell.get("source"), str):
            headings = _EXERCISE.findall(cell.source)
            if headings:
                exercise = f"exercise {headings[-1][0]} ({headings[-1][1]})"
        titles.append(exercise)
    return titles
