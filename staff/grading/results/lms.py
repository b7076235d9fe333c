"""Grades an LMS imports: one row per student, a column per assignment, written by ``make export``
beside ``grades.csv`` (one row per submission), in each format the course names (``LMS_EXPORTS``,
:mod:`course.settings`; default both):

- ``canvas``: ``grades-canvas.csv``, Canvas's gradebook import: the identity columns ``Student``
  ("Last, First"), ``ID`` (Canvas's own, left blank: Canvas then matches ``SIS User ID`` and ``SIS
  Login ID``, the course's student id), ``Section``; a ``Points Possible`` row; one column per
  assignment named as the course names it (Canvas creates an assignment for a column it does not
  know). A blank cell changes nothing in Canvas, so a score that is not final is left blank.
- ``wide``: ``grades-wide.csv``, for any other LMS (Moodle's "Import grades: CSV", Blackboard's
  offline grade upload): ``student_id``, ``last_name``, ``first_name``, ``email``, a column per
  assignment, and ``notes`` saying why a cell is blank.

A score is not final, and its cell blank, while the submission is **held** (flagged, no TA has
decided: :mod:`staff.grading.gradebook.flag_decisions`), **pending** (free-text answers no TA has
graded), or could not be graded (``invalid notebook``, ``grader error``): ``make export`` counts
them. A submission never handed in scores 0. Scores are the final points (late penalty charged).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

from staff.grading.status import NOT_GRADED

FORMATS = ("canvas", "wide")
CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


class UnknownFormat(ValueError):
    """``LMS_EXPORTS`` names a format this module does not write."""


def formats(names: Iterable[str]) -> list[str]:
    """``names`` if each is a format written here, else :class:`UnknownFormat` naming the known ones."""
    names = list(names)
    unknown = [n for n in names if n not in FORMATS]
    if unknown:
        raise UnknownFormat(
            f"LMS_EXPORTS names {', '.join(map(repr, unknown))}; the formats are {', '.join(FORMATS)} "
            f"(comma-separated; empty: grades.csv only)"
        )
    return names


def cell(row: dict, still_open: frozenset[str] = frozenset()) -> tuple[str, str]:
    """``(score for the LMS, why it is blank)`` of one ``grades.csv`` row; ``still_open``: the
    assignments students can still hand in (calendar.open_at), where nothing handed in is not yet a 0."""
    if row.get("review", "").startswith("held"):
        return "", "held for review (flagged)"
    if row.get("status") in NOT_GRADED:
        return "", f"not graded ({row['status']})"
    if float(row.get("manual_pending") or 0):
        return "", f"pending: {float(row['manual_pending']):g} points a TA has not graded"
    if row.get("status") == "not submitted" and row["assignment"] in still_open:
        return "", "not submitted yet (still open)"
    if row.get("status") == "not submitted" or not row.get("score"):
        return "0", ""
    return f"{float(row['score']):g}", ""


def blank_kind(row: dict, still_open: frozenset[str] = frozenset()) -> str:
    """Why the row's LMS cell is blank, in a word or two ("held", "pending", "not graded", "not
    submitted yet"), or ''."""
    why = cell(row, still_open)[1]
    return next((k for k in ("held", "pending", "not graded", "not submitted yet") if why.startswith(k)), "")


def _students(rows: Iterable[dict]) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for row in rows:
        person = found.setdefault(row["student_id"], {})
        for key in ("first_name", "last_name", "email"):
            person[key] = person.get(key) or row.get(key) or ""
    return found


def write(
    rows: list[dict],
    assignments: list[str],
    points: dict[str, float],
    folder: Path,
    formats: Iterable[str],
    still_open: frozenset[str] = frozenset(),
) -> list[Path]:
    """Write each of ``formats`` from ``grades.csv``'s rows; returns the files written."""
    by_key = {(r["student_id"], r["assignment"]): r for r in rows}
    students = _students(rows)
    written = []
    for name in formats:
        if name == "canvas":
            written.append(
                _canvas(by_key, students, assignments, points, folder / "grades-canvas.csv", still_open)
            )
        elif name == "wide":
            written.append(_wide(by_key, students, assignments, folder / "grades-wide.csv", still_open))
    return written


def _canvas(by_key, students, assignments, points, path: Path, still_open) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow([*CANVAS_IDENTITY, *assignments])
        out.writerow(["Points Possible", "", "", "", "", *(f"{points.get(a, 0):g}" for a in assignments)])
        for student, person in sorted(
            students.items(), key=lambda item: (item[1]["last_name"], item[1]["first_name"], item[0])
        ):
            name = ", ".join(p for p in (person["last_name"], person["first_name"]) if p) or student
            scores = [
                cell(by_key[(student, a)], still_open)[0] if (student, a) in by_key else ""
                for a in assignments
            ]
            out.writerow([name, "", student, student, "", *scores])
    return path


def _wide(by_key, students, assignments, path: Path, still_open) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["student_id", "last_name", "first_name", "email", *assignments, "notes"])
        for student, person in sorted(students.items()):
            scores, notes = [], []
            for a in assignments:
                score, why = cell(by_key[(student, a)], still_open) if (student, a) in by_key else ("", "")
                scores.append(score)
                if why:
                    notes.append(f"{a}: {why}")
            out.writerow(
                [
                    student,
                    person["last_name"],
                    person["first_name"],
                    person["email"],
                    *scores,
                    "; ".join(notes),
                ]
            )
    return path
