"""make collect: an LMS zip into submitted/ with real nbgrader zip_collect; unknown names listed;
what the LMS said (its LATE marker, a time in its part of the name) kept for the late penalty."""

from __future__ import annotations

import zipfile
from datetime import datetime

import nbformat
import pytest

from staff.authoring import collect, samples
from staff.grading.gradebook import late

pytestmark = pytest.mark.notebooks  # real nbgrader
ASSIGNMENT = "01_attention"


def test_collect_imports_an_lms_zip_and_reports_unknown_names(make_course, tmp_path):
    course = make_course("collect")
    correct = next(s for s in samples.load(ASSIGNMENT) if s.student == "correct_loops")
    notebook = nbformat.writes(samples.fill(correct, course.release))
    names = {
        "doejane_LATE_12345_67890_01_attention.ipynb": "doejane",
        "smith_4_5_Copy of 01_attention.ipynb": "smith",
        "lee_9_01_attention (1).ipynb": "lee",
        "kim_late_2027-01-30T10-15-00+01:00_7_8_01_attention.ipynb": "kim",
    }
    unknown = ["bob_homework.ipynb", "01_attention.ipynb", "readme.txt"]
    download = tmp_path / "download.zip"
    with zipfile.ZipFile(download, "w") as archive:
        for name in [*names, *unknown]:
            archive.writestr(name, notebook)
    found, unmatched = collect.collect(download, course=course)
    assert sorted(found[ASSIGNMENT]) == sorted(names.values())
    assert sorted(unmatched) == sorted(unknown)
    for student in names.values():
        path = course.submitted / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        assert nbformat.read(path, as_version=4).cells, path
    marked = {s for s in names.values() if late.lms_late(course, s, ASSIGNMENT)}
    assert marked == {"doejane", "kim"}, "the LMS's LATE marker is kept"
    stamps = {s: late.read_timestamp(course.submitted / s / ASSIGNMENT) for s in names.values()}
    assert stamps == {"doejane": None, "smith": None, "lee": None, "kim": datetime(2027, 1, 30, 9, 15)}


def test_only_the_lms_part_of_a_name_says_late_or_when():
    """Canvas: <login>_[LATE_]<user id>_<submission id>_<the student's own file name>. A student can
    name their file anything, but nothing in it can claim a time or hide the LMS's marker."""
    assignments = ["01_attention", "02_distilbert"]
    got = collect.match("doejane_123_456_2027-01-01T00-00-00_LATE_01_attention.ipynb", assignments)
    assert got == {"student_id": "doejane", "late": False, "timestamp": None, "file_id": "01_attention"}
    got = collect.match("doejane_LATE_123_456_on time_01_attention.ipynb", assignments)
    assert got["late"] is True and got["timestamp"] is None
    got = collect.match("lee_2027-02-13 00:30:00_02_distilbert.ipynb", assignments)
    assert got["timestamp"] == datetime(2027, 2, 13, 0, 30), "a time without a zone is UTC"
    assert (
        collect.match("lee_2027-02-30T10-00-00Z_02_distilbert.ipynb", assignments) is None
    )  # no such day: listed
