"""The notebooks, end to end with real nbgrader: every source notebook passes all its tests, every
released notebook fails only on its stubs, and every bundled sample gets its exact score (the
expensive grading runs once per test process in the ``graded_course`` fixture, tests/conftest.py)."""

from __future__ import annotations

import pytest

from course import variant
from staff import course_dir
from staff.authoring import samples, validate
from staff.grading import autograde
from staff.grading.results import report
from staff.grading.review import submitted_outputs
from staff.grading.status import load_status

pytestmark = pytest.mark.notebooks
ASSIGNMENTS = course_dir.assignments()


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebook_passes_all_its_tests(graded_course, assignment):
    """The graded course's batch held samples of every assignment, so the grader's canary ran each
    source notebook (solutions and hidden tests) through the sandbox, the runner and the judge
    before any sample, and demanded no error in any cell and every point paid by the judge: had it
    not, CanaryFailed would have stopped ``graded_course``. nbgrader's Validator (``make validate``)
    would only repeat that run. What is left to check is that its points are all the judge's."""
    assert {a for _, a in autograde.submissions(graded_course, ASSIGNMENTS)} >= {assignment}, (
        "the canary skipped it"
    )
    assert validate.grading_problems(course_dir.source_notebook(assignment)) == []


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_released_notebook_fails_only_with_not_implemented(assignment):
    assert validate.validate_release(course_dir.release_notebook(assignment)) == []


@pytest.mark.parametrize(
    "sample", [s for a in ASSIGNMENTS for s in samples.load(a)], ids=lambda s: f"{s.assignment}-{s.student}"
)
def test_sample_gets_its_exact_expected_score(graded_course, sample):
    found = {(r.student, r.assignment): r for r in report.rows(course=graded_course)}
    row = found[(sample.student, sample.assignment)]
    assert row.auto_score == sample.expected_score, f"{sample.student}: {sample.description}"
    outcome = load_status(graded_course)[(sample.student, sample.assignment)]
    assert outcome["status"] == sample.expected_status, outcome["reason"]


def test_fixing_each_test_cells_records_costs_under_5_percent_of_execution(graded_course):
    """The runner opens, guards and takes a records folder around every graded test cell: its cost,
    measured in the same runs, against the time the notebooks took to execute."""
    phases = [o["phases"] for o in load_status(graded_course).values() if o.get("phases")]
    spent = sum(p.get("cell records", 0.0) for p in phases)
    execution = sum(p.get("execution", 0.0) for p in phases)
    assert phases and 0 < spent < 0.05 * execution, (spent, execution)


@pytest.mark.parametrize("assignment", sorted(variant.CHOICES))
def test_the_graded_run_reproduces_each_students_own_variant(graded_course, assignment):
    """The grader gives each kernel its submission's student id, never its own ``COURSE_STUDENT``
    (tests/graded.py grades with it set to the worked example's), so every graded notebook of an
    assignment with variants printed the variant of its own student, and two students' differ."""
    printed = {}
    for path in sorted(graded_course.autograded.glob(f"*/{assignment}/{assignment}.ipynb")):
        student = path.parts[-3]
        outputs = submitted_outputs.read_outputs(path)
        if outputs.get("setup"):  # a submission that died before its setup cell ran prints nothing
            printed[student] = submitted_outputs.printed_variant(outputs["setup"])
    assert len(printed) >= 2
    for student, line in printed.items():
        assert line == variant.of(assignment, student).describe(), student
    assert len({line.split(": ", 1)[1] for line in printed.values()}) > 1
