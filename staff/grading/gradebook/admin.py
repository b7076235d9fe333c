"""The nbgrader gradebook: register assignments before grading, back it up before writing, read
the roster's names into it.

The gradebook holds hidden tests verbatim (``source_cell``): it never leaves the instructor's
side (git-ignored, never published).
"""

from __future__ import annotations

import csv
import io
import re
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from staff import course_dir, nbgrader_cli
from staff.course_dir import CourseDir
from staff.grading.gradebook import indexes, late
from staff.grading.status import printable

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
        nbgrader_cli.each_assignment(
            "generate_assignment",
            missing,
            course_dir.with_notebooks(course.source),
            "--log-level=WARN",
            f"--CourseDirectory.release_directory={tmp}",
            course=course,
        )
    late.write_due_dates(assignments, course)
    indexes.ensure(course.db_url)


class RosterError(ValueError):
    """A roster the gradebook cannot take as it is; the message says what, and on which line."""


#: The gradebook's fields for a student (nbgrader's ``Student``), each with the headers a roster may
#: give it, compared without case, spaces or punctuation ("Student ID", "E-mail", "first name"): the
#: first one found wins, any other is ignored. The id also under the names LMS exports give it.
COLUMNS = {
    "id": ("id", "studentid", "username", "loginid"),
    "first_name": ("firstname", "givenname"),
    "last_name": ("lastname", "surname", "familyname"),
    "email": ("email", "emailaddress"),
    "lms_user_id": ("lmsuserid",),
}
_NEEDS = "id (or Student ID, Username, Login ID), and any of first_name, last_name, email"


@dataclass
class Roster:
    students: dict[str, dict[str, str]]  # id -> the fields its row fills (blank ones left out)
    ignored: list[str]  # headers of columns the gradebook has no place for
    blanks: int  # blank fields, left as the gradebook has them


def _squeezed(header: str) -> str:
    return re.sub(r"[\W_]+", "", header.lower())


def _columns(header: list[str], path: Path) -> tuple[dict[str, int], list[str]]:
    """{field: its column} and the headers ignored; no id column: :class:`RosterError`."""
    ranked: dict[str, tuple[int, int]] = {}  # field -> (rank of the header's name, column)
    for column, name in enumerate(header):
        for field, names in COLUMNS.items():
            if _squeezed(name) in names:
                ranked[field] = min(
                    ranked.get(field, (len(names), 0)), (names.index(_squeezed(name)), column)
                )
    columns = {field: column for field, (_, column) in ranked.items()}
    if "id" not in columns:
        found = ", ".join(printable(h) for h in header if h.strip()) or "nothing"
        raise RosterError(f"{path.name}: no column for the student id; found: {found}; needs: {_NEEDS}")
    ignored = [printable(h) for c, h in enumerate(header) if h.strip() and c not in columns.values()]
    return columns, ignored


def read_roster(path: Path) -> Roster:
    """A roster CSV as the gradebook will take it: UTF-8 with or without a byte-order mark (Excel's
    "CSV UTF-8"), comma-, semicolon- or tab-separated (the one that splits the header most), headers
    as :data:`COLUMNS` says, blank lines skipped. Nothing is read into the gradebook here; a row
    without an id, an id twice, a row longer than the header or a header without an id column is a
    :class:`RosterError` naming the lines (all of them, so one fix is enough)."""
    if not path.is_file():
        raise RosterError(f"{path}: no such file (a CSV with the columns id,first_name,last_name,email)")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise RosterError(
            f'{path.name}: not UTF-8 text (byte {error.start}); save it as "CSV UTF-8"'
        ) from None
    first = text.lstrip().split("\n", 1)[0]
    delimiter = max(",;\t", key=lambda d: len(next(csv.reader([first], delimiter=d), [])))
    rows = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = next((row for row in rows if any(cell.strip() for cell in row)), None)
    if header is None:
        raise RosterError(f"{path.name}: empty; needs a header line with {_NEEDS}")
    columns, ignored = _columns(header, path)
    students: dict[str, dict[str, str]] = {}
    lines: dict[str, int] = {}
    problems, blanks = [], 0
    for row in rows:
        line = rows.line_num
        if not any(cell.strip() for cell in row):
            continue
        if any(cell.strip() for cell in row[len(header) :]):
            problems.append(
                f"line {line} has {len(row)} fields, the header {len(header)} "
                f"(a {delimiter!r} inside a name needs quotes)"
            )
            continue
        cells = {field: row[c].strip() if c < len(row) else "" for field, c in columns.items()}
        student = cells.pop("id")
        if not student:
            problems.append(f"line {line} has no student id")
        elif student in students:
            problems.append(f"student id {printable(student)} twice (lines {lines[student]} and {line})")
        else:
            students[student], lines[student] = {f: v for f, v in cells.items() if v}, line
            blanks += sum(1 for v in cells.values() if not v)
    if problems:
        more = f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        raise RosterError(f"{path.name}: nothing imported: {'; '.join(problems[:5])}{more}")
    if not students:
        raise RosterError(f"{path.name}: no students under its header")
    return Roster(students, ignored, blanks)


def import_roster(roster: Path, course: CourseDir) -> Roster:
    """Students' names and emails from a roster CSV (:func:`read_roster`), so the formgrader and the
    export show real names: a student already in the gradebook keeps their grades, and a blank
    field never replaces what the gradebook has. A roster it cannot take changes nothing: its
    message on stderr and exit status 2 (``SystemExit``: the command line shows no traceback)."""
    try:
        found = read_roster(roster)
    except RosterError as error:
        print(f"students: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    if found.ignored:
        print(f"students: ignored column(s) the gradebook has no place for: {', '.join(found.ignored)}")
    with Gradebook(course.db_url) as gb:
        known = {student.id for student in gb.students}
        for student, fields in found.students.items():
            gb.update_or_create_student(student, **fields)
    new = len(found.students.keys() - known)
    print(
        f"students: {new} new, {len(found.students) - new} already in the gradebook"
        + (f"; {found.blanks} blank field(s) left as they were" if found.blanks else "")
    )
    return found


def students(course: CourseDir) -> set[str]:
    """The ids of the students the gradebook knows (none before it exists: nothing creates it here)."""
    if course.db_url.startswith("sqlite:") and not course.gradebook.exists():
        return set()
    with Gradebook(course.db_url) as gb:
        return {student.id for student in gb.students}
