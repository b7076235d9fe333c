"""The indexes nbgrader's gradebook lacks (staff/grading/gradebook/indexes.py): created once, on
the right columns, never on a gradebook that does not exist yet, and nbgrader's answers on the
same gradebook are the same with them as without."""

from __future__ import annotations

import sqlite3

from nbgrader.api import Gradebook
from nbgrader.apps.api import NbGraderAPI

from staff.grading.gradebook import indexes


def _indexes(url: str) -> set[tuple[str, str, str]]:
    with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
        rows = db.execute(
            "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND name LIKE 'ix_%'"
        ).fetchall()
        return {(name, table, db.execute(f"PRAGMA index_info({name})").fetchone()[2]) for name, table in rows}


def _answers(api: NbGraderAPI, course) -> dict:
    """What the formgrader's pages ask nbgrader (its API sorts each list), and the gradebook's own
    queries, which have no ORDER BY (the rows come in the order the database's plan finds them,
    which an index may change: compared as sorted lists); a notebook's grades and comments exactly."""
    answers = {"assignments": api.get_assignments(), "students": api.get_students()}
    for assignment, notebooks in course.assignments.items():
        answers[assignment] = (api.get_notebooks(assignment), api.get_submissions(assignment))
        for notebook in notebooks:
            answers[assignment, notebook] = (
                api.get_notebook_submissions(assignment, notebook),
                api.get_notebook_submission_indices(assignment, notebook),
            )
    for student in course.students:
        answers[student] = (
            api.get_student(student),
            api.get_student_submissions(student),
            api.get_student_notebook_submissions(student, "a2"),
        )
    with api.gradebook as gb:
        key = lambda row: repr(sorted(row.items()))  # noqa: E731
        answers["gradebook"] = (
            sorted(gb.student_dicts(), key=key),
            *(sorted(gb.submission_dicts(a), key=key) for a in course.assignments),
            *(
                sorted(gb.notebook_submission_dicts(n, a), key=key)
                for a, ns in course.assignments.items()
                for n in ns
            ),
            [
                [g.to_dict() for g in nb.grades] + [c.to_dict() for c in nb.comments]
                for nb in sorted(gb.notebook_submissions("nb2", "a2"), key=lambda nb: nb.id)
            ],
        )
    return answers


def test_indexes_are_created_once_and_change_no_answer(small_course):
    url = small_course.url
    assert _indexes(url) == set()  # nbgrader makes none of them
    without = _answers(small_course.api(NbGraderAPI), small_course)
    assert indexes.ensure(url) == [name for name, _, _ in indexes.INDEXES]
    assert _indexes(url) == set(indexes.INDEXES)
    assert indexes.ensure(url) == []  # already there
    assert _answers(small_course.api(NbGraderAPI), small_course) == without
    with Gradebook(url, "small-course") as gb:  # nbgrader still opens it as its own
        assert gb.find_submission("a1", "graded").score == 2.0 + 2.5
    indexes.drop(url)
    assert _indexes(url) == set()


def test_a_gradebook_not_made_yet_is_left_to_nbgrader(tmp_path):
    missing = tmp_path / "gradebook.db"
    assert indexes.ensure(f"sqlite:///{missing}?timeout=60") == []
    assert not missing.exists()
    sqlite3.connect(missing).close()  # an empty file: no tables to index
    assert indexes.ensure(f"sqlite:///{missing}") == []
