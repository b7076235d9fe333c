"""The preflight canary: the instructor's solution is graded first, and must get full marks.

Everything a grade depends on can break on a machine the course was not built on: another CPU
moving float32 results past a tolerance, a missing model package, a sandbox that mounts the wrong
paths. (A virtualenv installed from another checkout no longer can: every process the grader starts
imports this checkout's packages, see staff/__init__.py.) Each of these grades *every* student wrong
in the same way, silently. So before any student is graded, the source notebook of every
assignment in the batch (its solutions and hidden tests, as a perfect submission would look after
nbgrader restores the test cells) goes through the same bundle, cluster, sandbox, runner and
judge as the students' notebooks, once on every machine that has grading workers (workers on one
machine share its Python, packages and CPU). Anything short of full marks stops the batch before
any grade is written, and says which assignment, which machine, which check and what the kernel
printed. Its cost is printed (the whole solution of each assignment, once per machine).

On a cluster the students' submissions start beside it, at a lower priority: a worker the canary
does not need (on 128 workers, all but a few) executes students meanwhile instead of idling for the
canary's longest notebook, and their results wait in the writer, unwritten, for its verdict
(:class:`Pending`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import nbformat

from course import settings
from staff import course_dir
from staff.course_dir import nbgrader
from staff.grading.execution import worker
from staff.grading.judging import judge

#: The name the canary runs under (never a student's: nbgrader's student ids are folder names).
STUDENT = "(canary)"
#: Dask runs the canary's tasks before any student's queued beside them (students' are at 0).
PRIORITY = 10


class CanaryFailed(RuntimeError):
    """The grading set-up cannot give the instructor's solution full marks: nobody is graded."""


@dataclass
class Report:
    runs: int
    machines: int
    seconds: float

    def __str__(self) -> str:
        return (
            f"the instructor's solution got full marks in {self.runs} run(s) on {self.machines} machine(s) "
            f"before any grade was written ({self.seconds:.0f} s)"
        )


def notebook(assignment: str) -> str:
    """The source notebook as a perfect submission: solutions in, hidden tests in, outputs cleared."""
    nb = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nbformat.writes(nb)


def job(assignment: str, limits, unsafe: bool, modules: list[str], skip: list[str]) -> worker.Job:
    return worker.Job(
        STUDENT,
        assignment,
        notebook(assignment),
        limits.cell,
        limits.wall,
        limits.memory,
        unsafe=unsafe,
        modules=modules,
        skip=skip,  # as every student's run: the solution must get full marks without them
    )


def problems(result: worker.Result, specs: dict[str, list[dict]]) -> list[str]:
    """Why ``result`` (the solution, executed) is short of full marks; empty when it is not."""
    if result.error:
        return [f"{result.error[0]}: {result.error[1]}"]
    if result.notebook is None:
        return ["nothing came back from the kernel"]
    found = [f"the kernel's records were rejected: {result.bad_records}"] if result.bad_records else []
    found += [
        f"the shell's hooks were changed before {cell}: {hooks}"
        for cell, hooks in sorted(result.guard.items())
    ]
    for cell in nbformat.reads(result.notebook, as_version=4).cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.get("output_type") == "error":  # what the kernel printed
                name = nbgrader(cell).get("grade_id") or cell.get("id")
                found.append(f"cell {name}: {output['ename']}: {str(output['evalue'])[:300]}")
    verdicts = judge.judge_notebook(result.records, specs, judge.Fixtures(settings.current().fixtures))
    found += [f"{grade_id}: {v.reason}" for grade_id, v in verdicts.items() if v.reason is not None]
    return found


def check(
    runs: list[tuple[str, str, Callable[[], worker.Result]]], checks: dict[str, dict], start: float
) -> Report:
    """Wait for each ``(assignment, machine, result)`` run (started at ``start``) and judge it; raise
    :class:`CanaryFailed` listing every shortfall (nothing is graded then)."""
    failed = []
    for assignment, machine, result in runs:
        try:
            found = problems(result(), checks[assignment])
        except Exception as error:  # the worker could not run it at all
            found = [f"grading failed on the worker: {type(error).__name__}: {str(error)[:300]}"]
        failed += [f"{assignment} on {machine}: {problem}" for problem in found]
    if failed:
        raise CanaryFailed(
            f"the grading set-up cannot give the instructor's solution full marks, so nobody was graded "
            f"({len(failed)} problem(s)): "
            + "; ".join(failed[:8])
            + (" ..." if len(failed) > 8 else "")
            + ". Check the virtualenv (`make setup` in this checkout), the fixtures (`make fixtures-check`) "
            "and the sandbox (`python -m pytest tests/staff/grading/execution/test_sandbox.py`)"
        )
    return Report(len(runs), len({machine for _, machine, _ in runs}), time.monotonic() - start)


class Pending:
    """The canary's runs under way on the cluster. Students' submissions run beside them (at a
    lower priority, on workers the canary leaves free), but nothing is written until
    :meth:`result` has judged every run: a failed canary still grades nobody."""

    def __init__(self, runs, futures: list, checks: dict[str, dict], start: float):
        self._runs, self._futures, self._checks, self._start = runs, futures, checks, start
        self._report: Report | None = None

    def done(self) -> bool:
        """Every run is back (without waiting)."""
        return self._report is not None or all(future.done() for future in self._futures)

    def result(self) -> Report:
        """Wait for every run and judge it; raise :class:`CanaryFailed` listing every shortfall."""
        if self._report is None:
            self._report = check(self._runs, self._checks, self._start)
        return self._report


def on_cluster(client, bundle, batch, course, limits, threads) -> Pending:
    """One run of each assignment's solution on each machine of the cluster (any of its workers),
    started ahead of the students' (a higher priority); ``bundle`` is the batch's
    :class:`cluster.Shared` course bundle."""
    from concurrent.futures import CancelledError

    start = time.monotonic()
    machines = sorted(
        {info.get("host") or address for address, info in client.scheduler_info()["workers"].items()}
    )
    futures = []

    def submit(assignment: str, machine: str):
        task = job(
            assignment, limits, batch.unsafe, batch.modules(course, assignment), batch.skips[assignment]
        )
        where = {"workers": [machine]} if len(machines) > 1 else {}
        futures.append(
            client.submit(
                worker.execute,
                bundle.future,
                task,
                threads,
                pure=False,
                priority=PRIORITY,
                key=f"canary-{assignment}-{machine}-{uuid.uuid4().hex[:8]}",
                **where,
            )
        )
        return futures[-1]

    def result(assignment: str, machine: str, future) -> Callable[[], worker.Result]:
        def wait() -> worker.Result:
            nonlocal future
            for _ in range(2):  # a worker that dies can make Dask let go of its task: not the set-up's fault
                try:
                    return future.result()
                except CancelledError:
                    bundle.again()  # (a dead worker may have taken its last copy)
                    future = submit(assignment, machine)
            return future.result()

        return wait

    runs = [(a, m, result(a, m, submit(a, m))) for m in machines for a in sorted(batch.checks)]
    return Pending(runs, futures, batch.checks, start)


def here(batch, course, limits) -> Report:
    """The same, in this process (one submission graded without a cluster)."""
    start = time.monotonic()
    runs = [
        (
            a,
            "this machine",
            lambda a=a: worker.execute(
                batch.bundle, job(a, limits, batch.unsafe, batch.modules(course, a), batch.skips[a])
            ),
        )
        for a in sorted(batch.checks)
    ]
    return check(runs, batch.checks, start)
