"""Benchmark: the one writer at MOOC scale. 1,000 students x 5 assignments of synthetic results
through the real writer (read, repair, scan, nbgrader's sanitizing, the judge, nbgrader's save into
a real PostgreSQL 15 gradebook, the status log), no kernels.

    python benchmarks/scale.py [--students 1000] [--sqlite] [--formgrader]

Each submission is the instructor's solution as a student would hand it in; the worker's result
that comes back is made up here: the sanitized notebook with outputs of realistic size (a line of
text under every code cell, a 40 kB PNG under every cell that draws) and one record per check the
test cells make, from the trusted fixtures, a seeded share of them wrong (so the judge pays partial
credit and some cells nothing). Prints the writer's cost per submission by phase, the SQL
statements per submission, the wall time for all of them against the goal, W* (the number of
workers one writer keeps busy) and the projected wall time of a 1,000 x 5 class on 32, 128 and 512
workers for the per-notebook costs ``make bench-autograde`` measured; with --formgrader, the load
time of every formgrader page on the result (benchmarks/formgrader_scale.py).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import io
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import postgres_server as postgres

from course import settings  # noqa: E402
from staff import course_dir  # noqa: E402
from staff.course_dir import CourseDir, nbgrader  # noqa: E402
from staff.grading import autograde, canary  # noqa: E402
from staff.grading.execution import worker
from staff.grading.execution.records import Record  # noqa: E402
from staff.grading.gradebook import admin, session
from staff.grading.judging import judge

GOAL_PER_SUBMISSION, GOAL_TOTAL = 0.1, 600.0  # seconds (issue 28)
#: Seconds per notebook on a worker slot, measured by `make bench-autograde` (docs/scaling.md):
#: with a core of its own (lower bound) and on a saturated 2-core machine (upper bound).
NOTEBOOK_SECONDS = (13.8, 25.5)
VOCAB = 96  # assignment 5's characters: a perplexity record holds log-probabilities over them


def _png(kilobytes: int = 40) -> str:
    """A PNG of about ``kilobytes`` (noise compresses badly, as plots with text and colour maps do)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(4, 3), dpi=80)
    axes.imshow(np.random.default_rng(0).random((int(kilobytes * 1.6), 60)), aspect="auto")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode()


def executed(sent: str, png: str) -> nbformat.NotebookNode:
    """The notebook a worker would send back: every code cell run, figures where the cell draws."""
    nb = nbformat.reads(sent, as_version=4)
    for count, cell in enumerate((c for c in nb.cells if c.cell_type == "code"), start=1):
        cell.execution_count = count
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"cell {count} ran\n")]
        if "plt." in cell.source or "show(" in cell.source or "heatmap" in cell.source:
            cell.outputs.append(
                nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"})
            )
    return nb


def records(
    specs: dict[str, list[dict]], fixtures: judge.Fixtures, wrong: float, rng
) -> dict[str, list[Record]]:
    """One record per check of every test cell, as a kernel writes them; ``wrong`` of them off."""
    out = {}
    for grade_id, cell in specs.items():
        made = []
        for spec in cell:
            tolerance = {k: spec[k] for k in ("atol", "rtol", "limit", "minimum", "weight") if k in spec}
            expected = None
            if spec["ref"]:
                got = np.array(fixtures.value(spec["ref"], spec["index"]))
            elif spec["kind"] == "rows":
                got = np.full((2, 4), 0.25, dtype=np.float32)
            else:  # a condition: the judge compares it with the instructor's value, not the record's own
                got = expected = np.asarray(spec["expected"], dtype=spec["expected_dtype"])
            if spec["kind"] == "progress":  # where training starts and ends: the trained end
                got = got[1]
            elif spec["kind"] == "best_accuracy":  # two alternatives, the second right
                got = np.stack([(got + 1) % max(2, int(got.max()) + 1), got])
            if spec["kind"] == "perplexity":  # log-probabilities that put 0.8 on each true next character
                probs = np.full((*got.shape, VOCAB), 0.2 / (VOCAB - 1), dtype=np.float32)
                np.put_along_axis(probs, got[..., None].astype(np.int64), 0.8, axis=-1)
                got = np.log(probs)
            if rng.random() < wrong and got.dtype.kind in "fiu" and spec["ref"]:
                got = got + 1 if spec["kind"] != "accuracy" else (got + 1) % max(2, int(got.max()) + 1)
            made.append(
                Record(spec["kind"], spec["label"], spec["ref"], spec["index"], tolerance, got, expected)
            )
        out[grade_id] = made
    return out


class Statements:
    """SQL statements sent to the gradebook's server (SQLAlchemy's cursor events), while open."""

    def __init__(self):
        self.count = 0

    def _seen(self, *args) -> None:
        self.count += 1

    def __enter__(self):
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        event.listen(Engine, "before_cursor_execute", self._seen)
        return self

    def __exit__(self, *exc):
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        event.remove(Engine, "before_cursor_execute", self._seen)


def course(root: Path, students: int, url: str | None) -> CourseDir:
    """A scratch course: the committed release, the assignments registered, every submission in
    (each answer cell the student's own text, as the writer's scan of student code sees it)."""
    root.mkdir(parents=True)
    (root / "source").symlink_to(course_dir.SOURCE, target_is_directory=True)
    made = CourseDir(root, url=url)
    shutil.copytree(course_dir.RELEASE, made.release)
    admin.register(course_dir.assignments(), made)
    for assignment in course_dir.assignments():
        solution = nbformat.reads(canary.notebook(assignment), as_version=4)
        answers = [c for c in solution.cells if c.cell_type == "code" and nbgrader(c).get("solution")]
        for number in range(students):
            student = f"student{number:04d}"
            for cell in answers:
                cell.source = cell.source.rsplit("\n# written by ", 1)[0] + f"\n# written by {student}"
            path = made.submitted / student / assignment / f"{assignment}.ipynb"
            path.parent.mkdir(parents=True)
            nbformat.write(solution, path)
    return made


def write_all(
    made: CourseDir, students: int, wrong: float = 0.15, seed: int = 0, progress: bool = True
) -> dict:
    """Every submission through the one writer, as ``autograde`` writes them; returns the costs."""
    batch = autograde.Batch(course_dir.assignments())
    limits, rng, png = autograde.Limits(), np.random.default_rng(seed), _png()
    phases: dict[str, list[float]] = {"prepare": [], "judge": [], "gradebook": [], "status": []}
    outcomes, wall, start = [], 0.0, time.perf_counter()
    try:
        with session.one_session(made.db_url), Statements() as statements:
            for number in range(students):  # interleaved by assignment, as a class hands them in
                for assignment in course_dir.assignments():
                    student = f"student{number:04d}"
                    mark = time.perf_counter()
                    item = autograde.ready(made, student, assignment, limits, batch)
                    wall += time.perf_counter() - mark
                    result = worker.Result(
                        nbformat.writes(executed(item.job.notebook, png)),  # the worker's part:
                        records(
                            batch.checks[assignment],
                            batch.fixtures,  # not timed
                            wrong if number else 0.0,
                            rng,
                        ),
                        phases={"worker": 0.0},
                    )
                    mark = time.perf_counter()
                    outcome = autograde.finish(made, item, batch, result)
                    status = time.perf_counter()
                    autograde.save_status(made, [outcome])
                    wall += time.perf_counter() - mark
                    outcomes.append(outcome)
                    phases["status"].append(time.perf_counter() - status)
                    for phase in ("prepare", "judge", "gradebook"):
                        phases[phase].append(outcome.phases[phase])
                if progress and (number + 1) % max(1, students // 10) == 0:
                    print(
                        f"  {len(outcomes)} submissions written, {time.perf_counter() - start:.0f} s "
                        f"({wall:.0f} s of it the writer's)",
                        flush=True,
                    )
    finally:
        batch.close()
    return {
        "wall": wall,
        "n": len(outcomes),
        "phases": phases,
        "statements": statements.count,
        "statuses": sorted({o.status for o in outcomes}),
    }


def report(found: dict) -> None:
    n, wall = found["n"], found["wall"]
    per = wall / n
    print(
        f"\nwriter: {n} submissions in {wall:.1f} s of the writer's time = {per:.3f} s per submission "
        f"(goal <= {GOAL_PER_SUBMISSION} s: {'met' if per <= GOAL_PER_SUBMISSION else 'NOT met'}); "
        f"statuses {found['statuses']}"
    )
    print(f"  {found['statements'] / n:.1f} SQL statements per submission")
    for phase, values in found["phases"].items():
        print(f"  {phase:<10} mean {statistics.mean(values):.4f} s  p95 {np.percentile(values, 95):.4f} s")
    total = per * 5000
    print(
        f"5,000 submissions' results: {total / 60:.1f} min at this rate (goal <= {GOAL_TOTAL / 60:.0f} min: "
        f"{'met' if total <= GOAL_TOTAL else 'NOT met'})"
    )
    print("\nprojection for 1,000 students x 5 notebooks (wall ~ max(N c / W, N w); W* = c / w):")
    for c in NOTEBOOK_SECONDS:
        print(f"  c = {c} s per notebook on a worker slot: W* = {c / per:.0f} workers")
        for workers in (32, 128, 512):
            bound = "writer-bound" if 5000 * per > 5000 * c / workers else "worker-bound"
            print(f"    {workers:>4} workers: {max(5000 * c / workers, 5000 * per) / 60:6.1f} min ({bound})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=1000)
    parser.add_argument("--sqlite", action="store_true", help="a SQLite gradebook instead of PostgreSQL 15")
    parser.add_argument(
        "--formgrader", action="store_true", help="then time every formgrader page on the result"
    )
    args = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp,
        contextlib.nullcontext(None) if args.sqlite else postgres.temporary_server("scale") as url,
    ):
        start = time.perf_counter()
        made = course(Path(tmp) / "course", args.students, url)
        print(
            f"{args.students} students x {len(course_dir.assignments())} assignments, "
            f"{'SQLite' if args.sqlite else 'PostgreSQL 15'}; course set up in {time.perf_counter() - start:.0f} s; "
            f"fixtures {settings.current().fixtures}"
        )
        found = write_all(made, args.students)
        report(found)
        if args.formgrader:
            sys.path.insert(0, str(Path(__file__).parent))
            from formgrader_scale import measure, table

            print("\nthe formgrader on this gradebook (every page a TA opens, in Chromium):")
            print("\n".join(table(measure(made), None)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
