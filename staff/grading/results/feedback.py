"""Feedback for students, without secrets: ``nbgrader generate_feedback`` per assignment, with
the preprocessors :class:`RedactHiddenTests` and :class:`ShowPending` (an answer no TA has graded
yet is shown as pending, never as zero).

nbgrader's feedback HTML shows every test cell as graded, i.e. with the hidden tests restored,
and their tracebacks, which quote expected values (nbgrader issues #917, #1363). A student who
sees them can pass next year's hidden tests by copying. For every test cell that contains a
hidden region this preprocessor keeps only the visible part of the source, and replaces the
cell's outputs with the points and the judge's line per check (passed, or failed with a reason
that names the case and the kind of failure, never an expected value: :mod:`points`). Registered in
``nbgrader_config.py`` after nbgrader's ``GetGrades`` (which records the points it shows).

A flagged submission no TA has decided on is held (:mod:`staff.grading.gradebook.flag_decisions`):
:class:`HoldFlagged` replaces its page with a note that it is under review, no points, whichever
way the feedback is made (``make feedback`` or the formgrader's button). The page's template
(``templates/course_feedback``, nbgrader's with the header and contents changed) says "under review"
where the score would be, and the contents name each test cell's exercise (:class:`LabelCells`). The
page reads anywhere, offline: formulas are MathML written into it (:mod:`formulas`; no MathJax from a
CDN), images are scaled to the page and long lines wrap in a 1,280-pixel window.
"""

from __future__ import annotations

from pathlib import Path

import nbgrader as nbgrader_package
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell, new_output
from traitlets import default

from staff import course_dir, nbgrader_cli
from staff.course_dir import CourseDir, exercise_titles, nbgrader
from staff.grading.judging.points import MARK, judged_output
from staff.grading.results import formulas

BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
#: The course's feedback template, and nbgrader's, which it extends.
TEMPLATES = Path(__file__).with_name("templates")
NBGRADER_TEMPLATES = Path(nbgrader_package.__file__).parent / "server_extensions" / "formgrader" / "templates"
#: What a held submission's page says instead of its points.
UNDER_REVIEW = (
    "**Under review.** The course's automatic checks flagged something in this submission that a "
    "member of the course staff has to look at before it is graded (for example a call to a "
    "library where the exercise asks for your own code, or code the checks cannot read). This is "
    "routine and not a finding: no points are shown or sent to the gradebook until the review is "
    "done, and then this page shows your grade and any comment. Questions: ask your TA."
)


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
            detail = (
                f"{score:g} / {points:g} points" if score is not None and points is not None else "not graded"
            )
            judged = judged_output(cell)
            checks = judged["metadata"][MARK].get("lines", []) if judged else ["(not judged)"]
            text = "\n".join([f"Hidden tests: {detail}.", *(f"  {line}" for line in checks)]) + "\n"
            cell.outputs = [new_output("stream", name="stdout", text=text)]
        return cell, resources


class ShowPending(Preprocessor):
    """An answer no TA has graded yet is pending, not zero. nbgrader's feedback shows it as "Score:
    0.0 / 2.0" and counts its points in the notebook's total; after ``GetGrades`` this shows it
    without a score, with a note under it, takes its points out of the total, and opens the page
    with how many points are still pending (so "14 / 53 graded so far", not "14 / 55")."""

    enabled = True

    def preprocess(self, nb: NotebookNode, resources: dict):
        from nbgrader.api import Gradebook

        info = resources["nbgrader"]
        cells, pending = [], 0.0
        with Gradebook(info["db_url"]) as gb:
            for cell in nb.cells:
                cells.append(cell)
                meta = nbgrader(cell)
                if not (meta.get("grade") and meta.get("solution")):
                    continue
                grade = gb.find_grade(meta["grade_id"], info["notebook"], info["assignment"], info["student"])
                if grade.needs_manual_grade:  # what report.rows and grades.csv count as pending
                    points = float(grade.max_score or 0.0)
                    pending += points
                    meta["grade"] = False  # nbgrader's template then shows no score for it
                    cells.append(
                        new_markdown_cell(
                            f"**Not graded yet:** a TA will grade this answer "
                            f"({points:g} points); it is not counted in the score above."
                        )
                    )
        if pending:
            graded = float(info["max_score"]) - pending
            info["max_score"], info["pending"] = graded, pending
            cells.insert(
                0,
                new_markdown_cell(
                    f"**{pending:g} points are still pending:** answers a TA has not graded yet. The score above "
                    f"counts the {graded:g} points graded so far; this notebook is out of {graded + pending:g}."
                ),
            )
        nb.cells = cells
        return nb, resources


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback exporter (``GenerateFeedback.exporter_class``, ``nbgrader_config.py``) on
    the course's template ``course_feedback``, which extends nbgrader's ``feedback/index.html.j2``:
    nbgrader's folder is also searched by its root, where that name is found (as the template's own
    folder comes first, ``index.html.j2`` alone would name the course's file)."""

    def __init__(self, **kwargs):
        # arguments, not defaults: they win over the config, where GenerateFeedback names nbgrader's template
        kwargs.update(
            template_name="course_feedback", extra_template_basedirs=[str(TEMPLATES), str(NBGRADER_TEMPLATES)]
        )
        super().__init__(**kwargs)

    def default_filters(self):
        yield from super().default_filters()
        yield ("mathml", formulas.mathml)  # the template's: formulas drawn without MathJax

    @default("template_paths")
    def _template_paths(self, prune=True, root_dirs=None):
        return [*super()._template_paths(prune=prune, root_dirs=root_dirs), str(NBGRADER_TEMPLATES)]


class HoldFlagged(Preprocessor):
    """A held submission's page: the note :data:`UNDER_REVIEW` and nothing else (no points, no checks);
    its template shows "under review" in place of the score (``resources["nbgrader"]["held"]``)."""

    enabled = True

    def preprocess(self, nb: NotebookNode, resources: dict):
        from staff.grading.gradebook import flag_decisions

        info = resources["nbgrader"]
        folder = (resources.get("metadata") or {}).get("path")
        course = CourseDir.containing(Path(folder), url=info.get("db_url")) if folder else None
        if course and (info["student"], info["assignment"]) in flag_decisions.held(course):
            nb.cells = [new_markdown_cell(UNDER_REVIEW)]
            info["held"] = True
        return nb, resources


class LabelCells(Preprocessor):
    """Each graded cell's exercise (the notebook's ``## <n>. <title>`` above it) as the contents'
    label, in ``metadata.course.label``: "exercise 2 (Multi-head attention): hidden tests"."""

    enabled = True

    def preprocess(self, nb: NotebookNode, resources: dict):
        for cell, exercise in zip(nb.cells, exercise_titles(nb), strict=True):
            meta = nbgrader(cell)
            if not meta.get("grade"):
                continue
            kind = (
                "written answer"
                if cell.cell_type == "markdown"
                else "answer"
                if meta.get("solution")
                else ("hidden tests" if "hidden" in meta.get("grade_id", "") else "tests")
            )
            cell.metadata.setdefault("course", {})["label"] = f"{exercise[0].upper()}{exercise[1:]}: {kind}"
        return nb, resources


class ManualGradesPending(RuntimeError):
    """Feedback was asked to wait for every manual grade, and some are missing."""


def pending_manual(assignments: list[str], course: CourseDir) -> list[tuple[str, str, float]]:
    """(student, assignment, points) of graded submissions with free-text answers no TA has graded."""
    from staff.grading.results import report  # reads the gradebook: only when feedback is made

    return [
        (r.student, r.assignment, r.manual_pending)
        for r in report.rows(course=course)
        if r.assignment in assignments and r.manual_pending
    ]


def feedback(
    assignments: list[str] | None = None, course: CourseDir = course_dir.COURSE, complete: bool = False
) -> list[tuple[str, str, float]]:
    """``feedback/<student>/<assignment>/*.html`` for every graded submission. An answer no TA has
    graded yet is shown as pending (:class:`ShowPending`); this says which submissions still wait
    for one (and returns them), and with ``complete`` writes nothing while any does."""
    assignments = assignments or course_dir.assignments()
    pending = pending_manual(assignments, course)
    if pending:
        names = ", ".join(f"{s}/{a} ({p:g} pts)" for s, a, p in pending[:6]) + (
            " ..." if len(pending) > 6 else ""
        )
        message = (
            f"{len(pending)} submission(s) have free-text answers no TA has graded yet ({names}); their "
            f"feedback shows those answers as pending, out of the total: grade them in the formgrader "
            f"(make formgrader)"
        )
        if complete:
            raise ManualGradesPending(message + ", then run make feedback again. No feedback was written")
        print(f"feedback: warning: {message}, or make feedback COMPLETE=1 to refuse until they are graded")
    graded = {p.name for p in course.autograded.glob("*/*") if p.is_dir()}
    nbgrader_cli.each_assignment(
        "generate_feedback",
        [a for a in assignments if a in graded],
        graded,
        "--force",
        "--log-level=WARN",
        course=course,
    )
    return pending
