"""Validation refuses points the judge would not pay for a value the kernel never had."""

from __future__ import annotations

import nbformat
import pytest

from staff import course_dir
from staff.authoring import validate
from staff.course_dir import nbgrader


@pytest.mark.parametrize("assignment", course_dir.assignments())
def test_every_source_notebook_grades_only_through_the_judge(assignment):
    assert validate.grading_problems(course_dir.source_notebook(assignment)) == []


def test_visible_points_in_kernel_cells_and_a_stale_judge_file_fail_validation(tmp_path):
    assignment = "01_attention"
    nb = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
    visible = next(c for c in nb.cells if nbgrader(c).get("grade_id", "").endswith("_visible"))
    visible.metadata["nbgrader"].update(grade=True, points=2)
    hidden = next(
        c for c in nb.cells if nbgrader(c).get("grade") and nbgrader(c).get("points") and c is not visible
    )
    hidden.metadata["course"] = {"in_kernel": "decided by what the kernel prints"}
    path = tmp_path / assignment / f"{assignment}.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    problems = validate.grading_problems(path)
    assert any(
        f"{visible.metadata['nbgrader']['grade_id']} has points but is not a hidden test" in p
        for p in problems
    )
    assert any("course.in_kernel" in p for p in problems)
    assert not any("out of date" in p for p in problems)  # metadata only: the judge's record still holds
    hidden.source += "\nprint('changed')"
    nbformat.write(nb, path)
    assert any("out of date" in p for p in validate.grading_problems(path))
