"""The formgrader's API without its class-wide work per row (staff/grading/review/formgrader_api.py) answers
exactly as nbgrader's own does, same dicts in the same order, on a real gradebook holding every kind
of submission a page lists: graded, awaiting a TA, handed in again after grading, without
timestamps, with its autograded folder or notebook gone, submitted but never autograded, never
submitted, unknown to the gradebook, and a hidden folder. Then that it asks the database less."""

from __future__ import annotations

import pytest
from nbgrader.apps.api import NbGraderAPI
from sqlalchemy import event

from staff.grading.review.formgrader_api import CourseAPI, _load_jupyter_server_extension


@pytest.fixture
def apis(small_course):
    return small_course.api(NbGraderAPI), small_course.api(CourseAPI)


def test_one_students_submissions_are_nbgraders(apis, small_course):
    nbgrader, course = apis
    students = [*small_course.students, "unknown", "nobody"]  # submitted only, and never seen
    for student in students:
        assert course.get_student_submissions(student) == nbgrader.get_student_submissions(student), student
        for assignment in small_course.assignments:
            assert course.get_submission(assignment, student) == nbgrader.get_submission(assignment, student)
    # Every kind of row is there (what nbgrader answers, not what this module does).
    kinds = {
        (s["student"], s["submitted"], s["autograded"], s["first_name"])
        for s in (nbgrader.get_submission("a1", student) for student in students)
    }
    assert {
        ("graded", True, True, "Ada"),
        ("resubmitted", True, False, "Grace"),
        ("untimestamped", True, True, "Edsger"),
        ("no_folder", True, False, "Barbara"),
        ("submitted_only", True, False, "Frances"),
        ("absent", False, False, "John"),
        ("unknown", True, False, None),
        (".hidden", False, False, "Dot"),
        ("nobody", False, False, None),
    } <= kinds


def test_an_assignments_submissions_are_nbgraders(apis, small_course):
    nbgrader, course = apis
    for assignment in small_course.assignments:
        expected = nbgrader.get_submissions(assignment)
        assert course.get_submissions(assignment) == expected
        assert [s["student"] for s in expected] == sorted(s["student"] for s in expected)
        assert {"graded", "pending", "untimestamped", "submitted_only", "unknown"} <= {
            s["student"] for s in expected
        }
    # get_submissions asks get_submission about each unautograded student: both leave no state behind.
    assert course._student is None and course._names_only is False
    assert course.get_students() == nbgrader.get_students()


def test_a_notebooks_submissions_and_the_grading_pages_order_are_nbgraders(apis, small_course):
    nbgrader, course = apis
    for assignment, notebooks in small_course.assignments.items():
        for notebook in notebooks:
            expected = nbgrader.get_notebook_submissions(assignment, notebook)
            assert course.get_notebook_submissions(assignment, notebook) == expected
            assert {s["student"] for s in expected} == {"graded", "pending", "resubmitted", "untimestamped"}
            indices = nbgrader.get_notebook_submission_indices(assignment, notebook)
            assert course.get_notebook_submission_indices(assignment, notebook) == indices
            # As the grading page's Next/Previous call it: the handler's own gradebook's objects.
            with course.gradebook as gb:
                rows = gb.notebook_submissions(notebook, assignment)
                kept = [nb.id for nb in course._filter_existing_notebooks(assignment, rows)]
            assert kept == sorted(indices, key=indices.get)
    assert course._filter_existing_notebooks("a1", []) == []


def _statements(call) -> list[str]:
    """The SQL statements ``call()`` runs."""
    from sqlalchemy.engine import Engine

    seen = []

    def record(conn, cursor, statement, *_):
        seen.append(statement)

    event.listen(Engine, "before_cursor_execute", record)
    try:
        call()
    finally:
        event.remove(Engine, "before_cursor_execute", record)
    return seen


def test_it_asks_the_database_about_a_pages_rows_only_and_once(apis):
    nbgrader, course = apis
    before = _statements(lambda: nbgrader.get_notebook_submission_indices("a1", "nb1"))
    after = _statements(lambda: course.get_notebook_submission_indices("a1", "nb1"))
    # nbgrader: two lazy loads for each of the 5 rows; here one query for all of them.
    assert len(before) - len(after) >= 2 * 5 - 1, (len(before), len(after))
    # The lists' scores are summed over this notebook's or assignment's submissions only: the
    # criterion is in each of the statement's subqueries, not only in its outer WHERE.
    for call, criterion in (
        (lambda: course.get_notebook_submissions("a2", "nb2"), "submitted_notebook.notebook_id IN"),
        (lambda: course.get_submissions("a2"), "submitted_assignment.assignment_id IN"),
    ):
        biggest = max(_statements(call), key=len)
        assert biggest.count(criterion) >= 5, biggest
    assert course._rows == ()


def test_the_server_extension_puts_it_where_the_formgrader_builds_its_api(monkeypatch):
    from nbgrader.server_extensions.formgrader import base

    monkeypatch.setattr(base, "NbGraderAPI", base.NbGraderAPI)  # put back after the test

    class Server:
        class log:
            @staticmethod
            def info(*_):
                pass

    _load_jupyter_server_extension(Server())
    assert base.NbGraderAPI is CourseAPI
