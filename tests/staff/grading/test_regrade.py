"""``make autograde STUDENT=... ASSIGNMENT=...``: exactly that submission graded again, forced, through
the canary, the cluster, the sandbox and the judge; a TA's manual score and comment survive; the
late penalty lands on the judged points; the regrade log and the report say who, what and when."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest
from nbgrader.api import Gradebook

from course.settings import ROOT
from staff import calendar
from staff.authoring import samples
from staff.grading import regrade
from staff.grading.gradebook import admin, late
from staff.grading.results import report

pytestmark = pytest.mark.notebooks  # real nbgrader, real kernels
ASSIGNMENT = "01_attention"


def grades(course, student: str) -> dict[str, tuple]:
    with Gradebook(course.db_url) as gb:
        submission = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)
        return {g.name: (g.auto_score, g.manual_score) for g in submission.grades}


def test_regrading_one_student_keeps_manual_grades_applies_the_penalty_and_is_logged(
    make_course, save_without_kernel
):
    course = make_course("regrade")
    by_name = {s.student: s for s in samples.load(ASSIGNMENT)}
    for student in ("correct_loops", "partial"):
        samples.submit(by_name[student], course)
    # partial came in 23 hours after the due date: one started day late
    late.write_timestamp(
        course.submitted / "partial" / ASSIGNMENT, calendar.due_dates()[ASSIGNMENT] + timedelta(hours=23)
    )
    admin.register([ASSIGNMENT], course)
    for student in (
        "correct_loops",
        "partial",
    ):  # a first grade without a kernel: every test cell counted as passed
        save_without_kernel(course, student)
    with Gradebook(course.db_url) as gb:
        gb.find_grade("q_scaling", ASSIGNMENT, ASSIGNMENT, "partial").manual_score = 1.5
        gb.find_comment("q_scaling", ASSIGNMENT, ASSIGNMENT, "partial").manual_comment = "Good reasoning."
        gb.db.commit()
    before = regrade.auto_score(course, "partial", ASSIGNMENT)
    untouched = grades(course, "correct_loops")

    outcomes = regrade.regrade(
        course, students=["partial"], assignments=[ASSIGNMENT], reason="dispute #7", jobs=1, progress=False
    )

    assert [(o.student, o.assignment, o.status) for o in outcomes] == [("partial", ASSIGNMENT, "graded")]
    with Gradebook(course.db_url) as gb:
        assert gb.find_grade("q_scaling", ASSIGNMENT, ASSIGNMENT, "partial").manual_score == 1.5
        assert (
            gb.find_comment("q_scaling", ASSIGNMENT, ASSIGNMENT, "partial").manual_comment
            == "Good reasoning."
        )
        notebook = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, "partial")
        # the penalty is on the judged points plus the TA's, not on what the kernel alone claimed
        assert notebook.late_submission_penalty == pytest.approx(round(0.1 * notebook.score, 2))
        score = notebook.score
    after = regrade.auto_score(course, "partial", ASSIGNMENT)
    # the judge decided it: partial is no longer counted as full marks (its exact score is the graded
    # course's to check, samples/01_attention/partial.py)
    assert 0 < after < before
    assert score == after + 1.5
    assert grades(course, "correct_loops") == untouched, "only the named submission is graded again"

    [entry] = regrade.entries(course)
    assert (entry["student"], entry["assignment"], entry["reason"], entry["status"]) == (
        "partial",
        ASSIGNMENT,
        "dispute #7",
        "graded",
    )
    assert (
        (entry["old_auto"], entry["new_auto"]) == (before, after)
        and entry["who"]
        and entry["when"].endswith("UTC")
    )
    page = report.write_report(course).read_text()
    assert "Regrades (1)" in page and "dispute #7" in page


def test_make_autograde_passes_student_and_assignment_as_a_regrade():
    command = subprocess.run(
        [
            "make",
            "-n",
            "--no-print-directory",
            "autograde",
            "STUDENT=lee kim",
            "ASSIGNMENT=01_attention",
            "REASON=dispute 7",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    line = command.strip().splitlines()[-1]
    assert 'autograde 01_attention --student lee --student kim --regrade --reason "dispute 7"' in line
    plain = (
        subprocess.run(
            ["make", "-n", "--no-print-directory", "autograde"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    assert "--regrade" not in plain and "--student" not in plain
