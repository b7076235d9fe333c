"""Grade a class: parallel autograde that survives bad submissions.

nbgrader stays the engine: every submission is graded by ``nbgrader autograde --student``; this
module runs those calls in parallel (``JOBS``), one subprocess per submission, so one hanging,
crashing or memory-hungry notebook cannot stop or slow the batch. Before grading, a submission
is read (corrupt JSON: ``invalid notebook``), repaired from the released notebook when its test
cells were deleted or its nbgrader metadata stripped (``repaired``, :mod:`repair`), and scanned
for integrity problems (``flagged``, :mod:`integrity`). Each gets one status and a one-line
reason (:mod:`status`).

Every kernel runs in a sandbox (:mod:`sandbox`: no network, read-only, no view of the course tree
or of any expected output) and writes records of what the student's code returned; after
nbgrader has run the notebook, the judge (:mod:`judge`) compares them with the trusted fixtures
here, outside the kernel, and sets the points. Where no sandbox can be made, grading stops with
the reason, unless ``unsafe`` is asked for explicitly: those grades are marked ``unsafe``.
"""
from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from tqdm.auto import tqdm

from course import settings
from staff import course_dir, nbgrader_cli
from staff.course_dir import CourseDir
from staff.grading import gradebook, integrity, judge, repair, sandbox
from staff.grading.status import Outcome, save_status


@dataclass
class Limits:
    """Per submission: ``cell`` s per cell (nbgrader interrupts it), ``wall`` s for the whole
    notebook (then the process group is killed), ``memory`` bytes of address space per process.
    Defaults: ``CELL_TIMEOUT``, ``NOTEBOOK_TIMEOUT`` and ``MEMORY_GB`` (:mod:`course.settings`)."""

    cell: int = field(default_factory=lambda: settings.current().cell_timeout)
    wall: int = field(default_factory=lambda: settings.current().notebook_timeout)
    memory: int = field(default_factory=lambda: settings.current().memory_bytes)


def submissions(course: CourseDir, assignments: list[str]) -> list[tuple[str, str]]:
    return [(p.parent.name, assignment) for assignment in assignments
            for p in sorted(course.submitted.glob(f"*/{assignment}")) if p.is_dir()]


def _limit_memory(limit: int):
    def apply() -> None:  # runs in the child before exec; the kernel it starts inherits it
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def _prepare(course: CourseDir, student: str, assignment: str) -> Outcome | tuple[list, list]:
    """Read, repair and scan one submission. Returns an Outcome only if it cannot be graded."""
    path = course.submitted / student / assignment / f"{assignment}.ipynb"
    try:
        nb = nbformat.read(path, as_version=4)
    except FileNotFoundError:
        return Outcome(student, assignment, "invalid notebook", f"no {path.name} in the submission", 0.0)
    except Exception as error:  # JSON or schema errors: report them, grade the others
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return Outcome(student, assignment, "invalid notebook", f"cannot read {path.name}: {first}", 0.0)
    released = nbformat.read(course_dir.release_notebook(assignment, course.release), as_version=4)
    fixed, repairs = repair.repair(nb, released)
    if repairs:
        original = course.autograded / ".originals" / student / assignment / path.name
        original.parent.mkdir(parents=True, exist_ok=True)
        if not original.exists():  # keep the very first version the student handed in
            shutil.copy2(path, original)
        nbformat.write(fixed, path)
    return repairs, integrity.scan(fixed)


def _status_from_log(log: str, returncode: int) -> tuple[str, str] | None:
    if "DeadKernelError" in log or "Kernel died" in log:
        return "kernel died", "the kernel died (crash, os._exit or out of memory); nothing graded"
    if "CellTimeoutError" in log:
        return "timeout", "a cell ignored the interrupt after its time limit; nothing graded"
    if "Timeout waiting for execute reply" in log:
        cells = len(re.findall("Timeout waiting for execute reply", log))
        return "timeout", f"{cells} cell(s) hit the per-cell limit and were interrupted; the rest graded"
    if returncode != 0:
        last = [line for line in log.splitlines() if "ERROR" in line]
        return "kernel died", (last[-1] if last else f"nbgrader exited with {returncode}")[:200]
    return None


@dataclass
class Batch:
    """What every submission of one run shares: the fixtures as kernels see them (expected outputs
    withheld), a folder for each submission's scratch, and the judge's checks per assignment."""

    folder: Path
    view: Path
    checks: dict[str, dict]
    unsafe: bool = False

    @classmethod
    def prepare(cls, assignments: list[str], unsafe: bool = False) -> "Batch":
        if not unsafe:
            sandbox.probe()  # SandboxUnavailable says why and how to enable it
        folder = Path(tempfile.mkdtemp(prefix="course-grading-"))
        folder.chmod(0o755)
        fixtures = settings.current().fixtures
        checks = {}
        for assignment in assignments:
            try:
                source = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
                checks[assignment] = judge.load_checks(assignment, fixtures, source)
            except FileNotFoundError as error:
                print(f"autograde: {error}; {assignment} is graded in the kernel only")
        return cls(folder, sandbox.fixtures_view(folder / "fixtures", fixtures), checks, unsafe)

    def scratch(self, student: str, assignment: str) -> Path:
        path = self.folder / "submissions" / f"{student}.{assignment}"
        shutil.rmtree(path, ignore_errors=True)
        return path

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _run_judge(course: CourseDir, student: str, assignment: str, batch: Batch, records: Path) -> tuple[str, str] | None:
    """Set the points of the judged cells; a verdict only when the kernel's records were rejected.

    (Hidden expected values are not in the kernel, so a hidden test cell "passes" there whenever
    the shapes fit: only the judge's verdict means anything, and it is final.)"""
    specs = batch.checks.get(assignment)
    notebook = course.autograded / student / assignment / f"{assignment}.ipynb"
    if specs is None or not notebook.is_file():
        return None
    nb = nbformat.read(notebook, as_version=4)
    try:
        found, bad = judge.read_records(records), ""
    except judge.BadRecords as error:
        found, bad = [], str(error)
    verdicts = judge.judge_notebook(nb, found, specs, judge.Fixtures(settings.current().fixtures))
    judge.set_scores(course.db_url, student, assignment, verdicts)
    judge.annotate(nb, verdicts)
    nbformat.write(nb, notebook)
    return ("flagged", f"for manual review: the kernel's records were rejected ({bad}); its judged cells score 0") if bad else None


def grade_one(course: CourseDir, student: str, assignment: str, limits: Limits,
              threads: int = 1, batch: Batch | None = None) -> Outcome:
    start = time.monotonic()
    prepared = _prepare(course, student, assignment)
    if isinstance(prepared, Outcome):
        return prepared
    repairs, flags = prepared
    own_batch = batch is None
    batch = batch or Batch.prepare([assignment])
    scratch = batch.scratch(student, assignment)
    spec = sandbox.make_spec(scratch, batch.view)
    extra = dict(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    args = [f"--Execute.timeout={limits.cell}"]
    if batch.unsafe:  # no sandbox: the kernel still reads the withheld view and records
        extra.update({settings.FIXTURES_VARIABLE: str(batch.view), "COURSE_RECORDS": str(scratch / "records")})
    else:
        extra[sandbox.SPEC_VARIABLE] = str(spec.save(scratch / "sandbox.json"))
        args.append("--Execute.kernel_manager_class=staff.grading.sandbox.SandboxedKernelManager")
    env = nbgrader_cli.environment(**extra)
    command = nbgrader_cli.command("autograde", assignment, f"--student={student}", "--force", *args, course=course)
    process = subprocess.Popen(command, cwd=course_dir.COURSE.root, env=env, text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True,
                               preexec_fn=_limit_memory(limits.memory))
    try:
        log, _ = process.communicate(timeout=limits.wall)
        verdict = _status_from_log(log, process.returncode)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # nbgrader and its kernel: the whole group
        process.communicate()
        shutil.rmtree(course.autograded / student / assignment, ignore_errors=True)
        verdict = "timeout", f"still running after the {limits.wall} s limit for one notebook; killed"
    if verdict is None or verdict[0] == "timeout":
        judged = _run_judge(course, student, assignment, batch, scratch / "records")
        if judged and verdict is None:
            verdict = judged
    shutil.rmtree(scratch, ignore_errors=True)
    if own_batch:
        batch.close()
    seconds = time.monotonic() - start
    if verdict is None:
        if flags:
            verdict = "flagged", "for manual review: " + "; ".join(flags)
        elif repairs:
            verdict = "repaired", "; ".join(repairs)
        else:
            verdict = "graded", ""
        if batch.unsafe:
            verdict = "unsafe", ("graded WITHOUT a sandbox (--unsafe-no-sandbox): the kernel could read and write "
                                 "what the grader can" + (f"; {verdict[0]}: {verdict[1]}" if verdict[1] else ""))
    elif repairs:
        verdict = verdict[0], verdict[1] + "; repaired: " + "; ".join(repairs)
    return Outcome(student, assignment, *verdict, round(seconds, 1), flags, repairs)


def autograde(assignments: list[str] | None = None, course: CourseDir = course_dir.COURSE,
              jobs: int | None = None, limits: Limits | None = None, progress: bool = True,
              unsafe: bool = False) -> list[Outcome]:
    """Grade every submission of every assignment, ``jobs`` at a time (default: one per core).

    Raises :class:`sandbox.SandboxUnavailable` when no sandbox can be made, unless ``unsafe``."""
    assignments = assignments or course_dir.assignments()
    todo = submissions(course, assignments)
    if not todo:
        print("autograde: no submissions in submitted/")
        return []
    limits = limits or Limits()
    jobs = max(1, jobs or settings.current().jobs or os.cpu_count() or 1)
    threads = max(1, (os.cpu_count() or 1) // jobs)
    backup = gradebook.backup(course)
    if backup:
        print(f"autograde: gradebook backed up to {backup.name}")
    gradebook.register(assignments, course)
    outcomes = []
    batch = Batch.prepare(sorted({a for _, a in todo}), unsafe)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(grade_one, course, student, assignment, limits, threads, batch)
                   for student, assignment in todo]
        bar = tqdm(as_completed(futures), total=len(futures), desc="autograde", unit="submission",
                   disable=not progress)
        for future in bar:
            outcome = future.result()
            outcomes.append(outcome)
            bar.set_postfix_str(f"{outcome.student}/{outcome.assignment}: {outcome.status}")
    batch.close()
    save_status(course, outcomes)
    return sorted(outcomes, key=lambda o: (o.assignment, o.student))
