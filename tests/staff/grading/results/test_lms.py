"""The LMS's files (staff/grading/results/lms.py), read back as each LMS documents its import:
Canvas's gradebook import (identity columns, a "Points Possible" row, a blank cell changes nothing)
and a generic wide CSV (a row per student, a column per assignment)."""

from __future__ import annotations

import csv

import pytest

from staff.grading.results import lms
from support import read_canvas

ROWS = [
    # student, assignment, status, score, pending, review
    ("ada", "a1", "graded", "20.5", "0", ""),
    ("ada", "a2", "flagged", "", "0", "held: flagged, waiting for a TA's decision"),
    ("bob", "a1", "graded", "12", "4", ""),
    ("bob", "a2", "not submitted", "0.0", "0", ""),
    ("cy", "a1", "invalid notebook", "0.0", "0", ""),
    ("cy", "a2", "flagged", "9", "0", "flags reviewed by ta on 2027-01-01: points stand"),
]
NAMES = {"ada": ("Ada", "Lovelace"), "bob": ("Bob", "Kahn"), "cy": ("Cy", "Twombly")}
POINTS = {"a1": 23.0, "a2": 31.0}


def _rows() -> list[dict]:
    return [
        {
            "student_id": s,
            "assignment": a,
            "status": status,
            "score": score,
            "manual_pending": pending,
            "review": review,
            "first_name": NAMES[s][0],
            "last_name": NAMES[s][1],
            "email": f"{s}@example.edu",
        }
        for s, a, status, score, pending, review in ROWS
    ]


def test_canvas_gets_final_scores_only_and_points_possible(tmp_path):
    (path,) = lms.write(_rows(), ["a1", "a2"], POINTS, tmp_path, ["canvas"])
    assert path.name == "grades-canvas.csv"
    points, grades = read_canvas(path)
    assert points == POINTS
    assert grades == {
        "ada": {"a1": 20.5, "a2": None},  # held: flagged, no decision yet
        "bob": {"a1": None, "a2": 0.0},  # pending free-text points; never handed in a closed assignment
        "cy": {"a1": None, "a2": 9.0},  # could not be graded; a decided flag
    }
    with path.open() as f:
        assert next(csv.reader(f))[:1] == ["Student"] and "Kahn, Bob" in f.read()


def test_an_assignment_still_open_is_not_a_zero(tmp_path):
    (path,) = lms.write(_rows(), ["a1", "a2"], POINTS, tmp_path, ["canvas"], still_open=frozenset({"a2"}))
    assert read_canvas(path)[1]["bob"]["a2"] is None


def test_the_wide_file_has_a_row_per_student_and_says_why_a_cell_is_blank(tmp_path):
    (path,) = lms.write(_rows(), ["a1", "a2"], POINTS, tmp_path, ["wide"])
    with path.open(newline="") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    assert list(rows) == ["ada", "bob", "cy"]
    assert (rows["ada"]["a1"], rows["ada"]["a2"]) == ("20.5", "")
    assert rows["ada"]["notes"] == "a2: held for review (flagged)"
    assert rows["bob"]["notes"] == "a1: pending: 4 points a TA has not graded"
    assert (
        rows["cy"]["notes"] == "a1: not graded (invalid notebook)" and rows["cy"]["email"] == "cy@example.edu"
    )


def test_an_unknown_format_names_the_known_ones():
    assert lms.formats(["wide", "canvas"]) == ["wide", "canvas"] and lms.formats([]) == []
    with pytest.raises(lms.UnknownFormat, match="'moodle'; the formats are canvas, wide"):
        lms.formats(["canvas", "moodle"])
