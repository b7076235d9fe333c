"""A flag holds the grade until a TA decides (staff/grading/gradebook/flag_decisions.py): a held
submission's feedback says it is under review and shows no points, ``make export`` leaves its score
blank and counts it; a TA's "set to 0" takes that exercise's automatic points with a comment the
student reads, an "accept" gives them back; both are in the gradebook and the regrade log.
(In the formgrader, through its page, in Chromium: tests/e2e/test_formgrader.py.)"""

from __future__ import annotations

import csv
import re
import shutil

import pytest

from staff import course_dir
from staff.authoring import samples
from staff.course_dir import CourseDir
from staff.grading import regrade
from staff.grading.gradebook import flag_decisions
from staff.grading.results import export, feedback, report

pytestmark = pytest.mark.notebooks

ASSIGNMENT, FLAGGED, HONEST = "01_attention", "library_softmax", "correct_loops"
SOFTMAX = "exercise 1 (Softmax)"


@pytest.fixture
def course(graded_course, tmp_path) -> CourseDir:
    """A copy of the graded course with assignment 1's flagged sample and one honest one (feedback
    is made for every autograded submission of an assignment: two keep it quick)."""
    root = tmp_path / "course"
    shutil.copytree(graded_course.root, root, symlinks=True)
    for folder in (root / "autograded").glob(f"*/{ASSIGNMENT}"):
        if folder.parent.name not in (FLAGGED, HONEST):
            shutil.rmtree(folder)
    return CourseDir(root)


def _grades(course: CourseDir) -> dict[tuple[str, str], dict]:
    with export.export(course=course).open() as f:
        return {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}


def _page(course: CourseDir, student: str) -> str:
    feedback.feedback([ASSIGNMENT], course=course)
    return (course.feedback / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()


def _auto(course: CourseDir, student: str) -> float:
    return next(r.auto_score for r in report.rows([ASSIGNMENT], course) if r.student == student)


def test_every_flagged_sample_is_held_and_nothing_else(course):
    flagged = {
        (s.student, a)
        for a in course_dir.assignments()
        for s in samples.load(a)
        if s.expected_status == "flagged"
    }
    assert flagged and flag_decisions.held(course) == flagged


def test_a_held_submission_shows_no_points_until_a_ta_decides_and_then_the_decision(course, capsys):
    expected = next(s.expected_score for s in samples.load(ASSIGNMENT) if s.student == FLAGGED)
    grades = _grades(course)
    held, honest = grades[(FLAGGED, ASSIGNMENT)], grades[(HONEST, ASSIGNMENT)]
    assert (held["score"], held["raw_score"], held["status"]) == ("", "", "flagged")
    assert held["review"] == "held: flagged, waiting for a TA's decision"
    assert len(held["reason"]) <= export.REASON_LIMIT
    assert float(honest["score"]) == 23.0 and honest["review"] == ""
    assert f"{len(flag_decisions.held(course))} flagged submission(s) held" in capsys.readouterr().out

    page = _page(course, FLAGGED)
    assert "under review: no score yet" in page and "Under review." in page
    assert "Score:" not in page and "softmax" not in page.lower().replace(
        "_softmax", ""
    )  # no answer, no check
    assert "<h4>01_attention (Score: 23.0 / 23.0" in _page(course, HONEST)  # then the points still pending

    # set to 0: exercise 1's hidden tests lose their points, the student reads why
    lost = sum(points for title, points in _points(course).items() if title == SOFTMAX)
    made = flag_decisions.decide(
        course, FLAGGED, ASSIGNMENT, "zero", [SOFTMAX], "torch.softmax is not yours", "ta1"
    )
    assert made.summary().endswith(f"{SOFTMAX} set to 0") and flag_decisions.held(course) == (
        flag_decisions.held(course) - {(FLAGGED, ASSIGNMENT)}
    )
    assert _auto(course, FLAGGED) == expected - lost and lost > 0
    row = _grades(course)[(FLAGGED, ASSIGNMENT)]
    assert float(row["score"]) == expected - lost and "set to 0" in row["review"]
    page = _page(course, FLAGGED)
    assert f"(Score: {expected - lost:.1f} / 23.0" in page and "torch.softmax is not yours" in page

    # accepted on second thought: the automatic points are back
    flag_decisions.decide(course, FLAGGED, ASSIGNMENT, "accept", who="ta2")
    assert _auto(course, FLAGGED) == expected
    row = _grades(course)[(FLAGGED, ASSIGNMENT)]
    assert float(row["score"]) == expected and row["review"].endswith("points stand")
    assert "torch.softmax is not yours" not in _page(course, FLAGGED)
    log = [e for e in regrade.entries(course) if e["student"] == FLAGGED]
    assert [(e["who"], e["old_auto"], e["new_auto"], e["status"]) for e in log] == [
        ("ta1", expected, expected - lost, "flags: points set to 0"),
        ("ta2", expected - lost, expected, "flags accepted"),
    ]


def _points(course: CourseDir) -> dict[str, float]:
    from nbgrader.api import Gradebook

    tests = flag_decisions.exercises(ASSIGNMENT)
    with Gradebook(course.db_url) as gb:
        notebook = gb.find_notebook(ASSIGNMENT, ASSIGNMENT)
        return {
            title: sum(c.max_score for c in notebook.grade_cells if c.name in ids)
            for title, ids in tests.items()
        }


@pytest.mark.parametrize(
    ("student", "verdict", "zeroed", "comment", "says"),
    [
        (HONEST, "accept", [], "", "is not flagged: there is nothing to decide"),
        (FLAGGED, "zero", [SOFTMAX], "  ", "needs a comment for the student"),
        (FLAGGED, "zero", [], "why", "say which exercise"),
        (
            FLAGGED,
            "zero",
            ["exercise 9 (Nothing)"],
            "why",
            "has no automatically graded exercise 9 (Nothing)",
        ),
        (FLAGGED, "maybe", [], "", "a decision is one of accept, zero"),
    ],
)
def test_a_decision_that_cannot_be_taken_says_why_and_changes_nothing(
    course, student, verdict, zeroed, comment, says
):
    before = _auto(course, FLAGGED)
    with pytest.raises(flag_decisions.DecisionError, match=re.escape(says)):
        flag_decisions.decide(course, student, ASSIGNMENT, verdict, zeroed, comment, "ta")
    assert _auto(course, FLAGGED) == before and (FLAGGED, ASSIGNMENT) in flag_decisions.held(course)
    assert not regrade.entries(course) or all(e["student"] != FLAGGED for e in regrade.entries(course))
