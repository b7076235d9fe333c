"""The one writer's shortcuts are nbgrader's work with fewer queries: one gradebook session per
batch, one transaction per submission, and three of nbgrader's steps subclassed (metadata check,
overwriting cells, saving grades) that must agree with nbgrader's own on every notebook."""

from __future__ import annotations

import copy
import sqlite3

import nbformat
import pytest
from nbgrader.api import Gradebook
from nbgrader.preprocessors import CheckCellMetadata, OverwriteCells

from staff import course_dir
from staff.course_dir import nbgrader
from staff.grading.gradebook import admin, nbgrader_steps, session

pytestmark = pytest.mark.notebooks  # real nbgrader, real gradebooks
ASSIGNMENT = "01_attention"


@pytest.fixture(scope="module")
def registered(make_course):
    course = make_course("writer")
    admin.register([ASSIGNMENT], course)
    return course


def test_one_session_shares_nbgraders_gradebook_and_puts_it_back(registered, tmp_path):
    url, other = registered.db_url, f"sqlite:///{tmp_path / 'other.db'}"
    original = Gradebook.__init__
    with session.one_session(url) as shared:
        with Gradebook(url) as first, Gradebook(url) as second:
            assert first.engine is shared.engine and second.db is shared.db
        assert shared.db.is_active  # closing a shared one closes nothing
        with Gradebook(other) as elsewhere:
            assert elsewhere.engine is not shared.engine
    assert Gradebook.__init__ is original
    with Gradebook(url) as after:
        assert after.engine is not shared.engine


def _students(course) -> set[str]:
    with sqlite3.connect(course.gradebook) as db:  # another connection: what is committed
        return {row[0] for row in db.execute("select id from student")}


def test_one_transaction_lands_a_submission_whole_or_not_at_all(registered):
    url = registered.db_url
    with session.one_session(url):
        with session.one_transaction(url):
            with Gradebook(url) as gb:
                gb.update_or_create_student("whole")  # nbgrader commits here: only a flush now
                assert gb.find_student("whole")
            assert "whole" not in _students(registered)
        assert "whole" in _students(registered)
        with pytest.raises(RuntimeError), session.one_transaction(url):
            with Gradebook(url) as gb:
                gb.update_or_create_student("half")
            raise RuntimeError("the writer crashed mid-submission")
        assert "half" not in _students(registered)
        with Gradebook(url) as gb:  # and the session goes on
            assert gb.find_student("whole")


def _released():
    return nbformat.read(course_dir.release_notebook(ASSIGNMENT), as_version=4)


def _broken(change) -> nbformat.NotebookNode:
    nb = _released()
    graded = [c for c in nb.cells if nbgrader(c).get("grade")]
    change(nb, graded)
    return nb


BROKEN = {
    "no grade id": lambda nb, g: nbgrader(g[0]).pop("grade_id"),
    "empty grade id": lambda nb, g: nbgrader(g[0]).update(grade_id=""),
    "no points": lambda nb, g: nbgrader(g[0]).pop("points"),
    "points not a number": lambda nb, g: nbgrader(g[0]).update(points="three"),
    "duplicate grade ids": lambda nb, g: nbgrader(g[1]).update(grade_id=nbgrader(g[0])["grade_id"]),
    "schema too old": lambda nb, g: nbgrader(g[0]).update(schema_version=1),
    "schema too new": lambda nb, g: nbgrader(g[0]).update(schema_version=9),
    "unknown key type": lambda nb, g: nbgrader(g[0]).update(locked="yes"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_the_compiled_metadata_check_refuses_what_nbgraders_refuses(case):
    nb = _broken(BROKEN[case])
    with pytest.raises(Exception) as theirs:
        CheckCellMetadata().preprocess(copy.deepcopy(nb), {})
    with pytest.raises(Exception) as ours:
        nbgrader_steps.CheckMetadata().preprocess(copy.deepcopy(nb), {})
    assert type(ours.value) is type(theirs.value)


def test_the_compiled_metadata_check_passes_every_released_notebook():
    for assignment in course_dir.assignments():
        nb = nbformat.read(course_dir.release_notebook(assignment), as_version=4)
        CheckCellMetadata().preprocess(copy.deepcopy(nb), {})
        nbgrader_steps.CheckMetadata().preprocess(nb, {})


def test_overwriting_cells_from_the_session_cache_is_nbgraders_own(registered):
    """A submission that edited read-only and test cells, changed points and a cell type, and added
    a cell nbgrader does not know: sanitized with the cache, exactly as nbgrader sanitizes it."""
    nb = _released()
    for cell in nb.cells:
        meta = nbgrader(cell)
        if meta.get("locked") and cell.cell_type == "code":
            cell.source += "\nassert True  # edited"
        if meta.get("grade") and cell.cell_type == "code":
            meta["points"] = 100
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "x = 1", metadata={"nbgrader": {**nbgrader(nb.cells[3]), "grade_id": "mine"}}
        )
    )
    resources = {
        "nbgrader": {
            "db_url": registered.db_url,
            "assignment": ASSIGNMENT,
            "notebook": ASSIGNMENT,
            "student": "s",
        }
    }
    theirs, _ = OverwriteCells().preprocess(copy.deepcopy(nb), copy.deepcopy(resources))
    with session.one_session(registered.db_url):
        for _ in range(2):  # filled, then served from the cache
            ours, _ = nbgrader_steps.OverwriteSourceCells().preprocess(
                copy.deepcopy(nb), copy.deepcopy(resources)
            )
            assert nbformat.writes(ours) == nbformat.writes(theirs)


def test_the_status_log_appends_keeps_the_last_outcome_and_skips_a_torn_line(tmp_path):
    import json
    from dataclasses import asdict

    from staff.course_dir import CourseDir
    from staff.grading.status import Outcome, load_status, save_status, status_file

    course = CourseDir(tmp_path)
    legacy = Outcome("old", ASSIGNMENT, "graded", "", 1.0)  # the whole-file status.json of earlier versions
    (tmp_path / "autograded").mkdir()
    (tmp_path / "autograded" / "status.json").write_text(json.dumps([asdict(legacy)]))
    save_status(course, [Outcome("ada", ASSIGNMENT, "kernel died", "the kernel died", 2.0)])
    save_status(
        course, [Outcome("ada", ASSIGNMENT, "graded", "", 3.0), Outcome("bo", ASSIGNMENT, "timeout", "", 4.0)]
    )
    with status_file(course).open("a") as log:
        log.write('{"student": "cut", "assignm')  # a grader killed mid-write
    save_status(course, [Outcome("cy", ASSIGNMENT, "graded", "", 5.0)])  # the next run
    found = load_status(course)
    assert {k: v["status"] for k, v in found.items()} == {
        ("old", ASSIGNMENT): "graded",
        ("ada", ASSIGNMENT): "graded",
        ("bo", ASSIGNMENT): "timeout",
        ("cy", ASSIGNMENT): "graded",
    }
    assert len(status_file(course).read_text().splitlines()) == 5
