"""Cells a graded run does not execute: given cells that only teach (timings, extra figures, demos).

The source notebook declares them (``"course": {"skip_when_grading": true}`` in a read-only code
cell's metadata); the grader reads that list from the source notebook, never from a submission,
and the runner leaves those cells out, with a note in place of their output. What they showed the
student stays in the submitted notebook, where the TA sees it ("As submitted").

Two guards keep a skipped cell from changing a grade:

- :func:`problems` (``make validate``, ``make release``) refuses a declaration on a cell that is not
  a read-only, ungraded code cell, and a skipped cell that binds a name a later cell that does run
  reads (a graded run would then fail with a ``NameError`` there);
- the canary grades the instructor's solution with the same cells skipped before any student, so a
  skipped cell whose side effects a check needs (a random draw, a model put in eval mode) stops the
  batch before anyone is graded.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from nbformat import NotebookNode

from staff.course_dir import nbgrader

#: The key in a source cell's ``course`` metadata.
KEY = "skip_when_grading"
#: What a skipped cell shows in the graded notebook and the feedback page.
NOTE = (
    "Not run by the grader: this cell only illustrates (no check needs it), so grading skips it "
    "to save time. Its output in your own run is what counts for the questions that refer to it.\n"
)


def _meta(cell: NotebookNode) -> dict:
    return nbgrader(cell)


def declared(nb: NotebookNode) -> list[str]:
    """The grade ids of the cells ``nb`` (a source notebook) declares skipped when grading."""
    return [
        _meta(c).get("grade_id", "")
        for c in nb.cells
        if c.cell_type == "code" and c.metadata.get("course", {}).get(KEY)
    ]


def skippable(cell: NotebookNode, skip: Iterable[str]) -> bool:
    """Whether the runner leaves ``cell`` out: a read-only given cell named in ``skip``, never an
    answer cell or a test cell, whatever a submission's metadata says."""
    meta = _meta(cell)
    return (
        cell.cell_type == "code"
        and meta.get("grade_id") in set(skip)
        and not meta.get("grade")
        and not meta.get("solution")
        and bool(meta.get("locked"))
    )


def as_graded(nb: NotebookNode) -> tuple[NotebookNode, list[str]]:
    """A copy of ``nb`` (a source notebook) as a graded run executes it: the cells it declares
    skipped emptied (an empty cell runs nothing), and their grade ids. For the runs that stand for a
    graded one: ``make validate``'s and the one that records what each test checks (a training cell
    left in would train for minutes that no grade depends on)."""
    import copy

    skip = declared(nb)
    out = copy.deepcopy(nb)
    for cell in out.cells:
        if skippable(cell, skip):
            cell.source, cell.outputs = "", []
    return out, skip


def install(executor, skip: Iterable[str]) -> None:
    """Make nbclient's ``executor`` (nbgrader's ``Execute``) leave the ``skip`` cells out."""
    skip = frozenset(skip)
    if not skip:
        return
    execute = executor.preprocess_cell

    def preprocess_cell(cell, resources, index):
        if skippable(cell, skip):
            cell.outputs = [NotebookNode(output_type="stream", name="stdout", text=NOTE)]
            cell.execution_count = None
            return cell, resources
        return execute(cell, resources, index)

    executor.preprocess_cell = preprocess_cell


def _python(source: str) -> ast.Module | None:
    from IPython.core.inputtransformer2 import TransformerManager  # %magics and !shell lines

    try:
        return ast.parse(TransformerManager().transform_cell(source))
    except SyntaxError:
        return None


def _bound(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):  # a parameter: the function's own, not a global it reads
            names.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
    return names


def _read(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def problems(nb: NotebookNode) -> list[str]:
    """Declarations a graded run cannot honour (see the module's docstring); [] when none."""
    skip = set(declared(nb))
    found = []
    binder: dict[str, str] = {}  # name -> grade id of the last cell that bound it, so far
    for cell in nb.cells:
        meta = _meta(cell)
        grade_id = meta.get("grade_id", cell.get("id", "?"))
        if cell.metadata.get("course", {}).get(KEY) and not skippable(cell, skip):
            found.append(
                f"cell {grade_id} is declared `{KEY}` but is not a read-only given code cell "
                f"(answer and test cells always run)"
            )
        if cell.cell_type != "code":
            continue
        tree = _python(cell.source)
        if tree is None:
            continue
        bound = _bound(tree)
        if grade_id not in skip:
            for name in sorted(_read(tree) - bound):
                if binder.get(name) in skip:
                    found.append(
                        f"cell {grade_id} reads `{name}`, which only the skipped cell {binder[name]} binds: "
                        f"a graded run would fail there (bind it in a cell that runs, or run {binder[name]})"
                    )
        binder.update(dict.fromkeys(bound, grade_id))
    return found
