"""Given cells that only teach are left out of a graded run (staff/grading/execution/skipping.py):
what a source notebook may declare, what the runner leaves out whatever a submission claims, and
that every declaration of the course's notebooks holds. The canary grading each solution with the
same cells left out, and every sample at its exact score, are tested with the graded course."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from staff import course_dir
from staff.grading.execution import skipping


def _cell(grade_id: str, source: str, skip: bool = False, **nbgrader) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {
        "grade_id": grade_id,
        "locked": True,
        "grade": False,
        "solution": False,
        **nbgrader,
    }
    if skip:
        cell.metadata["course"] = {skipping.KEY: True}
    return cell


def test_a_skipped_cell_may_not_feed_a_cell_that_runs():
    nb = new_notebook(
        cells=[
            _cell("answer", "def f(x, end):\n    return x[:end]", locked=False, solution=True),
            _cell("demo", "import time\nexample = f([1, 2, 3], 2)\nfig = 1", skip=True),
            _cell("later", "fig = 2\nprint(fig, end='')"),  # rebinds fig itself; end is a keyword
            _cell("test_hidden", "print(example)", grade=True, points=1),
        ]
    )
    assert skipping.declared(nb) == ["demo"]
    assert skipping.problems(nb) == [
        "cell test_hidden reads `example`, which only the skipped cell demo binds: a graded run would fail "
        "there (bind it in a cell that runs, or run demo)"
    ]
    nb.cells[3].source = "print(f([4], 1))"  # parameters (x, end) are the function's own
    assert skipping.problems(nb) == []


@pytest.mark.parametrize(
    "nbgrader", [{"solution": True, "locked": False}, {"grade": True, "points": 2}, {"locked": False}]
)
def test_answer_and_test_cells_always_run(nbgrader):
    nb = new_notebook(cells=[_cell("mine", "x = 1", skip=True, **nbgrader)])
    assert (
        "is declared `skip_when_grading` but is not a read-only given code cell" in skipping.problems(nb)[0]
    )
    # and the runner refuses too, whatever list it is given: a submission that renames its answer
    # cell after a skipped one still has that cell run
    assert not skipping.skippable(nb.cells[0], ["mine"])


def test_the_runner_leaves_out_exactly_the_declared_cells():
    ran = []

    class Executor:  # nbclient's hook, as nbgrader's Execute has it
        def preprocess_cell(self, cell, resources, index):
            ran.append(cell.metadata["nbgrader"]["grade_id"])
            return cell, resources

    executor = Executor()
    skipping.install(executor, ["demo"])
    demo = _cell("demo", "slow()")
    demo.outputs = [nbformat.v4.new_output("stream", text="the student's own run\n")]
    demo.execution_count = 7
    for index, cell in enumerate(
        [_cell("setup", "import numpy"), demo, _cell("answer", "x = 1", solution=True)]
    ):
        executor.preprocess_cell(cell, {}, index)
    assert ran == ["setup", "answer"]
    assert demo.execution_count is None and [o["text"] for o in demo.outputs] == [skipping.NOTE]


@pytest.mark.parametrize("assignment", course_dir.assignments())
def test_every_declaration_in_the_course_holds(assignment):
    nb = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
    assert skipping.problems(nb) == []
    declared = skipping.declared(nb)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    assert all(ids.count(grade_id) == 1 for grade_id in declared)
