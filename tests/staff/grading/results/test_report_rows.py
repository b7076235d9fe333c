"""The score table's rows (report.rows, which the demo's table, the report, the export and feedback
read) and the report's pass rate per test come from one query over the gradebook; nbgrader's own
objects, walked one submission at a time, must give the same points and rates, before and after a
TA grades by hand."""

from __future__ import annotations

import graded
import pytest
from nbgrader.api import Gradebook

from staff.grading.results import report

pytestmark = pytest.mark.notebooks


def _nbgraders_own(course) -> dict[tuple[str, str], tuple[float, float, float]]:
    """(student, assignment) -> automatic points, their maximum and pending manual points, from
    nbgrader's per-submission scores and each grade's flag."""
    with Gradebook(course.db_url) as gb:
        return {
            (submission.student.id, assignment.name): (
                round(submission.code_score, 2),
                submission.max_code_score,
                sum(
                    grade.max_score
                    for notebook in submission.notebooks
                    for grade in notebook.grades
                    if grade.cell_type != "code" and grade.needs_manual_grade
                ),
            )
            for assignment in gb.assignments
            for submission in assignment.submissions
        }


def _nbgraders_pass_rates(course) -> dict[str, dict[str, tuple[int, int]]]:
    rates: dict[str, dict[str, tuple[int, int]]] = {}
    with Gradebook(course.db_url) as gb:
        for assignment in gb.assignments:
            for submission in assignment.submissions:
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        if grade.cell_type == "code" and grade.auto_score is not None:
                            full, graded_ = rates.setdefault(assignment.name, {}).get(grade.name, (0, 0))
                            rates[assignment.name][grade.name] = (
                                full + (grade.score >= grade.max_score),
                                graded_ + 1,
                            )
    return rates


def _rows(course) -> dict[tuple[str, str], tuple[float, float, float]]:
    return {
        (r.student, r.assignment): (r.auto_score, r.auto_max, r.manual_pending)
        for r in report.rows(course=course)
    }


def test_rows_and_pass_rates_agree_with_nbgraders_own_before_and_after_a_ta_grades(graded_course, tmp_path):
    course = graded.copy(graded_course.root, tmp_path / "course")  # its own: a TA grades in it
    before = _rows(course)
    assert before == _nbgraders_own(course) and len(before) > 1
    assert report.test_pass_rates(course) == _nbgraders_pass_rates(course)
    assert any(pending for _, _, pending in before.values()) and any(auto for auto, _, _ in before.values())
    # A TA grades one written answer (as the formgrader saves it) and one code cell by hand.
    with Gradebook(course.db_url) as gb:
        grades = [g for a in gb.assignments for s in a.submissions for nb in s.notebooks for g in nb.grades]
        written = next(g for g in grades if g.cell_type == "markdown" and g.needs_manual_grade)
        written.manual_score, written.needs_manual_grade = written.max_score / 2, False
        code = next(g for g in grades if g.cell_type == "code" and g.max_score and g.auto_score == 0)
        code.manual_score = code.max_score
        changed = {(g.student.id, g.assignment.name) for g in (written, code)}
        gb.db.commit()
    after = _rows(course)
    assert after == _nbgraders_own(course)
    assert report.test_pass_rates(course) == _nbgraders_pass_rates(course)
    assert {key for key in after if after[key] != before[key]} == changed
