"""Benchmark: `make autograde` (parallel, per-submission nbgrader calls) vs plain sequential
`nbgrader autograde <assignment>` on the same submissions, in one run, with identical scores.

    python benchmarks/autograde_parallel.py [--submissions 16] [--jobs N]

Both runs grade the bundled samples of every assignment (repeated under new student ids until
there are --submissions of them) in two scratch course folders, from the same release.

Then the cost of isolation: --overhead-submissions of them graded one at a time, each twice in
the same run: by a plain `nbgrader autograde --student` call (kernel unsandboxed, verdicts from
the kernel), and by `make autograde`'s own path (kernel in the bubblewrap sandbox, then the judge),
with the time per notebook of each and their ratio.
"""
from __future__ import annotations

import argparse
import itertools
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from staff import course_dir, nbgrader_cli
from staff.authoring import release, samples
from staff.course_dir import CourseDir
from staff.grading import autograde, gradebook, report


def _course(root: Path, chosen: list[samples.Sample], release_from: Path | None) -> CourseDir:
    root.mkdir()
    (root / "source").symlink_to(course_dir.SOURCE, target_is_directory=True)
    course = CourseDir(root)
    if release_from:
        shutil.copytree(release_from, course.release)
    else:
        release.generate(course=course)
    for number, sample in enumerate(chosen):
        folder = course.submitted / f"s{number:02d}_{sample.student}" / sample.assignment
        folder.mkdir(parents=True)
        nbformat.write(samples.fill(sample, course.release), folder / f"{sample.assignment}.ipynb")
    return course


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--submissions", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--overhead-submissions", type=int, default=8)
    args = parser.parse_args(argv)
    pool = [s for a in course_dir.assignments() for s in samples.load(a)]
    # Interleave assignments so every run grades a mix, as a real batch does.
    by_assignment = [[s for s in pool if s.assignment == a] for a in course_dir.assignments()]
    mixed = [s for group in itertools.zip_longest(*by_assignment) for s in group if s]
    chosen = list(itertools.islice(itertools.cycle(mixed), args.submissions))
    with tempfile.TemporaryDirectory() as tmp:
        parallel = _course(Path(tmp) / "parallel", chosen, None)
        sequential = _course(Path(tmp) / "sequential", chosen, parallel.release)
        gradebook.register(course_dir.assignments(), sequential)

        start = time.perf_counter()
        autograde.autograde(course=parallel, jobs=args.jobs, progress=False)
        parallel_s = time.perf_counter() - start

        start = time.perf_counter()
        for assignment in sorted({s.assignment for s in chosen}):
            nbgrader_cli.run("autograde", assignment, "--force", "--log-level=ERROR", course=sequential,
                             check=False, quiet=True)
        sequential_s = time.perf_counter() - start

        scores = [{(r.student, r.assignment): r.auto_score for r in report.rows(course=c)}
                  for c in (parallel, sequential)]
        overhead = _overhead(Path(tmp) / "overhead", chosen[:args.overhead_submissions], parallel.release)
    n = len(chosen)
    print(f"submissions: {n} ({', '.join(sorted({s.assignment for s in chosen}))}); jobs: {args.jobs}; "
          f"cores: {os.cpu_count()}")
    print(f"sequential nbgrader autograde: {sequential_s:7.1f} s  ({n / sequential_s:.3f} submissions/s)")
    print(f"make autograde (parallel):     {parallel_s:7.1f} s  ({n / parallel_s:.3f} submissions/s)")
    print(f"throughput ratio: {sequential_s / parallel_s:.2f}x")
    same = scores[0] == scores[1]
    print(f"identical scores: {'yes' if same else 'NO'}")
    if not same:
        for key in sorted(set(scores[0]) | set(scores[1])):
            if scores[0].get(key) != scores[1].get(key):
                print(f"  {key}: parallel {scores[0].get(key)} vs sequential {scores[1].get(key)}")
    plain, isolated = (sum(t.values()) / len(t) for t in overhead)
    print(f"per notebook, one at a time ({len(overhead[0])} submissions): plain nbgrader {plain:.1f} s, "
          f"sandbox + judge {isolated:.1f} s: overhead {100 * (isolated / plain - 1):+.1f} %")
    for assignment in sorted({a for _, a in overhead[0]}):
        p, i = ([t[k] for k in t if k[1] == assignment] for t in overhead)
        print(f"  {assignment:<26} plain {sum(p) / len(p):6.1f} s   sandbox + judge {sum(i) / len(i):6.1f} s")
    return 0 if same else 1


def _overhead(root: Path, chosen: list[samples.Sample], release_from: Path) -> tuple[dict, dict]:
    """Seconds per submission: plain nbgrader, then the sandboxed and judged path, same submissions."""
    course = _course(root, chosen, release_from)
    gradebook.register(course_dir.assignments(), course)
    plain, isolated = {}, {}
    todo = autograde.submissions(course, sorted({s.assignment for s in chosen}))
    batch = autograde.Batch.prepare(sorted({a for _, a in todo}))
    for student, assignment in todo:
        start = time.perf_counter()
        nbgrader_cli.run("autograde", assignment, f"--student={student}", "--force", "--log-level=ERROR",
                         course=course, check=False, quiet=True)
        plain[(student, assignment)] = time.perf_counter() - start
        start = time.perf_counter()
        autograde.grade_one(course, student, assignment, autograde.Limits(), os.cpu_count() or 1, batch)
        isolated[(student, assignment)] = time.perf_counter() - start
    batch.close()
    return plain, isolated


if __name__ == "__main__":
    sys.exit(main())
