"""Benchmark: `make autograde` (a Dask cluster of sandboxed kernels, judged outside) against plain
sequential `nbgrader autograde`, on the same submissions, in one run, with identical scores.

    python benchmarks/autograde_parallel.py [--submissions 32] [--workers 2]

The bundled samples of every assignment, repeated under new student ids until there are
--submissions of them, interleaved by assignment as a real batch is, are graded four times, each
in a scratch course folder made from the same release:

1. plain sequential ``nbgrader autograde <assignment>`` (unsandboxed kernels, verdicts from the
   kernel: what nbgrader alone does);
2. this grader on a LocalCluster of 1 worker (SQLite gradebook);
3. this grader on a LocalCluster of --workers workers (SQLite);
4. the same with a PostgreSQL gradebook (a throw-away server, :mod:`staff.grading.postgres`).

Prints notebooks per minute, the ratio against (1), the mean time per submission of each phase
(queueing, kernel start, execution, judging, gradebook write), and whether the scores agree.
"""
from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from nbgrader.api import Gradebook

from staff import course_dir, nbgrader_cli
from staff.authoring import release, samples
from staff.course_dir import CourseDir
from staff.grading import autograde, gradebook, postgres

PHASES = ("queue", "kernel start", "execution", "judge", "gradebook")


def _course(root: Path, chosen: list[samples.Sample], release_from: Path | None, url: str | None = None) -> CourseDir:
    root.mkdir()
    (root / "source").symlink_to(course_dir.SOURCE, target_is_directory=True)
    course = CourseDir(root, url=url)
    if release_from:
        shutil.copytree(release_from, course.release)
    else:
        release.generate(course=course)
    for number, sample in enumerate(chosen):
        samples.submit(sample, course, student=f"s{number:02d}_{sample.student}")
    gradebook.register(course_dir.assignments(), course)
    return course


def _scores(course: CourseDir) -> dict[tuple[str, str], float]:
    with Gradebook(course.db_url) as gb:
        return {(s.student.id, a.name): s.code_score for a in gb.assignments for s in gb.assignment_submissions(a.name)}


def _phases(outcomes) -> dict[str, float]:
    return {p: statistics.mean(o.phases.get(p, 0.0) for o in outcomes if o.phases) for p in PHASES}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--submissions", type=int, default=32)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    args = parser.parse_args(argv)
    by_assignment = [samples.load(a) for a in course_dir.assignments()]
    mixed = [s for group in itertools.zip_longest(*by_assignment) for s in group if s]
    chosen = list(itertools.islice(itertools.cycle(mixed), args.submissions))
    n = len(chosen)
    rows, scores, phases, single = [], {}, {}, []
    with tempfile.TemporaryDirectory() as tmp, postgres.temporary_server("bench") as url:
        first = _course(Path(tmp) / "sequential", chosen, None)
        start = time.perf_counter()
        for assignment in sorted({s.assignment for s in chosen}):
            nbgrader_cli.run("autograde", assignment, "--force", "--log-level=ERROR", course=first,
                             check=False, quiet=True)
        rows.append(("sequential nbgrader autograde", time.perf_counter() - start))
        scores[rows[-1][0]] = _scores(first)
        for label, workers, db in ((f"this grader, 1 worker, SQLite", 1, None),
                                   (f"this grader, {args.workers} workers, SQLite", args.workers, None),
                                   (f"this grader, {args.workers} workers, PostgreSQL", args.workers, url)):
            course = _course(Path(tmp) / f"run{len(rows)}", chosen, first.release, db)
            start = time.perf_counter()
            outcomes = autograde.autograde(course=course, jobs=workers, progress=False)
            rows.append((label, time.perf_counter() - start))
            scores[label], phases[label] = _scores(course), _phases(outcomes)
            single = single or outcomes  # the 1-worker run: per-notebook costs without contention
    print(f"submissions: {n} ({', '.join(f'{a}: {sum(s.assignment == a for s in chosen)}' for a in course_dir.assignments())});"
          f" cores: {os.cpu_count()}")
    base = rows[0][1]
    print(f"{'run':<44} {'wall s':>8} {'notebooks/min':>14} {'vs sequential':>14}")
    for label, seconds in rows:
        print(f"{label:<44} {seconds:8.1f} {60 * n / seconds:14.2f} {base / seconds:13.2f}x")
    print(f"\nmean seconds per submission by phase ({', '.join(PHASES)}):")
    for label, means in phases.items():
        print(f"  {label:<42} " + "  ".join(f"{p} {means[p]:.2f}" for p in PHASES))
    print("\nper notebook on 1 worker (s): prepare here / on the worker (kernel start + execution) / "
          "gradebook write + judge here")
    for assignment in course_dir.assignments():
        mine = [o for o in single if o.assignment == assignment and o.phases]
        if mine:
            mean = {p: statistics.mean(o.phases.get(p, 0.0) for o in mine) for p in ("prepare", "worker", "gradebook", "judge")}
            print(f"  {assignment:<26} {mean['prepare']:6.2f} / {mean['worker']:6.2f} / "
                  f"{mean['gradebook']:5.2f} + {mean['judge']:5.2f}   ({len(mine)} submissions)")
    reference = scores[rows[0][0]]
    same = all(s == reference for s in scores.values())
    print(f"\nidentical scores in all four runs: {'yes' if same else 'NO'}")
    if not same:
        for label, found in scores.items():
            for key in sorted(set(found) | set(reference)):
                if found.get(key) != reference.get(key):
                    print(f"  {label}: {key}: {found.get(key)} vs sequential {reference.get(key)}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
