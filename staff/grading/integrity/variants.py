"""Whether each submission's written answers are about its own variant of the experiments.

Every student runs their own variant of the experiments the written questions ask about
(:mod:`course.variant`), so an honest answer quotes numbers the student's own run printed. This
module reads each submitted notebook (as data: :mod:`staff.grading.review.submitted_outputs`) and
notices two things a TA should see, without changing any grade:

- the setup cell's output names another variant than the student's (the run used someone else's id);
- an answer quotes numbers the student's own outputs never show but the worked example's model
  answer does (the published solution), or another student's own outputs do (a classmate's answer).

Numbers are compared as written, with a decimal point and at least three significant digits
(``62.7``, ``0.247``): integers and short decimals (a head size, ``0.5``) are everyone's.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from course import variant
from staff import course_dir
from staff.course_dir import CourseDir
from staff.grading.review import submitted_outputs
from staff.grading.review.model_answers import model_answers

_NUMBER = re.compile(
    r"(?<!\d)(?<!\d\.)\d+\.\d+(?!\.?\d)"
)  # not part of a version (1.2.3); a full stop may follow
#: At least this many of an answer's numbers must be someone else's for it to be noticed: one can
#: be a coincidence (two tables both printing 0.250).
AT_LEAST = 2


@dataclass(frozen=True)
class Finding:
    assignment: str
    student: str
    question: str  # the answer's grade_id, or "setup" for the variant the run used
    reason: str


def numbers(text: str) -> set[str]:
    """The decimal numbers of ``text`` with at least three significant digits, as written."""
    return {n for n in _NUMBER.findall(text) if len(n.replace(".", "").lstrip("0")) >= 3}


@dataclass
class _Submission:
    student: str
    own: set[str]  # numbers its outputs show
    answers: dict[str, set[str]]  # question -> numbers its answer quotes
    printed: str | None  # the variant its setup cell printed


def _read(path: Path, student: str, questions: list[str]) -> _Submission | None:
    try:
        outputs, markdown = submitted_outputs.read_outputs(path), submitted_outputs.read_markdown(path)
    except submitted_outputs.Unreadable:
        return None
    own = set().union(*(numbers(submitted_outputs.output_text(o)) for o in outputs.values()))
    answers = {q: numbers(markdown.get(q, "")) for q in questions}
    return _Submission(student, own, answers, submitted_outputs.printed_variant(outputs.get("setup")))


def findings(course: CourseDir = course_dir.COURSE, assignments: list[str] | None = None) -> list[Finding]:
    """What to look at in every submission of the assignments that have variants."""
    found: list[Finding] = []
    for assignment in assignments or course_dir.assignments():
        source = course.source / assignment / f"{assignment}.ipynb"
        if assignment not in variant.CHOICES or not source.is_file():
            continue
        worked = {q: numbers(text) for q, (kind, text) in model_answers(source).items() if kind == "markdown"}
        submissions = [
            read
            for path in sorted(course.submitted.glob(f"*/{assignment}/{assignment}.ipynb"))
            if (read := _read(path, path.parts[-3], list(worked))) is not None
        ]
        whose: dict[str, set[str]] = defaultdict(set)  # number -> students whose own outputs show it
        for s in submissions:
            for n in s.own:
                whose[n].add(s.student)
        for s in submissions:
            expected = variant.of(assignment, variant.graded_as(s.student)).describe()
            if s.printed is not None and s.printed != expected:
                found.append(Finding(assignment, s.student, "setup", f"its own run used another {s.printed}"))
            for question, quoted in s.answers.items():
                foreign = quoted - s.own
                published = sorted(foreign & worked[question])
                if len(published) >= AT_LEAST:
                    found.append(
                        Finding(
                            assignment,
                            s.student,
                            question,
                            f"quotes the worked example's numbers, which its own run did not print: {', '.join(published)}",
                        )
                    )
                    continue
                others: dict[str, list[str]] = defaultdict(list)
                for n in sorted(foreign):
                    for other in whose.get(n, ()):
                        others[other].append(n)
                best = max(others.items(), key=lambda item: len(item[1]), default=None)
                if best and len(best[1]) >= AT_LEAST:
                    found.append(
                        Finding(
                            assignment,
                            s.student,
                            question,
                            f"quotes numbers its own run did not print but {best[0]}'s did: {', '.join(best[1])}",
                        )
                    )
    return found
