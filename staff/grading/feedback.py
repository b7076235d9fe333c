"""Feedback for students, without secrets: ``nbgrader generate_feedback`` per assignment, with
the preprocessor :class:`RedactHiddenTests`.

nbgrader's feedback HTML shows every test cell as graded, i.e. with the hidden tests restored,
and their tracebacks, which quote expected values (nbgrader issues #917, #1363). A student who
sees them can pass next year's hidden tests by copying. For every test cell that contains a
hidden region this preprocessor keeps only the visible part of the source, and replaces the
cell's outputs with one line: passed or failed, and the points. Registered in
``nbgrader_config.py`` after nbgrader's ``GetGrades`` (which records the points it shows).
"""
from __future__ import annotations

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from nbformat.v4 import new_output

from staff import course_dir, nbgrader_cli
from staff.course_dir import CourseDir, nbgrader

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
            score, points = meta.get("score"), meta.get("points")
            # the gradebook's points (set by the judge outside the kernel), not what the kernel printed
            failed = score is None or points is None or score < points
            verdict = "failed" if failed else "passed"
            detail = f" ({score:g} / {points:g} points)" if score is not None and points is not None else ""
            cell.outputs = [new_output("stream", name="stdout", text=f"Hidden tests {verdict}{detail}.\n")]
        return cell, resources


def feedback(assignments: list[str] | None = None, course: CourseDir = course_dir.COURSE) -> None:
    """``feedback/<student>/<assignment>/*.html`` for every graded submission."""
    for assignment in assignments or course_dir.assignments():
        if any(course.autograded.glob(f"*/{assignment}")):
            nbgrader_cli.run("generate_feedback", assignment, "--force", "--log-level=WARN", course=course)
