"""Benchmark: `make autograde` (a Dask cluster of sandboxed kernels, judged outside) against plain
sequential `nbgrader autograde`, on the same submissions, in one run, every sample's expected score required.

    python benchmarks/autograde_parallel.py [--submissions 32] [--workers 2]

The bundled samples of every assignment, repeated under new student ids until there are
--submissions of them, interleaved by assignment as a real batch is, are graded four times, each
in a scratch course folder made from the same release:

1. plain sequential ``nbgrader autograde <assignment>`` (unsandboxed kernels, verdicts from the
   kernel: what nbgrader alone does);
2. this grader on a LocalCluster of 1 worker (SQLite gradebook);
3. this grader on a LocalCluster of --workers workers (SQLite);
4. the same with a PostgreSQL gradebook (a throw-away server, :mod:`postgres_server` beside this file).

Prints notebooks per minute, the ratio against (1), the mean time per submission of each phase
(queueing, kernel start, execution, judging, gradebook write), each notebook's cost on a worker and
the one writer's cost per submission here, the canary's share of a 300-submission batch (from the
measured costs), a single regrade of one submission per assignment against that notebook's time in
the batch, whether the scores agree, and what those measured costs project for 1,000 students x 5
notebooks on larger clusters (docs/scaling.md explains the model).
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

import nbformat
import postgres_server as postgres
from nbgrader.api import Gradebook

from staff import course_dir, nbgrader_cli
from staff.authoring import release, samples
from staff.course_dir import CourseDir
from staff.grading import autograde, regrade
from staff.grading.execution import skipping
from staff.grading.gradebook import admin

PHASES = ("queue", "kernel start", "execution", "judge", "gradebook")
GOAL = 2.0  # times plain sequential nbgrader, on 2 cores (issue 28)
CANARY_GOAL = 0.05  # of the workers' time in a batch of 300 submissions (issue 40)
REGRADE_GOAL = 1.5  # a single regrade's wall time, times that notebook's own in a batch (issue 40)
WRITER = ("prepare", "gradebook", "judge")  # what the one writer does here per submission, in series


def _course(
    root: Path, chosen: list[samples.Sample], release_from: Path | None, url: str | None = None
) -> CourseDir:
    root.mkdir()
    (root / "source").symlink_to(course_dir.SOURCE, target_is_directory=True)
    course = CourseDir(root, url=url)
    if release_from:
        shutil.copytree(release_from, course.release)
    else:
        release.generate(course=course)
    for number, sample in enumerate(chosen):
        samples.submit(sample, course, student=f"s{number:02d}_{sample.student}")
    admin.register(course_dir.assignments(), course)
    return course


def _scores(course: CourseDir) -> dict[tuple[str, str], float]:
    with Gradebook(course.db_url) as gb:
        return {
            (s.student.id, a.name): s.code_score
            for a in gb.assignments
            for s in gb.assignment_submissions(a.name)
        }


def _mean(outcomes, phase: str) -> float:
    return statistics.mean(o.phases.get(phase, 0.0) for o in outcomes if o.phases)


def _project(outcomes, workers: int, students: int = 1000, notebooks: int = 5) -> None:
    """Wall time for ``students`` x ``notebooks`` from the measured costs of one run: the workers
    share the execution (each kernel with one core, as in that run), while the one writer does every
    submission's prepare, gradebook write and judge in series; it bounds the batch from below."""
    cost, writer = _mean(outcomes, "worker"), sum(_mean(outcomes, p) for p in WRITER)
    total = students * notebooks
    print(
        f"\nprojection for {students} students x {notebooks} notebooks from the last run ({workers} workers, "
        f"PostgreSQL): {cost:.1f} s per notebook on a worker, {writer:.2f} s per submission for the writer"
    )
    for n in (8, 32, 128):
        print(
            f"  {n:>4} workers: {max(total * cost / n, total * writer) / 60:6.0f} min "
            f"({'writer-bound' if total * writer > total * cost / n else 'worker-bound'})"
        )
    print(
        f"  the single writer saturates at about {cost / writer:.0f} workers ({total * writer / 60:.0f} min)"
    )


def _same(found: float | None, expected: float) -> bool:
    """Scores as the gradebook sums them (partial credit in floats), equal to 1e-6."""
    return found is not None and abs(found - expected) <= 1e-6


def _ceiling(alone, together, workers: int) -> dict[str, float]:
    """What ``workers`` kernels at once can gain over one at a time, from the notebooks' own costs:
    ``alone`` is a 1-worker run (each kernel has every core, as sequential nbgrader's has),
    ``together`` a ``workers``-worker run (each kernel its share of the cores). Per assignment,
    workers x (its mean cost alone) / (its mean cost together); "all" weighs them by how many of
    its notebooks the batch has. No canary, writer or last-notebook tail in it: a notebook that
    already keeps every core busy on its own (training) gains little from company, whatever the
    grader does around it."""
    ratios, alone_sum, together_sum = {}, 0.0, 0.0
    for assignment in sorted({o.assignment for o in alone if o.phases}):
        one = [o.phases["worker"] for o in alone if o.assignment == assignment and o.phases]
        many = [o.phases["worker"] for o in together if o.assignment == assignment and o.phases]
        if one and many:
            ratios[assignment] = workers * statistics.mean(one) / statistics.mean(many)
            alone_sum += statistics.mean(one) * len(many)
            together_sum += statistics.mean(many) * len(many)
    if together_sum:
        ratios["all"] = workers * alone_sum / together_sum
    return ratios


def _canary_share(outcomes, submissions: int = 300) -> dict[str, float]:
    """The canary's share of the workers' time in a batch of ``submissions`` with this run's mix of
    assignments ("mix"), and in one of ``submissions`` of each assignment alone: it grades each
    solution once, beside the students, so it costs one notebook per assignment at that assignment's
    measured mean (a solution costs what a full-marks submission does)."""
    cost = {
        a: statistics.mean(o.phases["worker"] for o in outcomes if o.assignment == a and o.phases)
        for a in sorted({o.assignment for o in outcomes if o.phases})
    }
    if not cost:
        return {}
    counts = {a: sum(o.assignment == a for o in outcomes if o.phases) for a in cost}
    students = submissions * sum(counts[a] * cost[a] for a in cost) / sum(counts.values())
    share = {"mix": sum(cost.values()) / (sum(cost.values()) + students)}
    return share | {a: 1 / (1 + submissions) for a in cost}


def _regrades(course: CourseDir, outcomes) -> list[tuple[str, str, float, float]]:
    """A single regrade (``make autograde STUDENT=... ASSIGNMENT=...``, the formgrader's button: a
    cluster, the canary beside it, the writer) of one graded submission per assignment:
    (assignment, student, its wall time, the same notebook's seconds in the batch just graded)."""
    found = []
    for assignment in sorted({o.assignment for o in outcomes}):
        graded = [o for o in outcomes if o.assignment == assignment and o.status == "graded" and o.phases]
        if not graded:
            continue
        first = graded[0]
        start = time.perf_counter()
        regrade.regrade(course, [first.student], [assignment], reason="benchmark", progress=False)
        found.append((assignment, first.student, time.perf_counter() - start, first.seconds))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--submissions", type=int, default=32)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    args = parser.parse_args(argv)
    by_assignment = [samples.load(a) for a in course_dir.assignments()]
    mixed = [s for group in itertools.zip_longest(*by_assignment) for s in group if s]
    chosen = list(itertools.islice(itertools.cycle(mixed), args.submissions))
    n = len(chosen)
    rows, scores, runs = [], {}, {}
    with tempfile.TemporaryDirectory() as tmp, postgres.temporary_server("bench") as url:
        first = _course(Path(tmp) / "sequential", chosen, None)
        start = time.perf_counter()
        for assignment in sorted({s.assignment for s in chosen}):
            nbgrader_cli.run(
                "autograde", assignment, "--force", "--log-level=ERROR", course=first, check=False, quiet=True
            )
        rows.append(("sequential nbgrader autograde", time.perf_counter() - start))
        scores[rows[-1][0]] = _scores(first)
        for label, workers, db in (
            ("this grader, 1 worker, SQLite", 1, None),
            (f"this grader, {args.workers} workers, SQLite", args.workers, None),
            (f"this grader, {args.workers} workers, PostgreSQL", args.workers, url),
        ):
            course = _course(Path(tmp) / f"run{len(rows)}", chosen, first.release, db)
            start = time.perf_counter()
            outcomes = autograde.autograde(course=course, jobs=workers, progress=False)
            rows.append((label, time.perf_counter() - start))
            scores[label], runs[label] = _scores(course), outcomes
        regraded = _regrades(course, outcomes)  # the last run's course, before its server goes
    print(
        f"submissions: {n} ({', '.join(f'{a}: {sum(s.assignment == a for s in chosen)}' for a in course_dir.assignments())});"
        f" cores: {os.cpu_count()}"
    )
    base = rows[0][1]
    print(
        f"{'run':<44} {'wall s':>8} {'notebooks/min':>14} {'vs sequential':>14}  (goal >= {GOAL:.1f}x on 2 cores)"
    )
    for label, seconds in rows:
        print(
            f"{label:<44} {seconds:8.1f} {60 * n / seconds:14.2f} {base / seconds:13.2f}x"
            + ("" if label == rows[0][0] else f"  {'met' if base / seconds >= GOAL else 'not met'}")
        )
    print(f"\nmean seconds per submission by phase ({', '.join(PHASES)}):")
    for label, found in runs.items():
        print(f"  {label:<42} " + "  ".join(f"{p} {_mean(found, p):.2f}" for p in PHASES))
    print(
        "\nper notebook (mean s): on a worker (kernel start + execution) | here, in series (prepare + "
        "gradebook write + judge); given cells left out of every graded run (skip_when_grading; "
        "nbgrader alone runs them)"
    )
    left_out = {
        a: skipping.declared(nbformat.read(course_dir.source_notebook(a), as_version=4))
        for a in course_dir.assignments()
    }
    for label, found in runs.items():
        print(f"  {label}")
        for assignment in course_dir.assignments():
            mine = [o for o in found if o.assignment == assignment and o.phases]
            if mine:
                print(
                    f"    {assignment:<26} {_mean(mine, 'worker'):6.2f} | {sum(_mean(mine, p) for p in WRITER):5.2f}"
                    f"   ({len(mine)} submissions; {len(left_out[assignment])} cells left out)"
                )
    ceiling = _ceiling(runs[rows[1][0]], runs[rows[2][0]], args.workers)
    print(
        f"\nceiling of {args.workers} kernels at once over one at a time, from these notebooks' costs alone "
        f"(no canary, writer or tail): " + ", ".join(f"{a} {r:.2f}x" for a, r in ceiling.items())
    )
    share = _canary_share(runs[rows[-1][0]])
    print(
        f"\nthe canary's share of the workers' time in a batch of 300 (goal <= {CANARY_GOAL:.0%}): "
        f"{share['mix']:.1%} in this run's mix of assignments, "
        f"{max(v for k, v in share.items() if k != 'mix'):.1%} in a batch of one assignment"
    )
    print(
        f"a single regrade against the same notebook in the batch (goal <= {REGRADE_GOAL:.1f}x): "
        + ", ".join(
            f"{a} {wall:.1f} s / {batch:.1f} s = {wall / batch:.2f}x" for a, _, wall, batch in regraded
        )
    )
    _project(runs[rows[-1][0]], args.workers)
    # nbgrader alone takes each test cell's pass/fail from the kernel (and pays a tampering
    # notebook); this grader pays partial credit from the judge: its runs must agree with each other
    # and give every sample its expected score, and where they differ from nbgrader's is printed.
    expected = {
        (f"s{number:02d}_{sample.student}", sample.assignment): sample.expected_score
        for number, sample in enumerate(chosen)
    }
    wrong = [
        (label, key, found.get(key), want)
        for label, found in scores.items()
        if label != rows[0][0]
        for key, want in sorted(expected.items())
        if not _same(found.get(key), want)
    ]
    same = not wrong
    print(f"\nevery sample's expected score in all three runs of this grader: {'yes' if same else 'NO'}")
    for label, key, found, want in wrong:
        print(f"  {label}: {key}: {found} (expected {want})")
    differ = sorted(k for k in expected if not _same(scores[rows[0][0]].get(k), expected[k]))
    print(
        f"sequential nbgrader's own scores differ on {len(differ)} of {n} (no partial credit, the kernel's "
        f"verdicts): " + ", ".join(f"{k[0]} {scores[rows[0][0]].get(k)} vs {expected[k]}" for k in differ)
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
