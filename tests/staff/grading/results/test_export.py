"""grades.csv lists every graded sample with its status, pending manual points and late-work columns."""

from __future__ import annotations

import csv

import pytest

from staff import course_dir
from staff.authoring import samples
from staff.grading.results import export
from support import read_canvas

pytestmark = pytest.mark.notebooks


def test_export_lists_every_submission(graded_course):
    csv_path = export.export(course=graded_course)
    with csv_path.open() as f:
        rows = list(csv.DictReader(f))
    found = {(r["student_id"], r["assignment"]): r for r in rows}
    for a in course_dir.assignments():
        for s in samples.load(a):
            row = found[(s.student, a)]
            if s.expected_status == "flagged":  # held until a TA decides: no number for the LMS
                assert (row["raw_score"], row["score"]) == ("", "") and row["review"].startswith("held"), row
            else:
                assert float(row["raw_score"]) >= s.expected_score  # manual points come on top
                assert float(row["score"]) == float(row["raw_score"])
            assert row["status"] == s.expected_status and row["manual_pending"] != ""
            # make samples hands every sample in a day before its due date: on time, no penalty
            assert row["duedate"].endswith(" UTC") and row["timestamp"].endswith(" UTC"), row
            assert (row["days_late"], row["lms_late"], float(row["late_submission_penalty"])) == (
                "0",
                "",
                0.0,
            )


def test_export_writes_what_canvas_imports(graded_course):
    """grades-canvas.csv, read as Canvas reads it: a held (flagged) or pending submission's cell is
    blank (no change in Canvas), every other one its final score."""
    export.export(course=graded_course)
    points, grades = read_canvas(graded_course.root / "grades-canvas.csv")
    with (graded_course.root / "grades.csv").open() as f:
        rows = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}
    for a in course_dir.assignments():
        for s in samples.load(a):
            row, got = rows[(s.student, a)], grades[s.student][a]
            if s.expected_status == "flagged" or float(row["manual_pending"]):
                assert got is None, (s.student, a)
            else:
                assert got == float(row["score"]) and points[a] == float(row["max_score"]), (s.student, a)
    assert (graded_course.root / "grades-wide.csv").is_file()
