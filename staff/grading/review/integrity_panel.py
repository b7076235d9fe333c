"""The integrity scan's flags on the TA's grading page, beside the cell each one names.

A flag ("softmax: library: uses torch.softmax ...: an implementation of exercise 1 (Softmax)")
is a question for a person, and the person who can answer it is the TA looking at that answer.
The flags of a submission are in ``autograded/status.jsonl`` (the last grading's
:class:`status.Outcome`), each starting with the name of the cell it is about (its grade id, or
``cell N`` for a cell the student added). :class:`AddIntegrityFlags` is an nbconvert
preprocessor that puts, right after that cell, a warning panel listing its flags, and a panel
with the rest (and the status's reason when the judge flagged the run itself) at the top.

Like :mod:`model_answers` it is registered by ``jupyter/nbconvert/templates/formgrade/conf.json``
only (key ``880-...``, after the sanitizer: the panel is the course's own markup, and every flag's
text is escaped, since a flag can quote a name the student chose), so it reaches the formgrader
and never the students' feedback.
"""

from __future__ import annotations

import html
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor

from staff.course_dir import CourseDir
from staff.grading.status import load_status

CSS = """
div.integrity-flags { margin: -10px 0 20px 0; }
div.integrity-flags ul { margin: 0; padding-left: 20px; }
"""


def _course(folder: Path) -> CourseDir | None:
    """The course holding ``autograded/<student>/<assignment>/`` (whatever the server's cwd)."""
    for root in folder.parents:
        if (root / "autograded").is_dir() and (root / "source").is_dir():
            return CourseDir(root)
    return None


def panel(flags: list[str], where: str) -> nbformat.NotebookNode:
    """A markdown cell (no nbgrader metadata: nothing to grade) with the flags, escaped."""
    items = "\n".join(f"<li>{html.escape(flag)}</li>" for flag in flags)
    return nbformat.v4.new_markdown_cell(
        f'<div class="alert alert-warning integrity-flags"><strong>For review ({html.escape(where)})</strong>: '
        f"the integrity scan flagged this; no points were changed for it.\n<ul>\n{items}\n</ul>\n</div>"
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
        course = _course(folder)
        outcome = load_status(course).get((folder.parent.name, assignment)) if course else None
        if not outcome or outcome.get("status") != "flagged":
            return nb, resources
        ids = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells} - {None}
        placed, rest = flags_by_cell(list(outcome.get("flags") or []), ids)
        if not outcome.get("flags"):  # flagged by the judge or the guard: the reason says why
            rest = [outcome.get("reason", "")]
        cells = [panel(rest, "the whole submission")] if rest else []
        for cell in nb.cells:
            cells.append(cell)
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in placed:
                cells.append(panel(placed[grade_id], f"cell {grade_id}"))
        nb.cells = cells
        resources.setdefault("inlining", {}).setdefault("css", []).append(CSS)
        return nb, resources
