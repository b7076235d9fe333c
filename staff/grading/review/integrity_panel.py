"""The integrity scan's flags on the TA's grading page, beside the cell each one names.

A flag ("softmax: library: uses torch.softmax ...: an implementation of exercise 1 (Softmax)")
is a question for a person, and the person who can answer it is the TA looking at that answer.
The flags of a submission are in ``autograded/status.jsonl`` (the last grading's
:class:`status.Outcome`), each starting with the name of the cell it is about (its grade id, or
``cell N`` for a cell the student added). :class:`AddIntegrityFlags` is an nbconvert
preprocessor that puts, right after that cell, a warning panel listing its flags, and a panel
with the rest (and the status's reason when the judge flagged the run itself) at the top.

Like :mod:`model_answers` it is registered by ``jupyter/nbconvert/templates/formgrade/conf.json``
only (key ``880-...``, after the sanitizer: the panel is the course's own markup), so it reaches
the formgrader and never the students' feedback.

A flag quotes what the student wrote (the grade id or ``cell N`` before its first colon, names and
strings after it), and the page renders this markdown cell with nbconvert's markdown2html and no
sanitizer after it: every flag, reason and name goes through
:func:`staff.grading.student_text.inert_html` (no markup, markdown or line break of the student's
is left: a blank line would end the panel's HTML block and let markdown after it draw an image
fetched with the TA's cookies), each cut at :data:`~staff.grading.student_text.LIMIT` characters,
at most :data:`SHOWN` flags a panel with the count of the rest, and the panel is one HTML block
without a blank line, kept from MathJax (tests/staff/grading/review/test_integrity_panel.py renders it
through markdown2html, hostile and fuzzed flags; tests/e2e/test_formgrader.py in Chromium).
"""

from __future__ import annotations

import html
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor

from staff.course_dir import CourseDir, nbgrader
from staff.grading.gradebook import flag_decisions
from staff.grading.review import flag_review
from staff.grading.status import load_status
from staff.grading.student_text import LIMIT, NO_MATH, inert_html

#: Flags listed in one panel; the rest are counted (the status line keeps them all).
SHOWN = 50
#: Characters of a reason shown (the judge's reason lists up to 30 cells, each with what it recorded).
REASON_LIMIT = 2_000

CSS = """
div.integrity-flags { margin: -10px 0 20px 0; }
div.integrity-flags ul { margin: 0; padding-left: 20px; }
"""


def panel(flags: list[str], where: str | None, limit: int = LIMIT) -> nbformat.NotebookNode:
    """A markdown cell (no nbgrader metadata: nothing to grade) listing ``flags`` (what the scan
    wrote, quoting the student) about ``where`` (a cell's grade id, or None: the whole submission),
    as text: one HTML block, no blank line, nothing of the student's parsed as HTML or markdown."""
    about = "the whole submission" if where is None else f"cell {inert_html(where)}"
    count = f"{len(flags):,} flag{'s' if len(flags) != 1 else ''}"
    items = [f"<li>{inert_html(flag, limit)}</li>" for flag in flags[:SHOWN]]
    if len(flags) > SHOWN:
        items.append(f"<li>and {len(flags) - SHOWN:,} more, not shown here</li>")
    return nbformat.v4.new_markdown_cell(
        f'<div class="alert alert-warning integrity-flags {NO_MATH}">\n'
        f"<strong>For review ({about})</strong>: the integrity scan flagged this ({count}); "
        "no points were changed for it.\n<ul>\n" + "\n".join(items) + "\n</ul>\n</div>"
    )


def decide_panel(course: CourseDir, assignment: str, student: str) -> nbformat.NotebookNode:
    """The submission's state (held, or the decision taken) and the link to the page where a TA
    decides (:mod:`flag_review`)."""
    decided = flag_decisions.decision(course, student, assignment)
    state = (
        f"Decided: {inert_html(decided.summary())}."
        if decided
        else "<strong>Held</strong>: no points are shown to the student or exported until a TA decides."
    )
    href = html.escape(flag_review.link(assignment, student), quote=True)
    return nbformat.v4.new_markdown_cell(
        f'<div class="alert alert-info integrity-decision {NO_MATH}">\n{state} '
        f'<a href="{href}">Decide on the flags (accept, or set exercises to 0)</a>\n</div>'
    )


def flags_by_cell(flags: list[str], cells: set[str]) -> tuple[dict[str, list[str]], list[str]]:
    """``({grade id: flags about it}, the other flags)``."""
    placed: dict[str, list[str]] = {}
    rest = []
    for flag in flags:
        name = flag.split(":", 1)[0]
        (placed.setdefault(name, []) if name in cells else rest).append(flag)
    return placed, rest


class AddIntegrityFlags(Preprocessor):
    """After each cell the integrity scan flagged, its flags (formgrader only)."""

    def preprocess(self, nb, resources):
        assignment = resources.get("assignment_id")
        folder = (resources.get("metadata") or {}).get("path")
        if not (assignment and folder):
            return nb, resources  # not nbgrader's grading page
        folder = Path(folder).resolve()
        course = CourseDir.containing(folder)
        outcome = load_status(course).get((folder.parent.name, assignment)) if course else None
        if not outcome or outcome.get("status") != "flagged":
            return nb, resources
        ids = {nbgrader(c).get("grade_id") for c in nb.cells} - {None}
        placed, rest = flags_by_cell(list(outcome.get("flags") or []), ids)
        limit = LIMIT
        if not outcome.get("flags"):  # flagged by the judge or the guard: the reason says why
            rest, limit = [str(outcome.get("reason", ""))], REASON_LIMIT
        cells = [decide_panel(course, assignment, folder.parent.name)]
        if rest:
            cells.append(panel(rest, None, limit))
        for cell in nb.cells:
            cells.append(cell)
            grade_id = nbgrader(cell).get("grade_id")
            if grade_id in placed:
                cells.append(panel(placed[grade_id], grade_id))
        nb.cells = cells
        resources.setdefault("inlining", {}).setdefault("css", []).append(CSS)
        return nb, resources
