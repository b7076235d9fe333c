"""Repair puts back deleted test cells and stripped nbgrader metadata, in the released order,
and never touches a notebook that needs nothing."""

from __future__ import annotations

import copy

import nbformat

from staff import course_dir
from staff.authoring import samples
from staff.course_dir import nbgrader
from staff.grading import repair

ASSIGNMENT = "01_attention"


def _released() -> nbformat.NotebookNode:
    return nbformat.read(course_dir.release_notebook(ASSIGNMENT), as_version=4)


def test_repair_restores_deleted_and_stripped_cells(damaged):
    released = _released()
    graded_ids = [nbgrader(c)["grade_id"] for c in released.cells if nbgrader(c)]
    for notebook, _, _ in damaged.values():
        fixed, notes = repair.repair(notebook, released)
        assert notes
        ids = [nbgrader(c).get("grade_id") for c in fixed.cells]
        assert set(graded_ids) <= set(ids) and len([i for i in ids if i]) == len(graded_ids)
        assert [i for i in ids if i] == graded_ids
    untouched, notes = repair.repair(released, released)
    assert notes == [] and untouched == released


def test_repair_keeps_the_latest_copy_of_a_duplicated_cell(samples1):
    nb = samples.fill(samples1["correct_loops"])
    answer = next(c for c in nb.cells if nbgrader(c).get("grade_id") == "softmax")
    duplicate = copy.deepcopy(answer)
    duplicate.id = "copy"
    nb.cells.insert(nb.cells.index(answer) + 1, duplicate)
    fixed, notes = repair.repair(nb, _released())
    assert any("duplicate" in n for n in notes)
    assert [c.id for c in fixed.cells if nbgrader(c).get("grade_id") == "softmax"] == ["copy"]
