"""Feedback for students, without secrets: ``nbgrader generate_feedback`` per assignment, with
the preprocessor :class:`RedactHiddenTests`.

nbgrader's feedback HTML shows every test cell as graded, i.e. with the hidden tests restored,
and their tracebacks, which quote expected values (nbgrader issues #917, #1363). A student who
sees them can pass next year's hidden tests by copying. For every test cell that contains a
hidden region this preprocessor keeps only the visible part of the source, and replaces the
cell's outputs with the points and the judge's line per check (passed, or failed with a reason
that names the case and the kind of failure, never an expected value: :mod:`points`). Registered in
``nbgrader_config.py`` after nbgrader's ``GetGrades`` (which records the points it shows).
"""
from __future__ import annotations

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from nbformat.v4 import new_output

from staff import course_dir, nbgrader_cli
from staff.course_dir import CourseDir, nbgrader
from staff.grading.points import MARK, judged_output

BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def visible_part(source: str) -> tuple[str, bool]:
    """The source without its hidden region(s), and whether there was one."""
    lines, hidden, found = [], False, False
    for line in source.splitlines():
        if BEGIN in line:
            hidden = found = True
            lines.append("# (hidden tests: not shown)")
        elif END in line:
            hidden = False
        elif not hidden:
            lines.append(line)
    return "\n".join(lines), found


class RedactHiddenTests(Preprocessor):
    enabled = True  # nbconvert preprocessors are off unless enabled

    def preprocess_cell(self, cell: NotebookNode, resources: dict, index: int):
        meta = nbgrader(cell)
        if cell.cell_type != "code" or not meta.get("grade"):
            return cell, resources
        cell.source, had_hidden = visible_part(cell.source)
        if had_hidden:
            # the gradebook's points (set by the judge outside the kernel), not what the kernel printed,
            # and the judge's line per check (its reasons never quote an expected value)
            score, points = meta.get("score"), meta.get("points")
            detail = f"{score:g} / {points:g} points" if score is not None and points is not None else "not graded"
            judged = judged_output(cell)
            checks = judged["metadata"][MARK].get("lines", []) if judged else ["(not judged)"]
            text = "\n".join([f"Hidden tests: {detail}.", *(f"  {line}" for line in checks)]) + "\n"
            cell.outputs = [new_output("stream", name="stdout", text=text)]
        return cell, resources


class ManualGradesPending(RuntimeError):
    """Feedback was asked to wait for every manual grade, and some are missing."""


def pending_manual(assignments: list[str], course: CourseDir) -> list[tuple[str, str, float]]:
    """(student, assignment, points) of graded submissions with free-text answers no TA has graded."""
    from staff.grading import report  # reads the gradebook: only when feedback is made

    return [(r.student, r.assignment, r.manual_pending) for r in report.rows(course=course)
            if r.assignment in assignments and r.manual_pending]


def feedback(assignments: list[str] | None = None, course: CourseDir = course_dir.COURSE,
             complete: bool = False) -> list[tuple[str, str, float]]:
    """``feedback/<student>/<assignment>/*.html`` for every graded submission. nbgrader's feedback
    shows an answer no TA has graded yet as 0 points, so this says which submissions still wait
    for one (and returns them); with ``complete`` it writes nothing while any does."""
    assignments = assignments or course_dir.assignments()
    pending = pending_manual(assignments, course)
    if pending:
        names = ", ".join(f"{s}/{a} ({p:g} pts)" for s, a, p in pending[:6]) + (" ..." if len(pending) > 6 else "")
        message = (f"{len(pending)} submission(s) have free-text answers no TA has graded yet ({names}); their "
                   f"feedback would show those answers as 0 points: grade them in the formgrader (make formgrader)")
        if complete:
            raise ManualGradesPending(message + ", then run make feedback again. No feedback was written")
        print(f"feedback: warning: {message}, or make feedback COMPLETE=1 to refuse until they are graded")
    for assignment in assignments:
        if any(course.autograded.glob(f"*/{assignment}")):
            nbgrader_cli.run("generate_feedback", assignment, "--force", "--log-level=WARN", course=course)
    return pending
