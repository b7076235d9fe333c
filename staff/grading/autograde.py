"""Grade a class: nbgrader's autograde, split so the execution can run on a cluster.

nbgrader stays the engine, in three steps per submission:

1. **here** — read it (corrupt JSON: ``invalid notebook``), repair deleted test cells or stripped
   metadata from the release (``repaired``, :mod:`repair`), scan it (``flagged``,
   :mod:`integrity`), and run nbgrader's own sanitizing preprocessors (test and locked cells back
   from the gradebook);
2. **on a worker** (:mod:`cluster`, :mod:`worker`) — nbgrader's ``Execute`` in a fresh sandboxed
   kernel (:mod:`sandbox`: no network, read-only, no course tree, no expected output), with the
   per-cell, per-notebook and memory limits; back come the executed notebook and the records of
   every check;
3. **here, one writer** — the judge (:mod:`judge`) compares the run's records with the trusted
   fixtures; then nbgrader's ``Autograde`` converter, with its execution step swapped for the
   worker's result (:class:`nbgrader_steps.UseExecuted`) and the judge's points saved where
   nbgrader saves the kernel's (:class:`nbgrader_steps.SaveJudged`), records the submission,
   timestamp and late penalty, writes ``autograded/`` once and saves the points, in one
   transaction of the writer's one gradebook session (:mod:`session`).

First the canary (:mod:`canary`): each solution, through steps 2-3, full marks or nobody is graded.

:func:`autograde` is the list of named steps: :func:`prepare` (step 1, one submission at a time,
:func:`ready`), :class:`Dispatch` (``send``: step 2 on a worker; ``save``: step 3, :func:`finish`, as
each result arrives, once the canary passed), :class:`Record` (each outcome into the status log at
once) and :func:`report`.

Each submission gets one status and a one-line reason (:mod:`status`). Where no sandbox can be
made, grading stops with the reason, unless ``unsafe`` is asked for: those grades are ``unsafe``.

No notebook can stop a batch: every step one submission goes through (read, repair, scan,
sanitize, send, run, judge, save) runs under :func:`step`, so whatever a notebook makes it raise
ends that submission only, as ``invalid notebook`` (nbformat or nbgrader cannot take it) or
``grader error`` (the reason names the step), and the batch goes on. Only the course's own errors
(:data:`STOPS_THE_BATCH`) stop it, before anyone is graded wrongly.
"""

from __future__ import annotations

import itertools
import json
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import CancelledError
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from tqdm.auto import tqdm

from staff import calendar, course_dir
from staff.course_dir import CourseDir
from staff.grading import canary, repair
from staff.grading.batch import Batch, Limits  # noqa: F401 (Limits: autograde.Limits for callers)
from staff.grading.execution import cluster, sandbox, worker
from staff.grading.gradebook import admin, late, nbgrader_steps, session
from staff.grading.integrity import static_scan
from staff.grading.judging import cell_checks, judge
from staff.grading.status import Outcome, first_line, load_status, save_status


def submissions(
    course: CourseDir, assignments: list[str], students: list[str] | None = None
) -> list[tuple[str, str]]:
    return [
        (p.parent.name, assignment)
        for assignment in assignments
        for p in sorted(course.submitted.glob(f"*/{assignment}"))
        if p.is_dir() and (not students or p.parent.name in students)
    ]


#: What stops a whole batch: the course, not a notebook (no sandbox, a missing or stale judge file, a
#: malformed due_dates.toml, a solution short of full marks). Anything else a step raises is one
#: submission's outcome (:func:`step`).
STOPS_THE_BATCH = (
    sandbox.SandboxUnavailable,
    cell_checks.ChecksUnavailable,
    calendar.DueDatesError,
    canary.CanaryFailed,
)


class NotGraded(Exception):
    """A step of one submission failed: its status and one-line reason (raised by :func:`step`)."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason

    def outcome(self, student: str, assignment: str, seconds: float, flags=(), repairs=()) -> Outcome:
        return Outcome(student, assignment, self.status, self.reason, seconds, list(flags), list(repairs))


@contextmanager
def step(name: str, invalid: tuple[type[BaseException], ...] = (), says: str = "") -> Iterator[None]:
    """One step of one submission: whatever it raises ends that submission only, as
    :class:`NotGraded`: an ``invalid`` error (the notebook is malformed in a way nbformat or
    nbgrader cannot take) as ``invalid notebook`` ("``says``: the error"), anything else as
    ``grader error`` ("grader error in ``name``: the error"), one line, never a traceback. The
    course's own errors (:data:`STOPS_THE_BATCH`) and Ctrl-C go through: they stop the batch."""
    try:
        yield
    except (NotGraded, *STOPS_THE_BATCH):
        raise
    except invalid as error:
        raise NotGraded("invalid notebook", f"{says or name}: {first_line(error)}") from None
    except Exception as error:
        raise NotGraded("grader error", f"grader error in {name}: {first_line(error)}") from None


def _unusable(nb: nbformat.NotebookNode) -> bool:
    """Whether the grader cannot read a notebook nbformat's schema rejects: it needs a list of
    cells, each a code, markdown or raw cell with its source as text and its metadata an object.
    (Editors write schema errors the grader takes as before: outputs on a markdown cell, metadata
    on a stream output, keys of their own.)"""
    cells = nb.get("cells")
    return not isinstance(cells, list) or not all(
        isinstance(cell, dict)
        and cell.get("cell_type") in ("code", "markdown", "raw")
        and isinstance(cell.get("source"), str)
        and isinstance(cell.get("metadata"), dict)
        and isinstance(cell.get("outputs", []), list)
        for cell in cells
    )


def _read(path: Path) -> nbformat.NotebookNode:
    """The submission as nbformat reads it, or ``invalid notebook``: no file, not JSON, not a
    notebook nbformat can read (nor one the grader can, the reason says where), or text no file
    can hold (a lone surrogate escaped in the JSON: writing it back, or sending it to a worker,
    would fail)."""
    if not path.is_file():
        raise NotGraded("invalid notebook", f"no {path.name} in the submission")
    found: dict = {}
    with step("read", invalid=(Exception,), says=f"cannot read {path.name}"):
        nb = nbformat.read(path, as_version=4, capture_validation_error=found)
        json.dumps(nb, ensure_ascii=False).encode()
    if found and _unusable(nb):
        error = found["ValidationError"]
        where = "/".join(str(p) for p in getattr(error, "absolute_path", ()))
        message = getattr(error, "message", None) or first_line(error)
        raise NotGraded(
            "invalid notebook",
            f"cannot read {path.name}: not a notebook: {message}"[:200] + (f" (at {where})" if where else ""),
        )
    return nb


def _scan(nb, released, hidden) -> list[str]:
    """The integrity scan's flags; a notebook too deep for it to read is flagged as such (a flag
    holds the grade for a TA), not failed."""
    try:
        return static_scan.scan(nb, released, hidden)
    except (RecursionError, MemoryError) as error:
        return [
            f"too deep to read: the integrity scan stopped ({type(error).__name__}); read its code by hand"
        ]


def _judge(batch: Batch, assignment: str, result: worker.Result) -> dict[str, judge.Verdict] | None:
    """The judge's verdict on each test cell of a run (None when there is no executed notebook).

    (Hidden expected values are not in the kernel, so a hidden test cell "passes" there whenever
    the shapes fit: only the judge's verdict means anything, and it is final.)"""
    specs = batch.checks.get(assignment)
    if specs is None or not result.notebook:
        return None
    return judge.judge_notebook(result.records, specs, batch.fixtures)


#: A status reason lists at most this many items, whole (the report shows each as a line).
REASON_ITEMS = 30


def _items(items: list[str]) -> str:
    """Items of a status reason, joined whole: never cut mid-word."""
    more = len(items) - REASON_ITEMS
    return "; ".join(items[:REASON_ITEMS] + ([f"and {more} more"] if more > 0 else []))


def _distrusted(result: worker.Result, judged: dict[str, judge.Verdict]) -> tuple[str, str] | None:
    """A status for a run whose kernel tampered with its records or the shell's hooks."""
    foreign = [f"{cell}: {v.foreign}" for cell, v in judged.items() if v.foreign]
    if foreign:  # only code running inside a test cell (the submission's, called by it) writes those
        return "flagged", (
            "for manual review: test cells recorded checks their tests do not make, so they score 0 ("
            + _items(foreign)
            + ")"
        )
    if result.bad_records:
        return (
            "flagged",
            f"for manual review: the kernel's records were rejected ({result.bad_records}); its judged cells score 0",
        )
    if result.guard:  # defence in depth (cells.py): the guard put the shell's hooks back before these cells
        changed = _items([f"before {cell}: {hooks}" for cell, hooks in sorted(result.guard.items())])
        return "flagged", f"for manual review: the notebook changed how the kernel runs cells ({changed})"
    return None


@dataclass
class Ready:
    """A submission read, repaired, scanned and sanitized here, ready for a worker."""

    student: str
    assignment: str
    job: worker.Job
    digest: str
    repairs: list[str]
    flags: list[str]
    prepared_in: float  # seconds spent here before it left


def ready(
    course: CourseDir, student: str, assignment: str, limits: Limits, batch: Batch, threads: int | None = None
) -> Outcome | Ready:
    """Read, repair, scan and sanitize one submission here, each step guarded (:func:`step`): the
    job for a worker, or the submission's Outcome when a step stopped it."""
    start = time.monotonic()
    path = course.submitted / student / assignment / f"{assignment}.ipynb"
    released = batch.released(course, assignment)  # the course's: its errors stop the batch
    hidden, modules = batch.hidden.get(assignment, frozenset()), batch.modules(course, assignment)
    repairs, flags = [], []
    try:
        nb = _read(path)
        with step("repair"):
            nb, repairs = repair.repair(nb, released)
            if repairs:
                original = course.autograded / ".originals" / student / assignment / path.name
                original.parent.mkdir(parents=True, exist_ok=True)
                if not original.exists():  # keep the very first version the student handed in
                    shutil.copy2(path, original)
                nbformat.write(nb, path)
        with step("scan"):
            flags = _scan(nb, released, hidden)
        # nbgrader's CheckCellMetadata and friends: say what, grade the rest
        with step("sanitize", invalid=nbgrader_steps.REJECTED, says="nbgrader cannot read it"):
            try:
                notebook = nbgrader_steps.sanitize(course, student, assignment, nb)
            finally:  # its reads end here, not "idle in transaction" while a worker runs it (PostgreSQL)
                session.settle(course.db_url)
        with step("send"):
            job = worker.Job(
                student,
                assignment,
                notebook,
                limits.cell,
                limits.wall,
                limits.memory,
                threads,
                batch.unsafe,
                modules,
                batch.skips[assignment],
            )
            digest = batch.digest(notebook, assignment, limits)
    except NotGraded as stopped:
        return stopped.outcome(student, assignment, round(time.monotonic() - start, 2), flags, repairs)
    return Ready(student, assignment, job, digest, repairs, flags, round(time.monotonic() - start, 2))


def finish(
    course: CourseDir,
    item: Ready,
    batch: Batch,
    result: worker.Result | None,
    failure: tuple[str, str] | None = None,
) -> Outcome:
    """The one writer: the judge's verdicts on the worker's result, then ``autograded/`` and the
    gradebook, each step guarded (:func:`step`): one that fails ends this submission only, and
    nothing of it is written (its transaction rolls back)."""
    phases = {"prepare": item.prepared_in, **(result.phases if result else {})}
    mark = started = time.monotonic()
    verdict = failure or (result.error if result else None)
    try:
        with step("run"):  # what the worker brought back
            executed = (
                nbformat.reads(result.notebook, as_version=4)
                if result and result.notebook
                else (verdict[1] if verdict else "nothing came back from the worker")
            )
        with step("judge"):
            judged = (
                _judge(batch, item.assignment, result)
                if result is not None and (verdict is None or verdict[0] == "timeout")
                else None
            )
            distrusted = _distrusted(result, judged) if judged is not None else None
        phases["judge"] = round(time.monotonic() - mark, 2)
        mark = time.monotonic()
        # the grade lands whole, or not at all
        with step("save"), session.one_transaction(course.db_url):
            logged = nbgrader_steps.save(
                course,
                item.student,
                item.assignment,
                nbgrader_steps.Handoff(item.job.notebook, executed, judged),
            )
            late.after_autograde(course, item.student, item.assignment)  # the LMS's late marker
    except NotGraded as stopped:
        seconds = round(item.prepared_in + time.monotonic() - started, 1)
        return stopped.outcome(item.student, item.assignment, seconds, item.flags, item.repairs)
    phases["gradebook"] = round(time.monotonic() - mark, 2)
    if verdict is None and logged and not isinstance(executed, str):
        verdict = "kernel died", logged.strip().splitlines()[-1][:200]
    if distrusted and verdict is None:
        verdict = (
            distrusted[0],
            "; ".join([distrusted[1], _items(item.flags)]) if item.flags else distrusted[1],
        )
    if verdict is None:
        if item.flags:
            verdict = "flagged", "for manual review: " + _items(item.flags)
        elif item.repairs:
            verdict = "repaired", "; ".join(item.repairs)
        else:
            verdict = "graded", ""
        if batch.unsafe:
            verdict = (
                "unsafe",
                (
                    "graded WITHOUT a sandbox (--unsafe-no-sandbox): the kernel could read and write "
                    "what the grader can" + (f"; {verdict[0]}: {verdict[1]}" if verdict[1] else "")
                ),
            )
    elif item.repairs:
        verdict = verdict[0], verdict[1] + "; repaired: " + "; ".join(item.repairs)
    seconds = round(sum(phases.get(p, 0.0) for p in ("prepare", "worker", "gradebook", "judge")), 1)
    digest = item.digest if failure is None else ""  # a lost worker is not the submission's doing: retry it
    return Outcome(
        item.student,
        item.assignment,
        *verdict,
        seconds,
        item.flags,
        item.repairs,
        digest=digest,
        phases=phases,
        worker=result.worker if result else "",
    )


def grade_one(course: CourseDir, student: str, assignment: str, limits: Limits, threads: int = 1) -> Outcome:
    """One submission, here, without a cluster (a re-grade, or the tests); the canary first, as for any batch."""
    batch = Batch([assignment])
    try:
        canary.here(batch, course, limits)
        item = ready(course, student, assignment, limits, batch, threads)
        if isinstance(item, Outcome):
            return item
        try:
            with step("run"):
                result = worker.execute(batch.bundle, item.job)
        except NotGraded as stopped:
            return stopped.outcome(student, assignment, item.prepared_in, item.flags, item.repairs)
        with session.one_session(course.db_url):
            return finish(course, item, batch, result)
    finally:
        batch.close()


def _already_graded(course: CourseDir, todo: list[tuple[str, str]]) -> dict[tuple[str, str], dict]:
    """Submissions whose last grade is in the gradebook and in the status file, with its digest."""
    known = {k: v for k, v in load_status(course).items() if v.get("digest")}
    if not known:
        return {}
    found = set()
    with Gradebook(course.db_url) as gb:
        for assignment in {a for _, a in todo}:
            try:
                found |= {(s.student.id, assignment) for s in gb.assignment_submissions(assignment)}
            except MissingEntry:
                continue
    return {k: v for k, v in known.items() if k in found}


class Record:
    """Step 5, kept as results come: each outcome into the status log at once (a crash later loses
    nothing finished), the progress bar, and what the batch returns."""

    def __init__(self, course: CourseDir, total: int, show: bool) -> None:
        self.course, self.outcomes, self.kept = course, [], []
        self.bar = tqdm(total=total, desc="autograde", unit="submission", disable=not show)

    def __call__(self, outcome: Outcome, unchanged: bool = False) -> None:
        if unchanged:
            self.kept.append(outcome)  # its status entry stands as it is
        else:
            save_status(self.course, [outcome])
        self.outcomes.append(outcome)
        self.bar.update()
        self.bar.set_postfix_str(f"{outcome.student}/{outcome.assignment}: {outcome.status}")


def prepare(
    course: CourseDir,
    todo: list[tuple[str, str]],
    limits: Limits,
    batch: Batch,
    previous: dict[tuple[str, str], dict],
    record: Record,
) -> Iterator[Ready]:
    """Step 1, one submission at a time (workers start on the first while the rest are read): read,
    repaired, scanned and sanitized (:func:`ready`); one that cannot be is recorded with its status,
    one unchanged since its last grade is kept as it was."""
    for student, assignment in todo:
        item = ready(course, student, assignment, limits, batch)
        if isinstance(item, Outcome):
            record(item)
        elif previous.get((student, assignment), {}).get("digest") == item.digest:
            record(Outcome(**previous[(student, assignment)]), unchanged=True)
        else:
            yield item


class Dispatch:
    """Steps 2 to 4 on the cluster: each prepared submission sent to a worker (run), and each result,
    as it arrives, judged and saved by the one writer here (:func:`finish`), once the canary (the
    instructor's solutions, sent first) has passed: until then results wait, and if it fails none is
    written (:class:`canary.CanaryFailed`)."""

    def __init__(self, client, course: CourseDir, batch: Batch, limits: Limits, record: Record) -> None:
        from distributed import as_completed

        self.client, self.course, self.batch, self.record = client, course, batch, record
        self.bundle = cluster.Shared(client, batch.bundle)
        self.threads = cluster.kernel_threads(client)
        # The students start beside the canary; their results wait here for its verdict.
        self.preflight = canary.on_cluster(client, self.bundle, batch, course, limits, self.threads)
        self.sent: dict = {}
        self.finished = as_completed()
        self.announced: list[str] = []

    def send(self, item: Ready, attempt: int = 0) -> None:
        """Step 2: run it on a worker (a task Dask retries once if its worker is lost)."""
        future = self.client.submit(
            worker.execute,
            self.bundle.future,
            item.job,
            self.threads,
            pure=False,
            retries=1,
            key=f"grade-{item.assignment}-{item.student}-{item.digest[:10]}-{attempt}",
        )
        self.sent[future] = item, time.monotonic(), attempt
        self.finished.add(future)

    def save(self, future) -> None:
        """Steps 3 and 4, the one writer: the worker's result judged and saved (or why there is none)."""
        item, at, attempt = self.sent.pop(future)
        result, failure = None, None
        try:
            result = future.result()
            # waiting for a free worker (and the transfers): the rest of the round trip
            result.phases["queue"] = round(max(0.0, time.monotonic() - at - result.phases["worker"]), 2)
        except CancelledError as error:  # its worker died and Dask let go of the task: it does, at times
            if attempt < 2:
                self.bundle.again()  # (a dead worker may have taken its last copy)
                return self.send(item, attempt + 1)
            failure = cluster.failure(error)
        except Exception as error:  # the worker could not grade it: say why, go on
            failure = cluster.failure(error)
        self.record(finish(self.course, item, self.batch, result, failure))

    def canary_passed(self, wait: bool) -> bool:
        """Its verdict, once in (``wait``: wait for it); CanaryFailed: nobody is written."""
        if not self.announced and (wait or self.preflight.done()):
            try:
                self.announced.append(self.preflight.result())
            except canary.CanaryFailed as failed:
                beside = sum(1 for future in self.sent if future.done())
                self.client.cancel(list(self.sent))  # an existing scheduler would go on running them
                raise canary.CanaryFailed(
                    f"{failed} ({beside} submission(s) executed beside the canary were discarded unwritten)"
                ) from None
            beside = sum(1 for future in self.sent if future.done())
            self.record.bar.write(
                f"autograde: canary: {self.announced[0]}; {beside} submission(s) executed beside it, written now"
            )
        return bool(self.announced)

    def run(self, items: Iterator[Ready]) -> None:
        for item in items:
            self.send(item)
            if self.canary_passed(wait=False):
                for done in self.finished.next_batch(block=False):  # written as they come, not at the end
                    self.save(done)
        self.canary_passed(wait=True)
        for done in self.finished:
            self.save(done)


def report(record: Record) -> list[Outcome]:
    """Step 6: what was kept unchanged, said once; every outcome, in course order."""
    if record.kept:
        print(
            f"autograde: {len(record.kept)} submission(s) unchanged since their last grade, kept "
            f"(--force grades them again)"
        )
    return sorted(record.outcomes, key=lambda o: (o.assignment, o.student))


def autograde(
    assignments: list[str] | None = None,
    course: CourseDir = course_dir.COURSE,
    jobs: int | None = None,
    limits: Limits | None = None,
    progress: bool = True,
    unsafe: bool = False,
    force: bool = False,
    students: list[str] | None = None,
) -> list[Outcome]:
    """Grade every submission of every assignment (only ``students``' if given) on a Dask cluster
    (:mod:`cluster`: local, ``jobs`` workers, unless ``SCHEDULER`` names one). Submissions unchanged
    (notebook, course files, checks, limits) since their last grade are skipped unless ``force``. Each result is
    written here as it arrives (gradebook, ``autograded/``, status), so a crash loses no finished
    grade. Raises :class:`sandbox.SandboxUnavailable` when no sandbox can be made, unless ``unsafe``."""
    assignments = assignments or course_dir.assignments()
    todo = submissions(course, assignments, students)
    if not todo:
        print("autograde: no submissions in submitted/")
        return []
    limits = limits or Limits()
    backup = admin.backup(course)
    if backup:
        print(f"autograde: gradebook backed up to {backup.name}")
    admin.register(assignments, course)
    batch = Batch(sorted({a for _, a in todo}), unsafe)
    record = Record(course, len(todo), progress)
    try:
        items = prepare(course, todo, limits, batch, {} if force else _already_graded(course, todo), record)
        first = next(items, None)  # a cluster only when something is to be graded
        if first is not None:
            # the one writer's gradebook: nbgrader's, opened once for the batch
            with cluster.connect(jobs) as (client, where), session.one_session(course.db_url):
                record.bar.write(f"autograde: grading on {where}")
                Dispatch(client, course, batch, limits, record).run(itertools.chain([first], items))
    finally:
        record.bar.close()
        batch.close()
    return report(record)
