"""``grades.csv``: nbgrader's export plus ``status``, ``reason`` and ``manual_pending`` columns, so
a failed autograde or an answer no TA has graded yet never reads as a real zero; and late work:
nbgrader's ``duedate``, ``timestamp`` (both UTC, said so), ``late_submission_penalty`` and ``score``
(raw score less the penalty), with ``days_late`` (started days, as charged) and ``lms_late``
(``LATE`` where the LMS marked it). Due dates and penalties are brought up to date first
(:func:`late.refresh`), so the penalty follows the final points, a TA's included.

A flagged submission no TA has decided on is held (:mod:`flag_decisions`): its ``score`` and
``raw_score`` are left blank and ``review`` says ``held``, so no LMS imports a number for it; a
decided one's ``review`` says what the TA decided. ``reason`` is cut to one short line (the report
keeps the whole)."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

from course import settings
from staff import calendar, course_dir, nbgrader_cli
from staff.course_dir import CourseDir
from staff.grading.gradebook import flag_decisions, late
from staff.grading.results import lms, report
from staff.grading.status import first_line, load_status

#: Characters of a reason in the CSV.
REASON_LIMIT = 160


def export(course: CourseDir = course_dir.COURSE) -> Path:
    """Write ``grades.csv`` and the LMS's files (:mod:`lms`, as ``LMS_EXPORTS`` names them); returns ``grades.csv``."""
    formats = lms.formats(settings.current().lms_exports)  # before anything is written
    csv_path = course.root / "grades.csv"
    lateness = late.refresh(course)
    nbgrader_cli.run("export", f"--to={csv_path}", "--log-level=WARN", course=course)
    with csv_path.open() as f:
        rows = list(csv.DictReader(f))
    status = load_status(course)
    held, decided = flag_decisions.held(course), flag_decisions.current(course)
    pending = {(r.student, r.assignment): r.manual_pending for r in report.rows(course=course)}
    seen = set()
    for row in rows:
        key = (row["student_id"], row["assignment"])
        seen.add(key)
        known = status.get(key)
        submitted = bool(row.get("timestamp")) or key in pending
        row["status"] = (
            known["status"]
            if known
            else ("graded" if key in pending else "not submitted" if not submitted else "not graded")
        )
        row["reason"] = first_line(known["reason"], REASON_LIMIT) if known else ""
        row["review"] = "held: flagged, waiting for a TA's decision" if key in held else ""
        if key in decided:
            row["review"] = decided[key].summary()
        if key in held:
            row["raw_score"] = row["score"] = ""
        row["manual_pending"] = pending.get(key, 0.0)
        row.update(lateness.get(key, {"lms_late": "", "days_late": ""}))
        for column in ("duedate", "timestamp"):  # nbgrader writes UTC without saying so
            row[column] = f"{row[column]} UTC" if row.get(column) else ""
    points, people = _gradebook(course)
    for (student, assignment), known in sorted(status.items()):
        if (student, assignment) not in seen:  # never reached the gradebook (invalid notebook, grader error)
            rows.append(
                {
                    "assignment": assignment,
                    "student_id": student,
                    **people.get(student, {}),
                    "raw_score": 0.0,
                    "score": 0.0,
                    "max_score": points.get(assignment, ""),
                    "status": known["status"],
                    "reason": first_line(known["reason"], REASON_LIMIT),
                    "manual_pending": 0.0,
                    "lms_late": "LATE" if late.lms_late(course, student, assignment) else "",
                }
            )
    fields = list(
        dict.fromkeys(
            [
                *(rows[0].keys() if rows else []),
                "status",
                "reason",
                "review",
                "manual_pending",
                "days_late",
                "lms_late",
            ]
        )
    )
    with csv_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(rows)
    print(f"export: wrote {csv_path}")
    assignments = sorted({r["assignment"] for r in rows})
    still_open = frozenset(calendar.open_at(calendar.moment(), late.policy().late_window))
    for path in lms.write(rows, assignments, points, course.root, formats, still_open):
        print(f"export: wrote {path} (one row per student, for the LMS)")
    blank = Counter(lms.blank_kind(r, still_open) for r in rows) - Counter({"": len(rows)})
    if blank:
        print(
            "export: left blank for the LMS (not final): "
            + ", ".join(f"{n} {k}" for k, n in sorted(blank.items()))
        )
    if held:
        print(
            f"export: {len(held)} flagged submission(s) held for review, their score left blank "
            f"(e.g. {', '.join('/'.join(k) for k in sorted(held)[:3])}): a TA decides in the formgrader "
            f"(the flags' panel on the grading page), then make export again"
        )
    return csv_path


def _gradebook(course: CourseDir) -> tuple[dict[str, float], dict[str, dict[str, str]]]:
    """Each assignment's points and each student's name and email, as the gradebook has them."""
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gb:
        points = {a.name: float(a.max_score or 0) for a in gb.assignments}
        people = {
            s.id: {"first_name": s.first_name or "", "last_name": s.last_name or "", "email": s.email or ""}
            for s in gb.students
        }
    return points, people
