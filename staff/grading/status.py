"""One status and a one-line reason per graded submission, kept in ``autograded/status.json``.

nbgrader records points, not what went wrong; an instructor needs both. :mod:`autograde` writes
an :class:`Outcome` per submission, :mod:`export` puts the status into ``grades.csv`` and
:mod:`report` lists every submission whose status needs a human.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

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
    digest: str = ""                                        # what was graded (autograde skips it unchanged)
    phases: dict[str, float] = field(default_factory=dict)  # seconds: kernel start, execution, judge, ...
    worker: str = ""                                        # the Dask worker that ran it


def status_file(course: CourseDir) -> Path:
    return course.autograded / "status.json"


def load_status(course: CourseDir) -> dict[tuple[str, str], dict]:
    path = status_file(course)
    if not path.exists():
        return {}
    return {(o["student"], o["assignment"]): o for o in json.loads(path.read_text())}


def save_status(course: CourseDir, outcomes: list[Outcome]) -> None:
    """Merge ``outcomes`` into the status file (other submissions keep theirs)."""
    merged = load_status(course)
    merged.update({(o.student, o.assignment): asdict(o) for o in outcomes})
    path = status_file(course)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_suffix(".json.tmp")  # replaced whole: a crash mid-write keeps the last one
    staging.write_text(json.dumps(sorted(merged.values(), key=lambda o: (o["assignment"], o["student"])),
                                  indent=1) + "\n")
    staging.replace(path)


def summary(outcomes: list[Outcome]) -> str:
    lines = [f"{'assignment':<26} {'student':<22} {'status':<17} {'time':>6}  reason", "-" * 100]
    lines += [f"{o.assignment:<26} {o.student:<22} {o.status:<17} {o.seconds:>5.0f}s  {o.reason[:110]}"
              for o in outcomes]
    return "\n".join(lines)
