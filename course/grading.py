"""Grade a class: parallel autograde that survives bad submissions, feedback, export.

nbgrader stays the engine: every submission is graded by ``nbgrader autograde --student``; this
module runs those calls in parallel (``JOBS``), one subprocess per submission, so one hanging,
crashing or memory-hungry notebook cannot stop or slow the batch. Before grading, a submission
is read (corrupt JSON: ``invalid notebook``), repaired from the released notebook when its test
cells were deleted or its nbgrader metadata stripped (``repaired``; nbgrader would silently
turn those points into "needs manual grade" that exports as 0), and scanned for integrity
problems (``flagged``). Each gets one status and a one-line reason, kept in
``autograded/status.json`` and written into the grades CSV by :func:`export`.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

import nbformat
from tqdm.auto import tqdm

from course import integrity, nbgrader_cli, paths, release, repair

STATUSES = ("graded", "repaired", "flagged", "timeout", "kernel died", "invalid notebook")
BACKUPS_KEPT = 5


@dataclass
class Limits:
    """Per submission: ``cell`` s per cell (nbgrader interrupts it), ``wall`` s for the whole
    notebook (then the process group is killed), ``memory`` bytes of address space per process."""

    cell: int = 300
    wall: int = 900
    memory: int = 8 * 2**30


@dataclass
class Outcome:
    student: str
    assignment: str
    status: str
    reason: str
    seconds: float
    flags: list[str] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)


def submissions(course: paths.CourseDir, assignments: list[str]) -> list[tuple[str, str]]:
    return [(p.parent.name, assignment) for assignment in assignments
            for p in sorted(course.submitted.glob(f"*/{assignment}")) if p.is_dir()]


def backup_gradebook(course: paths.CourseDir) -> Path | None:
    """Copy the gradebook (SQLite's online backup: consistent) before anything rewrites it."""
    if not course.gradebook.exists():
        return None
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    target = course.gradebook.with_name(f"{course.gradebook.name}.{stamp}.bak")
    with sqlite3.connect(course.gradebook) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    for old in sorted(course.gradebook.parent.glob(f"{course.gradebook.name}.*.bak"))[:-BACKUPS_KEPT]:
        old.unlink()
    return target


def _limit_memory(limit: int):
    def apply() -> None:  # runs in the child before exec; the kernel it starts inherits it
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def _prepare(course: paths.CourseDir, student: str, assignment: str) -> Outcome | tuple[list, list]:
    """Read, repair and scan one submission. Returns an Outcome only if it cannot be graded."""
    path = course.submitted / student / assignment / f"{assignment}.ipynb"
    try:
        nb = nbformat.read(path, as_version=4)
    except FileNotFoundError:
        return Outcome(student, assignment, "invalid notebook", f"no {path.name} in the submission", 0.0)
    except Exception as error:  # JSON or schema errors: report them, grade the others
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return Outcome(student, assignment, "invalid notebook", f"cannot read {path.name}: {first}", 0.0)
    released = nbformat.read(paths.release_notebook(assignment, course.release), as_version=4)
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


def grade_one(course: paths.CourseDir, student: str, assignment: str, limits: Limits,
              threads: int = 1) -> Outcome:
    start = time.monotonic()
    prepared = _prepare(course, student, assignment)
    if isinstance(prepared, Outcome):
        return prepared
    repairs, flags = prepared
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
           "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    command = [str(bindir / "nbgrader"), "autograde", assignment, f"--student={student}", "--force",
               f"--Execute.timeout={limits.cell}", *course.nbgrader_args()]
    process = subprocess.Popen(command, cwd=paths.ROOT, env=env, text=True, stdout=subprocess.PIPE,
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
    seconds = time.monotonic() - start
    if verdict is None:
        if flags:
            verdict = "flagged", "for manual review: " + "; ".join(flags)
        elif repairs:
            verdict = "repaired", "; ".join(repairs)
        else:
            verdict = "graded", ""
    elif repairs:
        verdict = verdict[0], verdict[1] + "; repaired: " + "; ".join(repairs)
    return Outcome(student, assignment, *verdict, round(seconds, 1), flags, repairs)


def status_file(course: paths.CourseDir) -> Path:
    return course.autograded / "status.json"


def load_status(course: paths.CourseDir) -> dict[tuple[str, str], dict]:
    path = status_file(course)
    if not path.exists():
        return {}
    return {(o["student"], o["assignment"]): o for o in json.loads(path.read_text())}


def _save_status(course: paths.CourseDir, outcomes: list[Outcome]) -> None:
    merged = load_status(course)
    merged.update({(o.student, o.assignment): asdict(o) for o in outcomes})
    status_file(course).parent.mkdir(parents=True, exist_ok=True)
    status_file(course).write_text(json.dumps(sorted(merged.values(), key=lambda o: (o["assignment"], o["student"])),
                                              indent=1) + "\n")


def autograde(assignments: list[str] | None = None, course: paths.CourseDir = paths.COURSE,
              jobs: int | None = None, limits: Limits = Limits(), progress: bool = True) -> list[Outcome]:
    """Grade every submission of every assignment, ``jobs`` at a time (default: one per core)."""
    assignments = assignments or paths.assignments()
    todo = submissions(course, assignments)
    if not todo:
        print("autograde: no submissions in submitted/")
        return []
    jobs = max(1, jobs or os.cpu_count() or 1)
    threads = max(1, (os.cpu_count() or 1) // jobs)
    backup = backup_gradebook(course)
    if backup:
        print(f"autograde: gradebook backed up to {backup.name}")
    # The gradebook must know each assignment's cells (hidden tests included) before grading;
    # registering also creates a missing gradebook once, rather than in parallel.
    release.register(assignments, course)
    outcomes = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(grade_one, course, student, assignment, limits, threads)
                   for student, assignment in todo]
        bar = tqdm(as_completed(futures), total=len(futures), desc="autograde", unit="submission",
                   disable=not progress)
        for future in bar:
            outcome = future.result()
            outcomes.append(outcome)
            bar.set_postfix_str(f"{outcome.student}/{outcome.assignment}: {outcome.status}")
    _save_status(course, outcomes)
    return sorted(outcomes, key=lambda o: (o.assignment, o.student))


def summary(outcomes: list[Outcome]) -> str:
    lines = [f"{'assignment':<26} {'student':<22} {'status':<17} {'time':>6}  reason", "-" * 100]
    lines += [f"{o.assignment:<26} {o.student:<22} {o.status:<17} {o.seconds:>5.0f}s  {o.reason[:110]}"
              for o in outcomes]
    return "\n".join(lines)


def feedback(assignments: list[str] | None = None, course: paths.CourseDir = paths.COURSE) -> None:
    for assignment in assignments or paths.assignments():
        if any(course.autograded.glob(f"*/{assignment}")):
            nbgrader_cli.run("generate_feedback", assignment, "--force", "--log-level=WARN", course=course)


def export(course: paths.CourseDir = paths.COURSE) -> Path:
    """nbgrader's CSV plus ``status``, ``reason`` and ``manual_pending`` columns, so a failed
    autograde or an answer no TA has graded yet never reads as a real zero."""
    from course import report  # report reads the gradebook; imported here to keep start-up light

    csv_path = course.root / "grades.csv"
    nbgrader_cli.run("export", f"--to={csv_path}", "--log-level=WARN", course=course)
    with csv_path.open() as f:
        rows = list(csv.DictReader(f))
    status = load_status(course)
    pending = {(r.student, r.assignment): r.manual_pending for r in report.rows(course=course)}
    seen = set()
    for row in rows:
        key = (row["student_id"], row["assignment"])
        seen.add(key)
        known = status.get(key)
        submitted = bool(row.get("timestamp")) or key in pending
        row["status"] = known["status"] if known else ("graded" if key in pending else
                                                      "not submitted" if not submitted else "not graded")
        row["reason"] = known["reason"] if known else ""
        row["manual_pending"] = pending.get(key, 0.0)
    for (student, assignment), known in sorted(status.items()):
        if (student, assignment) not in seen:  # never reached the gradebook (e.g. invalid notebook)
            rows.append({"assignment": assignment, "student_id": student, "raw_score": 0.0, "score": 0.0,
                         "status": known["status"], "reason": known["reason"], "manual_pending": 0.0})
    fields = list(dict.fromkeys([*(rows[0].keys() if rows else []), "status", "reason", "manual_pending"]))
    with csv_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(rows)
    print(f"export: wrote {csv_path}")
    return csv_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.grading", description=__doc__.split("\n")[0])
    parser.add_argument("step", choices=["autograde", "feedback", "export"])
    parser.add_argument("assignments", nargs="*", help="default: every assignment")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS") or 0) or None,
                        help="parallel submissions (default: number of cores; env JOBS)")
    parser.add_argument("--cell-timeout", type=int, default=Limits.cell)
    parser.add_argument("--wall", type=int, default=Limits.wall, help="seconds per notebook")
    parser.add_argument("--memory-gb", type=float, default=Limits.memory / 2**30)
    args = parser.parse_args(argv)
    if args.step == "export":
        export()
    elif args.step == "feedback":
        feedback(args.assignments or None)
    else:
        limits = Limits(args.cell_timeout, args.wall, int(args.memory_gb * 2**30))
        outcomes = autograde(args.assignments or None, jobs=args.jobs, limits=limits)
        print(summary(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
