"""Regrading after a dispute: ``make autograde STUDENT=<id> ASSIGNMENT=<a>`` (either or both).

Exactly those submissions are graded again, forced (even when nothing changed), through the same
path as any batch (:func:`autograde.autograde`: the canary, the cluster, the sandbox, the judge, the
late penalty); nbgrader's saving step sets only automatic points, so every manual grade and comment
a TA gave stays. Each regraded submission appends one line to :func:`log_file` (JSON: when, who,
what, why, the automatic score before and after, the status), which ``make report`` shows.
"""

from __future__ import annotations

import getpass
import json
import os
from datetime import UTC, datetime
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from staff import course_dir, text_table
from staff.course_dir import CourseDir
from staff.grading.status import Outcome


def log_file(course: CourseDir) -> Path:
    return course.autograded / "regrades.jsonl"


def auto_score(course: CourseDir, student: str, assignment: str) -> float | None:
    """The submission's automatic points (code cells), as the report counts them; None if never graded."""
    with Gradebook(course.db_url) as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            return None
        return float(
            sum(g.score for n in submission.notebooks for g in n.grades if g.cell.cell_type == "code")
        )


def regrade(
    course: CourseDir = course_dir.COURSE,
    students: list[str] | None = None,
    assignments: list[str] | None = None,
    reason: str = "",
    **grading,
) -> list[Outcome]:
    """Grade again (forced) the submissions of ``students`` in ``assignments`` (all where None) and
    log each. ``grading`` goes to :func:`autograde.autograde` (jobs, limits, unsafe, progress)."""
    from staff.grading import autograde

    todo = autograde.submissions(course, assignments or course_dir.assignments(), students)
    before = {key: auto_score(course, *key) for key in todo}
    outcomes = autograde.autograde(assignments, course=course, students=students, force=True, **grading)
    who = os.environ.get("SUDO_USER") or getpass.getuser()
    for outcome in outcomes:
        key = outcome.student, outcome.assignment
        log(course, *key, who, reason, before.get(key), outcome.status)
    return outcomes


def log(
    course: CourseDir,
    student: str,
    assignment: str,
    who: str,
    reason: str,
    old_auto: float | None,
    status: str,
) -> None:
    """Append one line to the log: a regrade, or a TA's decision on flags (``staff.grading.gradebook.flag_decisions``)."""
    path = log_file(course)
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "who": who,
        "student": student,
        "assignment": assignment,
        "reason": reason,
        "old_auto": old_auto,
        "new_auto": auto_score(course, student, assignment),
        "status": status,
    }
    with path.open("a") as f:
        f.write(json.dumps(entry) + "\n")


def entries(course: CourseDir = course_dir.COURSE) -> list[dict]:
    """The log, oldest first (a line that is not JSON, e.g. cut off by a crash, is skipped)."""
    path = log_file(course)
    found = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            found.append(entry)
    return found


def _points(value) -> str:
    return "-" if value is None else f"{value:g}"


def table(found: list[dict]) -> str:
    rows = [
        [
            e.get("when", ""),
            e.get("who", ""),
            e.get("assignment", ""),
            e.get("student", ""),
            _points(e.get("old_auto")),
            _points(e.get("new_auto")),
            e.get("status", "") + (f": {e['reason']}" if e.get("reason") else ""),
        ]
        for e in found
    ]
    return text_table.render(
        ["when", "who", "assignment", "student", "auto before", "after", "status / why"],
        rows,
        right=frozenset({4, 5}),
        last_free=True,
    )
