"""make collect: an LMS zip into submitted/ with real nbgrader zip_collect; unknown names listed;
what the LMS said (its LATE marker, a time in its part of the name) kept for the late penalty; what a
new instructor hands it (a file that is no zip, names that match nothing, no student id, two files
of one student, broken notebooks) through the real command: a line each, naming the student and the
file, never a traceback, and nothing written when nothing could be imported."""

from __future__ import annotations

import zipfile
from datetime import datetime

import nbformat
import pytest
from nbgrader.api import Gradebook

from staff import course_dir
from staff.authoring import collect, samples
from staff.course_dir import CourseDir
from staff.grading.gradebook import late
from support import scratch_checkout, staff_command, tree

pytestmark = pytest.mark.notebooks  # real nbgrader
ASSIGNMENT = "01_attention"


def test_collect_imports_an_lms_zip_and_reports_unknown_names(make_course, tmp_path, capsys):
    course = make_course("collect")
    correct = next(s for s in samples.load(ASSIGNMENT) if s.student == "correct_loops")
    notebook = nbformat.writes(samples.fill(correct, course.release))
    names = {
        "doejane_LATE_12345_67890_01_attention.ipynb": "doejane",
        "smith_4_5_Copy of 01_attention.ipynb": "smith",
        "lee_9_01_attention (1).ipynb": "lee",
        "kim_late_2027-01-30T10-15-00+01:00_7_8_01_attention.ipynb": "kim",
    }
    unknown = ["bob_homework.ipynb", "readme.txt"]
    download = tmp_path / "download.zip"
    with zipfile.ZipFile(download, "w") as archive:
        for name in [*names, *unknown, "01_attention.ipynb"]:
            archive.writestr(name, notebook)
    found, unmatched = collect.collect(download, course=course)
    assert sorted(found[ASSIGNMENT]) == sorted(names.values())
    assert sorted(unmatched) == sorted(unknown), "the names that end in no assignment's"
    said = capsys.readouterr().err
    assert "collect: 01_attention.ipynb: not imported: no student id in its name" in said
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


def test_near_misses_get_the_closest_assignment_and_names_without_an_id_say_so():
    assignments = ["01_attention", "02_distilbert"]
    for name, guess in (
        ("bob_01_Attention.ipynb", "01_attention"),
        ("bob_01-attention (1).ipynb", "01_attention"),
        ("bob_distilbert.ipynb", "02_distilbert"),
        ("bob_hw1.ipynb", None),
    ):
        assert collect.closest(name, assignments) == guess, name
    said, no_assignment = collect.why_not("bob_01_Attention.ipynb", assignments)
    assert (
        said.startswith("bob: bob_01_Attention.ipynb: not imported:") and "did you mean 01_attention?" in said
    )
    assert no_assignment
    said, no_assignment = collect.why_not("01-attention.ipynb", assignments)
    assert "no student id, and its name ends in no assignment's name: did you mean 01_attention?" in said
    said, no_assignment = collect.why_not("Copy of 02_distilbert.ipynb", assignments)
    assert "no student id in its name (expected <student-id>_..._02_distilbert.ipynb" in said
    assert not no_assignment, "it names an assignment: what it lacks is the student"
    said, _ = collect.why_not("lee_2027-02-30T10-00-00Z_02_distilbert.ipynb", assignments)
    assert "2027-02-30T10-00-00Z in its name is no date and time" in said


@pytest.fixture()
def checkout(tmp_path):
    """A course folder for `python -m staff collect` with a gradebook that knows one student."""
    root = scratch_checkout(tmp_path / "course")
    with Gradebook(CourseDir(root).db_url) as gb:
        gb.add_student("doejane", first_name="Jane", last_name="Doe")
    return root


def _zip(path, files: dict[str, str | bytes]):
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return path


def _refused(done, checkout, before, says: str) -> None:
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert tree(checkout) == before, "nothing written"
    assert not (checkout / "submitted").exists() and not (checkout / "downloaded").exists()


def test_a_file_that_is_no_zip_is_refused_in_one_line(checkout, tmp_path):
    before = tree(checkout)
    (tmp_path / "grades.zip").write_text("id,first_name\n")
    done = staff_command(checkout, "collect", str(tmp_path / "grades.zip"))
    _refused(done, checkout, before, f"collect: {tmp_path / 'grades.zip'} is no zip file (BadZipFile")
    assert len(done.stderr.splitlines()) == 1


def test_a_zip_where_nothing_matches_lists_the_assignments_and_exits_2(checkout, tmp_path):
    notebook = course_dir.release_notebook(ASSIGNMENT).read_text()
    download = _zip(
        tmp_path / "download.zip",
        {"01_Attention.ipynb": notebook, "doejane_01-attention.ipynb": notebook, "hw1.ipynb": notebook},
    )
    before = tree(checkout)
    done = staff_command(checkout, "collect", str(download))
    _refused(done, checkout, before, "collect: nothing imported from download.zip")
    said = done.stderr
    assert (
        "collect: 01_Attention.ipynb: not imported: no student id, and its name ends in no assignment's name: "
        "did you mean 01_attention?" in said
    )
    assert (
        "collect: doejane: doejane_01-attention.ipynb: not imported: its name ends in no assignment's name: "
        "did you mean 01_attention?" in said
    )
    assert "collect: hw1.ipynb: not imported: its name ends in no assignment's name\n" in said
    assert "collect: the assignments: 01_attention, 02_distilbert, " in said


def test_each_problem_is_a_line_naming_the_student_and_the_file(checkout, tmp_path):
    notebook = course_dir.release_notebook(ASSIGNMENT).read_text()
    download = _zip(
        tmp_path / "download.zip",
        {
            "doejane_LATE_1_2_01_attention.ipynb": notebook,
            "Copy of 01_attention.ipynb": notebook,
            "twice_1_01_attention.ipynb": notebook,
            "twice_2_01_attention.ipynb": notebook,
            "kim_01_attention.ipynb": "{not json",
            "lee_01_attention.ipynb": '{"cells": 3}',
            "bob_01_Attention.ipynb": notebook,
        },
    )
    done = staff_command(checkout, "collect", str(download))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    said = done.stderr
    for line in (
        "collect: Copy of 01_attention.ipynb: not imported: no student id in its name "
        "(expected <student-id>_..._01_attention.ipynb",
        "collect: twice: twice_1_01_attention.ipynb, twice_2_01_attention.ipynb: not imported: 2 files for "
        "01_attention and no time in their names to tell which is the last",
        "collect: kim: kim_01_attention.ipynb: imported, but it is not JSON: `make autograde` will mark it "
        "invalid notebook (ask kim for it again)",
        "collect: lee: lee_01_attention.ipynb: imported, but it is JSON that nbformat reads as no notebook",
        "collect: bob: bob_01_Attention.ipynb: not imported: its name ends in no assignment's name: "
        "did you mean 01_attention?",
        "collect: the assignments: 01_attention, ",
    ):
        assert line in said, f"{line}\n---\n{said}"
    assert "collect: 01_attention: 3 submission(s) into submitted/, 1 marked LATE by the LMS" in done.stdout
    assert (
        "collect: 2 student(s) not in the gradebook yet: kim, lee; `make students ROSTER=roster.csv` adds"
        in done.stdout
    ), "doejane is in the gradebook already"
    assert "collect: next: `make students ROSTER=roster.csv`, then `make autograde`" in done.stdout
    submitted = checkout / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["doejane", "kim", "lee"]
    assert (submitted / "kim" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text() == "{not json"
