"""One status and a one-line reason per graded submission, kept in ``autograded/status.jsonl``.

nbgrader records points, not what went wrong; an instructor needs both. :mod:`autograde` writes
an :class:`Outcome` per submission, :mod:`export` puts the status into ``grades.csv`` and
:mod:`report` lists every submission whose status needs a human. A reason is one printable line,
whatever a notebook or an error put into it (:func:`printable`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from staff import text_table
from staff.course_dir import CourseDir

STATUSES = (
    "graded",
    "repaired",
    "flagged",
    "timeout",
    "kernel died",
    "disk quota",
    "invalid notebook",
    "grader error",
)
#: Submissions nobody could grade: no points were computed (``invalid notebook``: nbformat or
#: nbgrader cannot take it; ``grader error``: a step of the grader failed on it, the reason names
#: the step). The rest of the batch is graded all the same; ``make autograde`` exits 1 and counts them.
NOT_GRADED = ("invalid notebook", "grader error")


def printable(text: str) -> str:
    """``text`` on one line as a terminal shows it: line breaks as spaces, every other character
    that is not printable (control characters, terminal escapes, lone surrogates, bidirectional
    overrides) as its escape (``\\x1b``)."""
    flat = " ".join(line.strip() for line in str(text).splitlines() if line.strip())
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in flat)


def first_line(error: BaseException | str, limit: int = 200) -> str:
    """An error as a reason's one line: its type (for an exception) and the first non-empty line
    of its message, printable, at most ``limit`` characters (never a traceback)."""
    try:
        text = str(error).strip()
    except Exception:  # a message that cannot be written: nbformat's error pretty-prints the notebook, which recurses when deep
        text = ""
    line = printable(text.splitlines()[0]) if text else ""
    if isinstance(error, BaseException):
        line = f"{type(error).__name__}: {line}" if line else type(error).__name__
    return line if len(line) <= limit else line[: limit - 1] + "…"


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

    def __post_init__(self) -> None:
        self.reason = printable(self.reason)  # one line, whatever a grade id or an error held


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


def not_graded(outcomes: list[Outcome]) -> str:
    """One line counting the submissions nobody could grade (:data:`NOT_GRADED`), '' when none."""
    counts = {s: sum(1 for o in outcomes if o.status == s) for s in NOT_GRADED}
    total = sum(counts.values())
    if not total:
        return ""
    kinds = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    return (
        f"{total} of {len(outcomes)} submission(s) could not be graded ({kinds}); "
        f"the other {len(outcomes) - total} are graded and saved"
    )


def cut(text: str, limit: int) -> str:
    """``text`` at most ``limit`` characters, cut at a word's end with "…" (never mid-word)."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    return (head.rsplit(" ", 1)[0] if " " in head else head).rstrip(" ,;:") + "…"


def summary(outcomes: list[Outcome]) -> str:
    """One line counting each status, then the submissions that are not plainly graded, each with
    its reason (the score table of every student is ``make report``'s)."""
    counts = {s: sum(o.status == s for o in outcomes) for s in STATUSES}
    line = f"autograde: {len(outcomes)} submission(s): " + ", ".join(
        f"{n} {s}" for s, n in counts.items() if n
    )
    look = [o for o in outcomes if o.status != "graded"]
    if not look:
        return line
    return f"{line}; to look at:\n" + text_table.render(
        ["assignment", "student", "status", "time", "reason"],
        [[o.assignment, o.student, o.status, f"{o.seconds:.0f}s", cut(o.reason, 110)] for o in look],
        right=frozenset({3}),
        last_free=True,
    )
