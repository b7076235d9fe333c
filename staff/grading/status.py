"""One status and a one-line reason per graded submission, kept in ``autograded/status.jsonl``.

nbgrader records points, not what went wrong; an instructor needs both. :mod:`autograde` writes
an :class:`Outcome` per submission, :mod:`export` puts the status into ``grades.csv`` and
:mod:`report` lists every submission whose status needs a human.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from staff import text_table
from staff.course_dir import CourseDir

STATUSES = ("graded", "repaired", "flagged", "timeout", "kernel died", "disk quota", "invalid notebook")


@dataclass
class Outcome:
    student: str
    assignment: str
    status: str
    reason: str
    seconds: float
    flags: list[str] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    digest: str = ""  # what was graded (autograde skips it unchanged)
    phases: dict[str, float] = field(default_factory=dict)  # seconds: kernel start, execution, judge, ...
    worker: str = ""  # the Dask worker that ran it


def status_file(course: CourseDir) -> Path:
    return course.autograded / "status.jsonl"


def load_status(course: CourseDir) -> dict[tuple[str, str], dict]:
    """The latest outcome of each submission: the file is a log, one JSON line per grading, appended
    (the last line of a submission wins; a line cut short by a crash is skipped). ``status.json``,
    the whole-file format of earlier versions, is read first if present."""
    found: dict[tuple[str, str], dict] = {}
    legacy = course.autograded / "status.json"
    if legacy.is_file():
        found.update({(o["student"], o["assignment"]): o for o in json.loads(legacy.read_text())})
    path = status_file(course)
    if path.is_file():
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                try:
                    outcome = json.loads(line)
                    found[(outcome["student"], outcome["assignment"])] = outcome
                except (ValueError, KeyError, TypeError):
                    continue
    return found


def save_status(course: CourseDir, outcomes: list[Outcome]) -> None:
    """Append ``outcomes`` to the status log: one short write per submission, whatever the size of
    the class (rewriting the whole file cost O(submissions) per submission)."""
    path = status_file(course)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(asdict(o), sort_keys=True) + "\n" for o in outcomes).encode()
    with path.open("ab+") as log:  # appends go to the end wherever it has read
        end = log.seek(0, 2)
        if end:
            log.seek(end - 1)
            if log.read(1) != b"\n":  # the last line was cut short (a killed grader): start a new one
                lines = b"\n" + lines
        log.write(lines)


def summary(outcomes: list[Outcome]) -> str:
    return text_table.render(
        ["assignment", "student", "status", "time", "reason"],
        [[o.assignment, o.student, o.status, f"{o.seconds:.0f}s", o.reason[:110]] for o in outcomes],
        right=frozenset({3}),
        last_free=True,
    )
