"""The nbgrader gradebook: register assignments before grading, back it up before writing.

The gradebook holds hidden tests verbatim (``source_cell``): it never leaves the instructor's
side (git-ignored, never published).
"""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import datetime
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from staff import nbgrader_cli
from staff.course_dir import CourseDir
from staff.grading.gradebook import indexes, late

BACKUPS_KEPT = 5


def backup(course: CourseDir) -> Path | None:
    """Copy the gradebook (SQLite's online backup: consistent) before anything rewrites it;
    the last :data:`BACKUPS_KEPT` copies are kept. A server gradebook (PostgreSQL) is backed up
    by its server (``pg_dump``), not here."""
    if not course.db_url.startswith("sqlite:") or not course.gradebook.exists():
        return None
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    target = course.gradebook.with_name(f"{course.gradebook.name}.{stamp}.bak")
    with sqlite3.connect(course.gradebook) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    for old in sorted(course.gradebook.parent.glob(f"{course.gradebook.name}.*.bak"))[:-BACKUPS_KEPT]:
        old.unlink()
    return target


def register(assignments: list[str], course: CourseDir) -> None:
    """Make sure the gradebook knows each assignment's cells, hidden tests included (a fresh clone
    has no gradebook): generate into a throw-away folder, which records the source cells, and
    leave release/ alone. Registering also creates a missing gradebook once, not in parallel,
    writes each assignment's due date from ``due_dates.toml`` (:mod:`late`), and adds the indexes
    nbgrader's gradebook lacks (:mod:`gradebook_indexes`: pages of a large class in seconds)."""
    missing = []
    if course.gradebook.exists() or not course.db_url.startswith("sqlite:"):
        with Gradebook(course.db_url) as gb:
            for assignment in assignments:
                try:
                    if not gb.find_assignment(assignment).notebooks:
                        missing.append(assignment)
                except MissingEntry:
                    missing.append(assignment)
    else:
        missing = list(assignments)
    with tempfile.TemporaryDirectory() as tmp:
        for assignment in missing:
            nbgrader_cli.run(
                "generate_assignment",
                assignment,
                "--log-level=WARN",
                f"--CourseDirectory.release_directory={tmp}",
                course=course,
            )
    late.write_due_dates(assignments, course)
    indexes.ensure(course.db_url)


def import_roster(roster: Path, course: CourseDir) -> None:
    """Students' names and emails from a CSV with the columns ``id,first_name,last_name,email``
    (nbgrader's own ``db student import``), so the formgrader and the export show real names;
    students already in the gradebook keep their grades."""
    if not roster.is_file():
        raise FileNotFoundError(
            f"roster {roster} not found (a CSV with columns id,first_name,last_name,email)"
        )
    nbgrader_cli.run("db", "student", "import", str(roster), "--log-level=WARN", course=course)
