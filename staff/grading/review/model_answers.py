"""The model answer under each free-text answer a TA grades in the formgrader.

nbgrader's grading page shows only what the student wrote; the TA needs the instructor's answer
to mark it. :class:`AddModelAnswers` is an nbconvert preprocessor that puts, right after each
manually graded answer of the submission being rendered, a labelled, collapsible "Model answer"
cell: the solution region (``### BEGIN SOLUTION`` ... ``### END SOLUTION``) of the cell with the
same ``grade_id`` in ``source/<assignment>/<notebook>.ipynb``.

Why it can only reach the formgrader: it is registered by the template, not by nbgrader's config.
``jupyter/nbconvert/templates/formgrade/conf.json`` lists it, and nbconvert merges that file into
nbgrader's own ``formgrade`` template only when ``jupyter/`` is on JUPYTER_PATH, which
``make formgrader`` sets for its server and nothing else does. Feedback uses nbgrader's
``feedback`` template (and the instructor's config, where this class is not named), so students
never get it. Without the formgrader's resources (assignment, notebook) it does nothing.

The model answer is an ordinary markdown cell, so the page renders it exactly like the student's
answer (its own markdown filter, formulas through the page's MathJax); a small HTML frame around
it gives the label, a distinct colour and a ``<details>`` that remembers, per question, whether
the TA closed it (a TA marking 300 answers reads it once or twice, then wants it out of the way).
"""

from __future__ import annotations

import html
from functools import lru_cache
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor
from nbgrader.preprocessors import ClearSolutions

from staff.course_dir import nbgrader

#: The delimiters nbgrader's ClearSolutions removes (the course keeps nbgrader's defaults).
BEGIN = ClearSolutions.begin_solution_delimeter.default_value
END = ClearSolutions.end_solution_delimeter.default_value

#: Inlined into the page's head through the template's ``resources.inlining.css``.
CSS = """
details.model-answer { margin: -10px 0 20px 0; }
details.model-answer > summary { cursor: pointer; display: list-item; }
details.model-answer > summary .source { float: right; font-size: 85%; opacity: .75; }
details.model-answer > .panel-body { background: #f7fbf5; }
details.model-answer > .panel-body > :last-child { margin-bottom: 0; }
"""

#: Keeps each question's model answer open or closed as the TA left it (per browser), and
#: re-typesets its formulas when it is opened (MathJax cannot measure a closed <details>).
SCRIPT = """<script>
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("details.model-answer").forEach(function (d) {
    var key = "model-answer-open:" + d.dataset.key;
    try { if (localStorage.getItem(key) === "0") d.open = false; } catch (e) {}
    d.addEventListener("toggle", function () {
      try { localStorage.setItem(key, d.open ? "1" : "0"); } catch (e) {}
      if (d.open && window.MathJax && MathJax.Hub) MathJax.Hub.Queue(["Rerender", MathJax.Hub, d]);
    });
  });
});
</script>"""


def solution_text(cell: nbformat.NotebookNode) -> str:
    """What nbgrader's ClearSolutions removes from a solution cell: the lines between its
    delimiters, or the whole cell when it has none (then the student gets only the stub)."""
    lines = cell.source.split("\n")
    if not any(BEGIN in line for line in lines):
        return cell.source.strip()
    kept, inside = [], False
    for line in lines:
        if BEGIN in line:
            inside = True
            if kept:
                kept.append("")  # a blank line between two solution regions
        elif END in line:
            inside = False
        elif inside:
            kept.append(line)
    return "\n".join(kept).strip()


def is_manually_graded(cell: nbformat.NotebookNode) -> bool:
    meta = nbgrader(cell)
    return bool(meta.get("solution") and meta.get("grade") and meta.get("grade_id"))


@lru_cache(maxsize=32)
def _answers(path: str, mtime_ns: int) -> dict[str, tuple[str, str]]:
    """``{grade_id: (cell_type, solution text)}`` of one source notebook (cached until it changes)."""
    notebook = nbformat.read(path, as_version=4)
    return {
        cell.metadata["nbgrader"]["grade_id"]: (cell.cell_type, solution_text(cell))
        for cell in notebook.cells
        if is_manually_graded(cell)
    }


def model_answers(source: Path) -> dict[str, tuple[str, str]]:
    return _answers(str(source), source.stat().st_mtime_ns)


def source_notebook(folder: Path, assignment: str, notebook: str) -> Path | None:
    """``source/<assignment>/<notebook>.ipynb`` of the course holding ``folder`` (the submission's
    ``autograded/<student>/<assignment>/``), whatever the server's working directory."""
    for root in (folder, *folder.parents):
        candidate = root / "source" / assignment / f"{notebook}.ipynb"
        if candidate.is_file():
            return candidate
    return None


def grading_page_source(resources: dict, log, shown: str) -> tuple[str, str, Path] | None:
    """``(assignment, notebook, source notebook)`` of the submission nbgrader's grading page is
    rendering, or None (and a warning naming what is not ``shown``) when there is none."""
    assignment, notebook = resources.get("assignment_id"), resources.get("notebook_id")
    folder = (resources.get("metadata") or {}).get("path")
    if not (assignment and notebook and folder):
        return None  # not nbgrader's grading page
    source = source_notebook(Path(folder).resolve(), assignment, notebook)
    if source is None:
        log.warning("No source notebook for %s/%s: no %s shown", assignment, notebook, shown)
        return None
    return assignment, notebook, source


def answer_cell(
    grade_id: str, key: str, cell_type: str, text: str, origin: str, language: str = "python"
) -> nbformat.NotebookNode:
    """A markdown cell (no nbgrader metadata: nothing to grade) framing the model answer."""
    body = text if cell_type == "markdown" else f"```{language}\n{text}\n```"
    head = (
        f'<details class="panel panel-success model-answer" open data-grade-id="{html.escape(grade_id)}" '
        f'data-key="{html.escape(key)}">\n'
        f'<summary class="panel-heading"><strong>Model answer</strong>'
        f'<span class="source">{html.escape(origin)}, not shown to students</span></summary>\n'
        f'<div class="panel-body">\n'
    )
    # Blank lines around the answer: markdown inside an HTML block is rendered only between them.
    return nbformat.v4.new_markdown_cell(f"{head}\n{body}\n\n</div>\n</details>")


class AddModelAnswers(Preprocessor):
    """After each manually graded answer, its model answer from the source notebook (formgrader
    only: registered by ``jupyter/nbconvert/templates/formgrade/conf.json``)."""

    def preprocess(self, nb, resources):
        page = grading_page_source(resources, self.log, "model answers")
        if page is None:
            return nb, resources
        assignment, notebook, source = page
        answers = model_answers(source)
        origin = "/".join(source.parts[-3:])  # source/<assignment>/<notebook>.ipynb
        language = nb.metadata.get("kernelspec", {}).get("language", "python")
        cells, added = [], []
        for cell in nb.cells:
            cells.append(cell)
            grade_id = nbgrader(cell).get("grade_id")
            if is_manually_graded(cell) and grade_id in answers:
                cell_type, text = answers[grade_id]
                added.append(
                    answer_cell(
                        grade_id, f"{assignment}/{notebook}/{grade_id}", cell_type, text, origin, language
                    )
                )
                cells.append(added[-1])
        if added:
            added[-1].source += "\n\n" + SCRIPT  # once per page, after the last model answer
            resources.setdefault("inlining", {}).setdefault("css", []).append(CSS)
        nb.cells = cells
        return nb, resources
