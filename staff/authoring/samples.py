"""Bundled sample submissions, used by ``make demo`` and the tests.

A sample is a small text file, ``samples/<assignment>/<student>.py``, holding
only what a student would type: answer cells introduced by ``# %% <grade_id>`` lines, and a
header with the score the autograder must give it::

    # expected_score: 9
    # Hard-codes the visible sizes: passes the visible checks, fails the hidden tests.
    # %% softmax
    def softmax(x, axis=-1):
        ...

``# based_on: <sample>`` starts from another sample of the same assignment (in the bundled
samples) and replaces only the cells this file gives, so a variant states just its difference.
``# include: <file>`` puts code several assignments' samples share (``samples/<file>``, e.g. the
tricks of every ``zero_work_tricks`` sample) at the start of the first cell this file gives.

It is turned into a notebook by filling those cells of the *current* released notebook, so
samples never drift from the release and a regenerated release needs no hand edits.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nbformat

from staff import calendar, course_dir
from staff.course_dir import nbgrader
from staff.grading.gradebook import late

#: The sample students' names (id,first_name,last_name,email), imported with the samples.
ROSTER = course_dir.SAMPLES / "roster.csv"

_CELL = re.compile(r"^# %% (\S+)\s*$", re.MULTILINE)
_HEADER = re.compile(r"^# (expected_score|expected_status|based_on|include): (.+)$", re.MULTILINE)


@dataclass
class Sample:
    student: str
    assignment: str
    expected_score: float
    description: str
    cells: dict[str, str] = field(default_factory=dict)
    expected_status: str = "graded"


def parse(path: Path, assignment: str) -> Sample:
    text = path.read_text()
    parts = _CELL.split(text)
    header, bodies = parts[0], parts[1:]
    meta = dict(_HEADER.findall(header))
    if "expected_score" not in meta:
        raise ValueError(f"{path}: the header must say `# expected_score: <points>`")
    description = " ".join(
        line[2:] for line in header.splitlines() if line.startswith("# ") and not _HEADER.match(line)
    ).strip()
    cells = {bodies[i]: bodies[i + 1].strip("\n") for i in range(0, len(bodies), 2)}
    if "include" in meta and cells:
        first = next(iter(cells))
        shared = (course_dir.SAMPLES / meta["include"].strip()).read_text().strip("\n")
        cells[first] = f"{shared}\n\n{cells[first]}".strip("\n")
    if "based_on" in meta:
        base = parse(course_dir.samples_dir(assignment) / f"{meta['based_on'].strip()}.py", assignment)
        cells = {**base.cells, **cells}
    return Sample(
        path.stem,
        assignment,
        float(meta["expected_score"]),
        description,
        cells,
        meta.get("expected_status", "graded").strip(),
    )


def load(assignment: str, folder: Path | None = None) -> list[Sample]:
    folder = folder or course_dir.samples_dir(assignment)
    return [parse(p, assignment) for p in sorted(folder.glob("*.py"))]


def fill(sample: Sample, release_root: Path = course_dir.RELEASE) -> nbformat.NotebookNode:
    """The released notebook with the sample's answers typed into its answer cells."""
    nb = nbformat.read(course_dir.release_notebook(sample.assignment, release_root), as_version=4)
    answer_cells = {nbgrader(c).get("grade_id"): c for c in nb.cells if nbgrader(c).get("solution")}
    unknown = set(sample.cells) - set(answer_cells)
    if unknown:
        raise KeyError(
            f"sample {sample.student} fills unknown answer cells {sorted(unknown)}; "
            f"the notebook's answer cells are {sorted(answer_cells)}"
        )
    for grade_id, source in sample.cells.items():
        answer_cells[grade_id].source = source
    return nb


def submit(sample: Sample, course: course_dir.CourseDir, student: str | None = None) -> Path:
    """Write ``sample`` as ``submitted/<student>/<assignment>/<assignment>.ipynb`` (replacing any),
    received (nbgrader's ``timestamp.txt``) a day before its due date: samples are on time."""
    folder = course.submitted / (student or sample.student) / sample.assignment
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    path = folder / f"{sample.assignment}.ipynb"
    nbformat.write(fill(sample, course.release), path)
    due = calendar.due_dates().get(sample.assignment)
    late.write_timestamp(folder, due - timedelta(days=1) if due else datetime.now(UTC))
    return path


def copy_to_submitted(
    assignments: list[str] | None = None, course: course_dir.CourseDir = course_dir.COURSE
) -> list[Sample]:
    """Write every sample as ``submitted/<student>/<assignment>/<assignment>.ipynb``."""
    written = []
    for assignment in assignments or course_dir.assignments():
        for sample in load(assignment):
            submit(sample, course)
            written.append(sample)
    return written
