"""What each graded test cell must check, built from the instructor's own run and kept outside
every kernel (``fixtures/judge/<assignment>.json``).

:func:`build_checks` runs the source notebook in the grading sandbox and keeps, per test cell, the
checks it made (kind, tolerance, which fixture value each compares with) and, for a check whose
expected value the cell computes itself (a literal mask, a shape, a property of the student's own
results), the value the instructor's run computed there: the judge compares with that, never with
the expected value a kernel writes into its own record (code running inside the test can write a
record of anything). It refuses to save checks that could not be trusted:

- a graded cell with no check against a withheld value, or declared to be decided in the kernel;
- a solution that fails its own checks;
- a hidden test cell that puts a reference implementation of a part into the kernel before that
  part's own graded test has run the student's code (whatever is in the kernel while the
  student's function runs is the student's to call), or outside a ``references`` block, where it
  would outlive its test (:func:`reference_order_problems`).
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

from course.parts import is_reference
from staff.grading.execution.cells import graded_test
from staff.grading.execution.records import Record, read_cells
from staff.grading.judging.judge import Fixtures, judge_notebook, withheld

#: A check whose expected value the cell computes (a shape, a literal) keeps the instructor's value
#: in the checks file up to this many numbers; a larger one is a hidden fixture value's job.
MAX_INLINE_VALUES = 4096


class ChecksUnavailable(RuntimeError):
    """No trustworthy record of what an assignment's test cells check: grading must not start."""


def checks_file(assignment: str, fixtures_root: Path) -> Path:
    return fixtures_root / "judge" / f"{assignment}.json"


def source_digest(nb) -> str:
    """SHA-256 of a notebook's code (what its test cells check depends on nothing else but fixtures)."""
    code = "\n\x00".join(c.source for c in nb.cells if c.cell_type == "code")
    return hashlib.sha256(code.encode()).hexdigest()


def load_checks(assignment: str, fixtures_root: Path, source_nb=None) -> dict[str, list[dict]]:
    """The checks each test cell must make; with ``source_nb``, refuse them if that code changed since."""
    path = checks_file(assignment, fixtures_root)
    if not path.is_file():
        raise ChecksUnavailable(
            f"{path} is missing: run `make fixtures` (it records what each test cell checks, "
            f"and every point is paid by the judge: without it nobody can be graded)"
        )
    data = json.loads(path.read_text())
    if source_nb is not None and data["source_sha256"] != source_digest(source_nb):
        raise ChecksUnavailable(
            f"{path} is out of date: the code of source/{assignment} changed since it was built; "
            f"run `python -m staff fixtures {assignment}` and commit it"
        )
    return data["cells"]


def _spec(record: Record) -> dict:
    """The trusted spec of one check the instructor's run made."""
    spec = record.spec()
    if record.ref is None:  # the cell computes its expected value: keep the instructor's
        value = record.expected if record.expected is not None else None
        if value is not None and value.size > MAX_INLINE_VALUES:
            raise ValueError(
                f"{record.label}: an expected value of {value.size} numbers computed in the cell; "
                f"make it a hidden fixture value (the recipe's OUTPUTS)"
            )
        if value is not None:
            spec["expected"], spec["expected_dtype"] = value.tolist(), value.dtype.str
    return spec


def specs_from_run(nb, records: dict[str, list[Record]]) -> dict[str, list[dict]]:
    """Per graded test cell of an executed (instructor) notebook, the checks it made."""
    return {grade_id: [_spec(r) for r in records.get(grade_id, [])] for grade_id, _ in _graded_tests(nb)}


def _graded_tests(nb):
    for cell in nb.cells:
        grade_id = graded_test(cell)
        if grade_id is not None:
            yield grade_id, cell


def unpaid_cells(specs: dict[str, list[dict]]) -> list[str]:
    """Graded test cells whose points would not rest on a withheld value (none, after ``make fixtures``)."""
    return [grade_id for grade_id, cell_specs in specs.items() if not any(withheld(s) for s in cell_specs)]


# ---- references only after their part's graded test ------------------------------------------


def _tree(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _key(name: str) -> str:
    """``ReferenceBlock`` / ``reference_best_span`` -> ``block`` / ``bestspan``: what a reference stands for."""
    bare = name.lower().replace("_", "")
    return bare[len("reference") :] if is_reference(name) else ""


def _scoped(node: ast.stmt) -> bool:
    """``with references(...):``, the block outside which a reference does not live (:mod:`course.parts`)."""
    return isinstance(node, ast.With) and any(
        isinstance(item.context_expr, ast.Call)
        and getattr(item.context_expr.func, "id", None) == "references"
        for item in node.items
    )


def _statements(tree: ast.Module) -> list[tuple[ast.stmt, bool]]:
    """A test cell's statements in the order they run, the bodies of its ``references`` blocks
    inlined; each with whether it is inside such a block."""
    return [
        (inner, True) if _scoped(node) else (node, False)
        for node in tree.body
        for inner in (node.body if _scoped(node) else [node])
    ]


def reference_order_problems(nb) -> list[str]:
    """Hidden test cells whose reference implementations could reach the student's code outside
    the check that lends them.

    The student's names are what the answer cells define; a part's graded test is the first graded
    test cell after its answer cell. A reference is a function or class named ``reference_<name>``
    or ``Reference<Name>`` (the course's convention), standing for every student name that contains
    ``<name>``. It must be defined inside ``with references(globals()):`` (it is gone, and revoked,
    when the block ends: each hidden test defines the references it uses), in a later cell than its
    part's graded test, and in that test cell itself only after the last statement that runs
    student code."""
    part_of: dict[str, int] = {}  # student name -> index of its graded test cell
    pending: list[str] = []
    cells = [c for c in nb.cells if c.cell_type == "code"]
    for index, cell in enumerate(cells):
        meta = cell.metadata.get("nbgrader", {})
        tree = _tree(cell.source) if meta.get("solution") else None
        pending += [
            n.name
            for n in (tree.body if tree else [])
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
        if graded_test(cell) is not None:
            part_of.update({name: index for name in pending})
            pending = []
    students = set(part_of)
    problems = []
    for index, cell in enumerate(cells):
        grade_id, tree = graded_test(cell), _tree(cell.source)
        if grade_id is None or tree is None:
            continue
        statements = _statements(tree)
        last_use = max(
            (
                i
                for i, (node, _) in enumerate(statements)
                for n in ast.walk(node)
                if isinstance(n, ast.Name) and n.id in students
            ),
            default=-1,
        )
        for position, (node, scoped) in enumerate(statements):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not _key(
                node.name
            ):
                continue
            if not scoped:
                problems.append(
                    f"{grade_id}: defines {node.name} outside `with references(globals()):`: it would outlive "
                    f"its test, and the next answer cell could call it"
                )
            for name in sorted(n for n in students if _key(node.name) in n.lower().replace("_", "")):
                if part_of[name] > index or (part_of[name] == index and position < last_use):
                    problems.append(
                        f"{grade_id}: defines {node.name} (a reference of {name}) before the student's "
                        f"{name} has been run by its own graded test: the student's code could call it; "
                        f"define it in a later cell"
                    )
    return problems


# ---- building the checks file -----------------------------------------------------------------


def build_checks(assignment: str, fixtures_root: Path, timeout: int = 900) -> dict[str, list[dict]]:
    """Run the instructor's source notebook in the sandbox and save what each test cell checks
    (``fixtures/judge/<assignment>.json``); fails if the solution itself does not pass."""
    import tempfile

    import nbformat

    from staff import course_dir
    from staff.grading.execution import sandbox, skipping

    nb = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
    problems = reference_order_problems(nb)
    if problems:
        raise AssertionError(f"{assignment}: " + "; ".join(problems))
    digest = source_digest(nb)
    nb, _ = skipping.as_graded(nb)  # as the canary and every graded run execute it
    with tempfile.TemporaryDirectory(prefix="course-checks-") as folder:
        view = sandbox.fixtures_view(Path(folder) / "fixtures", fixtures_root)
        records = read_cells(sandbox.execute(nb, Path(folder) / "scratch", view, timeout))[0]
    problems = [
        f"cell {c.metadata.get('nbgrader', {}).get('grade_id', c.get('id'))}: {o['ename']}: {o['evalue'][:200]}"
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    specs = specs_from_run(nb, records)
    problems += [
        f"{grade_id}: its points would not rest on a value the kernel never had: compare at least one "
        f"result with a hidden fixture value listed in the recipe's OUTPUTS (visible checks carry no points)"
        for grade_id in unpaid_cells(specs)
    ]
    problems += [
        f"{grade_id}: declared `course.in_kernel`: no cell may be decided in the kernel; judge it on recorded "
        f"values against withheld ones, or make it an ungraded visible check"
        for grade_id, c in _graded_tests(nb)
        if c.metadata.get("course", {}).get("in_kernel")
    ]
    verdicts = judge_notebook(records, specs, Fixtures(fixtures_root))
    problems += [
        f"{grade_id}: the solution fails its own check: {v.reason}"
        for grade_id, v in verdicts.items()
        if v.reason and grade_id not in unpaid_cells(specs)
    ]
    problems += [
        f"{grade_id}: {s['label']}: weight {s['weight']!r} (a check's weight is a positive number)"
        for grade_id, cell_specs in specs.items()
        for s in cell_specs
        if not 0 < s.get("weight", 1.0) < float("inf")
    ]
    if problems:
        raise AssertionError(f"{assignment}: " + "; ".join(problems))
    path = checks_file(assignment, fixtures_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"source_sha256": digest, "cells": specs}, indent=1, sort_keys=True) + "\n")
    return specs
