"""A TA's decision on a flagged submission, which until then is held: no points shown or exported.

The integrity scan flags what it cannot prove (``status.jsonl``: status ``flagged``, the flags); a
flag is a question for a person, so the grade waits for one. A submission is **held** while its
last grading is flagged and no decision is recorded for what that grading graded (its digest: a
new submission, or one graded under other limits, is a new question). A TA decides in the
formgrader (:mod:`staff.grading.review.flag_review`), once per submission:

- **accept**: the flags were honest work; the points stand as graded;
- **zero**: one or more exercises' automatic points are set to 0 (nbgrader's ``manual_score`` on
  each of the exercise's test cells, which a regrade keeps, as it keeps every manual grade), with
  the TA's comment on the exercise's answer cells, which the student's feedback shows.

Decisions live in the gradebook's database (table :data:`TABLE`, beside nbgrader's tables, in
SQLite or PostgreSQL) and each is also a line of the regrade log (``make report`` lists both).
Feedback (:class:`staff.grading.results.feedback.HoldFlagged`) and ``make export`` read
:func:`held` and :func:`decision`.
"""

from __future__ import annotations

import getpass
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from sqlalchemy import Column, Integer, MetaData, String, Table, Text, create_engine, select

from staff import course_dir
from staff.course_dir import CourseDir, exercise_titles, nbgrader
from staff.grading.status import load_status

DECISIONS = ("accept", "zero")
#: The course's own table in the gradebook's database (nbgrader's metadata is left alone).
TABLE = Table(
    "course_flag_decision",
    MetaData(),
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("student", String(128), nullable=False, index=True),
    Column("assignment", String(128), nullable=False),
    Column("digest", String(128), nullable=False),
    Column("decision", String(16), nullable=False),
    Column("exercises", Text, nullable=False),  # JSON list of exercise titles set to 0
    Column("comment", Text, nullable=False),
    Column("who", String(128), nullable=False),
    Column("decided_at", String(32), nullable=False),
)


class DecisionError(ValueError):
    """A decision that cannot be taken (nothing flagged, unknown exercise, no comment): what to do."""


@dataclass(frozen=True)
class Decision:
    student: str
    assignment: str
    digest: str
    decision: str  # "accept" or "zero"
    exercises: tuple[str, ...]
    comment: str
    who: str
    decided_at: str

    def summary(self) -> str:
        """One line for a report, an export's reason or a feedback page."""
        if self.decision == "accept":
            return f"flags reviewed by {self.who} on {self.decided_at}: points stand"
        return f"flags reviewed by {self.who} on {self.decided_at}: {', '.join(self.exercises)} set to 0"


def _engine(course: CourseDir):
    engine = create_engine(course.db_url)
    TABLE.create(engine, checkfirst=True)
    return engine


def _decisions(course: CourseDir) -> dict[tuple[str, str, str], Decision]:
    """The latest decision per (student, assignment, digest)."""
    found = {}
    engine = _engine(course)
    try:
        with engine.connect() as connection:
            for row in connection.execute(select(TABLE).order_by(TABLE.c.id)):
                found[(row.student, row.assignment, row.digest)] = Decision(
                    row.student,
                    row.assignment,
                    row.digest,
                    row.decision,
                    tuple(json.loads(row.exercises)),
                    row.comment,
                    row.who,
                    row.decided_at,
                )
    finally:
        engine.dispose()
    return found


def current(course: CourseDir) -> dict[tuple[str, str], Decision]:
    """``{(student, assignment): the decision on its last grading}``, for flagged submissions a TA decided on."""
    decided = _decisions(course)
    found = {}
    for key, outcome in load_status(course).items():
        made = decided.get((*key, outcome.get("digest", "")))
        if outcome.get("status") == "flagged" and made:
            found[key] = made
    return found


def decision(course: CourseDir, student: str, assignment: str) -> Decision | None:
    """The decision on the submission's last grading, if it was flagged and a TA decided."""
    return current(course).get((student, assignment))


def held(course: CourseDir) -> set[tuple[str, str]]:
    """``(student, assignment)`` of every flagged submission no TA has decided on yet."""
    decided = current(course)
    return {
        key
        for key, outcome in load_status(course).items()
        if outcome.get("status") == "flagged" and key not in decided
    }


def exercises(assignment: str) -> dict[str, list[str]]:
    """``{exercise title: grade ids of its automatically graded test cells}`` from the source notebook."""
    nb = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
    found: dict[str, list[str]] = {}
    for cell, title in zip(nb.cells, exercise_titles(nb), strict=True):
        meta = nbgrader(cell)
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            found.setdefault(title, []).append(meta["grade_id"])
    return found


def answers(assignment: str) -> dict[str, list[str]]:
    """``{exercise title: grade ids of its answer cells}`` (where a comment to the student goes)."""
    nb = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
    found: dict[str, list[str]] = {}
    for cell, title in zip(nb.cells, exercise_titles(nb), strict=True):
        meta = nbgrader(cell)
        if meta.get("solution") and meta.get("grade_id"):
            found.setdefault(title, []).append(meta["grade_id"])
    return found


def decide(
    course: CourseDir,
    student: str,
    assignment: str,
    verdict: str,
    zeroed: list[str] | None = None,
    comment: str = "",
    who: str | None = None,
) -> Decision:
    """Record a TA's decision on the submission's flags and apply it to the gradebook (see the
    module). A later decision on the same grading replaces an earlier one (a zero undone by an
    accept gets its automatic points back)."""
    outcome = load_status(course).get((student, assignment))
    if not outcome or outcome.get("status") != "flagged":
        raise DecisionError(f"{student}/{assignment} is not flagged: there is nothing to decide")
    if verdict not in DECISIONS:
        raise DecisionError(f"a decision is one of {', '.join(DECISIONS)}, not {verdict!r}")
    zeroed = list(dict.fromkeys(zeroed or [])) if verdict == "zero" else []
    tests, answer_cells = exercises(assignment), answers(assignment)
    unknown = [title for title in zeroed if title not in tests]
    if unknown:
        raise DecisionError(
            f"{assignment} has no automatically graded {unknown[0]}; it has {', '.join(tests)}"
        )
    if verdict == "zero" and not zeroed:
        raise DecisionError("say which exercise's points are set to 0")
    if verdict == "zero" and not comment.strip():
        raise DecisionError("setting points to 0 needs a comment for the student: say why")
    digest = outcome.get("digest", "")
    previous = _decisions(course).get((student, assignment, digest))
    who = who or os.environ.get("SUDO_USER") or getpass.getuser()
    made = Decision(
        student,
        assignment,
        digest,
        verdict,
        tuple(zeroed),
        comment.strip(),
        who,
        datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
    from staff.grading import regrade  # the log's helpers; regrade imports the grader lazily

    before = regrade.auto_score(course, student, assignment)
    with Gradebook(course.db_url) as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            raise DecisionError(f"{student}/{assignment} has no grades in the gradebook") from None
        undo = set(previous.exercises) - set(zeroed) if previous else set()
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                title = next((t for t, ids in tests.items() if grade.name in ids), None)
                if title in zeroed:
                    grade.manual_score = 0.0
                elif title in undo:
                    grade.manual_score = None
            for note in notebook.comments:
                title = next((t for t, ids in answer_cells.items() if note.name in ids), None)
                if title in zeroed:
                    note.manual_comment = f"Integrity review ({who}): {made.comment}"
                elif title in undo:
                    note.manual_comment = None
        gb.db.commit()
    engine = _engine(course)
    try:
        with engine.begin() as connection:
            connection.execute(
                TABLE.insert().values(
                    student=student,
                    assignment=assignment,
                    digest=digest,
                    decision=verdict,
                    exercises=json.dumps(list(zeroed)),
                    comment=made.comment,
                    who=who,
                    decided_at=made.decided_at,
                )
            )
    finally:
        engine.dispose()
    status = "flags accepted" if verdict == "accept" else "flags: points set to 0"
    regrade.log(
        course, student, assignment, who, f"{made.summary()}: {made.comment}".rstrip(": "), before, status
    )
    return made
