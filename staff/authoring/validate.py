"""Prove the notebooks do what they claim, loudly (``nbgrader validate`` exits 0 even on failure).

- Every **source** notebook passes all its tests (nbgrader's own Validator, which runs the
  notebook like the autograder does, leaving out the cells a graded run skips).
- Every graded test cell of a source notebook is a hidden test the judge pays (no visible check
  carries points, none is declared ``course.in_kernel``: decided in the kernel, whose code a
  submission controls), and ``fixtures/judge/<assignment>.json`` is current.
- Every **released** notebook runs top to bottom with the stubs and fails *only* with
  ``NotImplementedError``, in every graded test cell that has visible code: a ``NameError`` or
  a missing fixture there would mean students start from a broken notebook.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from course import fresh_run, settings
from course.settings import ROOT
from staff import course_dir
from staff.course_dir import nbgrader

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def course_config() -> Config:
    """The course's nbgrader_config.py (also sets the environment grading kernels inherit)."""
    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()


def _first_line(cell_source: str) -> str:
    return next((line for line in cell_source.splitlines() if line.strip()), "")[:80]


def grading_problems(notebook: Path) -> list[str]:
    """Points that would not be paid by the judge for a value the kernel never had."""
    from staff.grading.execution import skipping
    from staff.grading.judging import cell_checks

    nb = nbformat.read(notebook, as_version=4)
    problems = []
    for cell in nb.cells:
        meta = nbgrader(cell)
        if not (cell.cell_type == "code" and meta.get("grade") and meta.get("points")):
            continue
        if cell.metadata.get("course", {}).get("in_kernel"):
            problems.append(
                f"test cell {meta['grade_id']} has points and is declared `course.in_kernel`: no cell may "
                f"be decided in the kernel (record its values and compare them with withheld ones)"
            )
        if "### BEGIN HIDDEN TESTS" not in cell.source:
            problems.append(
                f"test cell {meta['grade_id']} has points but is not a hidden test: visible checks are for "
                f"learning, their points belong to the hidden tests of the same exercise"
            )
    problems += skipping.problems(nb)
    try:
        cell_checks.load_checks(notebook.parent.name, settings.current().fixtures, nb)
    except cell_checks.ChecksUnavailable as error:
        problems.append(str(error))
    return problems


def validate_source(notebook: Path) -> list[str]:
    from nbgrader.validator import Validator  # heavy import, only when validating

    problems = grading_problems(notebook)
    # As a graded run executes it: the cells it declares skipped are left out (emptied in a copy
    # beside it, so the kernel starts in the same folder), and nbgrader's "changed" is not said of them.
    from staff.grading.execution import skipping

    graded, _ = skipping.as_graded(nbformat.read(notebook, as_version=4))
    with tempfile.TemporaryDirectory(prefix="validate-") as folder:
        config = course_config()
        # The kernel's sockets as ZMQ ipc files in a folder of ours (as fresh_run.kernel_manager's):
        # no TCP port, no warning per notebook that it runs over TCP without encryption.
        config.KernelManager.transport, config.KernelManager.ip = "ipc", str(Path(folder) / "kernel")
        copy = notebook.with_name(f".validate-{os.getpid()}-{notebook.name}")
        try:
            nbformat.write(graded, copy)
            result = Validator(config=config).validate(str(copy))
        finally:
            copy.unlink(missing_ok=True)
    for cell in result.get("failed", []):
        error = _ANSI.sub("", cell.get("raw_error", "")).strip().splitlines()
        problems.append(f"test cell `{_first_line(cell['source'])}` fails: {error[-1] if error else '?'}")
    for cell in result.get("changed", []):
        if cell["source"].strip():  # an emptied skipped cell is the copy's doing
            problems.append(f"read-only cell `{_first_line(cell['source'])}` was changed")
    return problems


def _has_code(source: str) -> bool:
    return any(line.strip() and not line.strip().startswith("#") for line in source.splitlines())


def validate_release(notebook: Path) -> list[str]:
    timeout = course_config().Execute.get("timeout", 120)
    nb = nbformat.read(notebook, as_version=4)
    # The notebook's last cell (course.submission.check) would run the whole notebook again.
    with tempfile.TemporaryDirectory(prefix="validate-") as folder:
        NotebookClient(
            nb,
            km=fresh_run.kernel_manager(Path(folder)),
            timeout=timeout,
            allow_errors=True,
            resources={"metadata": {"path": str(notebook.parent)}},
        ).execute(
            env={**os.environ, settings.SKIP_FRESH_RUN_VARIABLE: "1"}, cleanup_kc=True
        )  # shut down: ours
    problems = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta = nbgrader(cell)
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        for error in errors:
            if error["ename"] != "NotImplementedError":
                problems.append(
                    f"cell {meta.get('grade_id', cell.get('id'))}: unexpected "
                    f"{error['ename']}: {error['evalue'][:200]}"
                )
        if meta.get("grade") and _has_code(cell.source) and not errors:
            problems.append(f"graded test {meta['grade_id']} passes with the stub (it must fail)")
    return problems + contract_problems(notebook)


def contract_problems(notebook: Path) -> list[str]:
    """The saved cases outside what the released text promises, and promises it does not make."""
    from staff.authoring import assignments, contract_kit

    assignment = notebook.parent.name
    contract = assignments.contract(assignment)
    problems, _ = contract_kit.check_saved(settings.current().fixtures, assignment)
    said = "\n".join(cell.source for cell in nbformat.read(notebook, as_version=4).cells)
    return problems + [
        f"staff/authoring/assignments/{assignment}/contract.py quotes {promise!r}, which the released notebook "
        "does not say"
        for promise in contract_kit.unpromised(contract, said)
    ]


def _limit_threads(threads: int) -> None:
    """In each validating process: its kernels' BLAS/OpenMP threads, their share of the cores
    (oversubscribed cores make training kernels several times slower: :func:`cluster.kernel_threads`,
    docs/scaling.md)."""
    os.environ.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))


def _check(kind: str, notebook: Path) -> list[str]:
    return (validate_source if kind == "source" else validate_release)(notebook)


def validate(
    assignments: list[str] | None = None,
    course: course_dir.CourseDir = course_dir.COURSE,
    kinds: tuple[str, ...] = ("source", "release"),
) -> list[str]:
    """Every notebook of ``kinds``, one process each and one per core at once: nbgrader's Validator
    changes the working folder and environment of the process it runs in, so threads would not do.
    Results are printed in order, as they come."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    problems, todo = [], []
    for assignment in assignments or course_dir.assignments():
        for kind, notebook in (
            ("source", course_dir.source_notebook(assignment)),
            ("release", course_dir.release_notebook(assignment, course.release)),
        ):
            if kind not in kinds:
                continue
            if not notebook.is_file():
                problems.append(f"{kind} {assignment}: {notebook} is missing (run `make release`)")
                continue
            todo.append((kind, assignment, notebook))
    cores = os.cpu_count() or 1
    at_once = max(1, min(settings.current().jobs or cores, len(todo)))
    with ProcessPoolExecutor(
        at_once,
        mp_context=multiprocessing.get_context("spawn"),  # no fork of a process with threads
        initializer=_limit_threads,
        initargs=(max(1, cores // at_once),),
    ) as pool:
        checked = pool.map(_check, [kind for kind, _, _ in todo], [notebook for _, _, notebook in todo])
        for (kind, assignment, _), found in zip(todo, checked, strict=True):
            problems += [f"{kind} {assignment}: {p}" for p in found]
            print(
                f"validate: {kind:7} {assignment}: {'OK' if not found else f'{len(found)} problem(s)'}",
                flush=True,
            )
    return problems
