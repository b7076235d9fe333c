"""The instructor's solution, taken from the source notebook itself.

Fixture recipes compute expected outputs by running the solution cells of
``source/<assignment>/<assignment>.ipynb`` (plus cells tagged ``reference``, such as imports and
given code). The solution is therefore written once, in the notebook an instructor edits, and
the saved tensors can never drift from it.
"""

from __future__ import annotations

from typing import Any

import nbformat

from staff.course_dir import nbgrader, source_notebook

REFERENCE_TAG = "reference"


def _is_reference(cell: nbformat.NotebookNode) -> bool:
    meta = cell.metadata
    return cell.cell_type == "code" and (
        nbgrader(cell).get("solution", False) or REFERENCE_TAG in meta.get("tags", [])
    )


def solution_namespace(assignment: str) -> dict[str, Any]:
    """Execute the source notebook's solution and reference cells; return their globals."""
    path = source_notebook(assignment)
    notebook = nbformat.read(path, as_version=4)
    namespace: dict[str, Any] = {"__name__": f"reference_{assignment}"}
    for index, cell in enumerate(notebook.cells):
        if _is_reference(cell):
            exec(compile(cell.source, f"{path}:cell{index}", "exec"), namespace)
    return namespace
