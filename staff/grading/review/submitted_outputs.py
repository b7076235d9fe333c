"""What the student's own run showed, beside the graded run, under each free-text answer a TA grades.

The free-text questions ask about the student's own numbers ("Read the speed-up ... in the table
under exercise 4"), but the formgrader shows the autograded notebook: the grader's re-execution,
which runs some cells with smaller settings (assignment 2's experiment at batch 2, assignment 4 one
epoch, assignment 5 a shorter timing) and leaves out those that only teach (timings, extra figures:
``skip_when_grading``, :mod:`staff.grading.execution.skipping`), with a note in their place. A TA grading the
answer needs the outputs the student handed in. :class:`AddSubmittedOutputs` is an nbconvert
preprocessor that puts, after each manually graded answer, a panel "As submitted (the student's
own run)" with the outputs of the code cells the question refers to, read from
``submitted/<student>/<assignment>/<notebook>.ipynb``, next to the graded run's outputs of the
same cells, and says when they differ.

Which cells: the question cell's metadata in the SOURCE notebook, ``"course": {"refers_to":
["grade_id", ...]}`` (code cells, in the order the question uses them). It is read from
``source/`` only, which is trusted: a student's copy of the metadata is never read, so a
submission cannot point the panel at other cells. The question's text says in words what the
student sees ("your heatmap under exercise 2"), never a grade id. Cells of the two notebooks
shown are matched by nbgrader ``grade_id``, else by cell id. A question that refers to no cell
gets no panel.

The submitted notebook is hostile input: it is parsed as plain JSON (size-limited, never
executed), and only text (``text/plain``, streams, errors; HTML-escaped, ANSI codes dropped,
truncated with a note) and PNG images (strictly decoded, signature, byte size and pixel size
checked, then re-encoded) are shown. HTML, JavaScript, SVG, markdown and LaTeX outputs never are.
The graded run's outputs go through the same filter. A missing or unreadable notebook gives a
note, never an error page.

Like :mod:`staff.grading.review.model_answers` it is registered by
``jupyter/nbconvert/templates/formgrade/conf.json`` (key ``890-...``: it runs before the model
answers, which then go between the answer and this panel), so it reaches the formgrader only and
never the students' feedback.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import html
import json
import re
import struct
from functools import lru_cache
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor

from course import variant
from staff.grading.review.model_answers import grading_page_source, is_manually_graded
from staff.grading.student_text import inert_html

#: Limits on what a submitted notebook can put on the TA's page.
MAX_NOTEBOOK_BYTES = 64 * 2**20  # larger is not read at all (a 300-answer session stays fast)
MAX_TEXT_CHARS = 6_000  # per cell and side; the rest is cut with a note
MAX_IMAGES = 4  # per cell and side
MAX_PNG_BYTES = 2 * 2**20  # well above a matplotlib figure's size (docs/scaling.md)
MAX_PNG_PIXELS = 4_000  # width and height
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

LABEL = "As submitted (the student's own run)"
DIFFERS = (
    "The graded run's output differs from what the student submitted: the grader re-ran the "
    "notebook (with smaller settings where the assignment has them). Grade the answer against "
    "the submitted numbers."
)
SAME = "The graded run showed the same."
NOT_VERIFIED = "outputs as saved in the student's notebook; the grader did not produce them"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")

CSS = """
details.submitted-outputs { margin: -10px 0 20px 0; }
details.submitted-outputs > summary { cursor: pointer; display: list-item; }
details.submitted-outputs > summary .source { float: right; font-size: 85%; opacity: .75; }
details.submitted-outputs .pair { display: flex; gap: 12px; margin-bottom: 8px; }
details.submitted-outputs .pair > div { flex: 1 1 0; min-width: 0; }
details.submitted-outputs pre { max-height: 24em; overflow: auto; white-space: pre-wrap; font-size: 85%; }
details.submitted-outputs img { max-width: 100%; height: auto; border: 1px solid #ddd; }  /* not formgrade.css's red */
details.submitted-outputs .differs { color: #8a6d3b; font-weight: bold; }
details.submitted-outputs .omitted { font-style: italic; opacity: .8; }
"""


REFERS_TO = ("course", "refers_to")  # where a question cell's metadata names its code cells


def refers_to(cell: nbformat.NotebookNode) -> list[str]:
    """The code cells a question cell's metadata names (``course.refers_to``), each once, in order."""
    names = cell.metadata.get(REFERS_TO[0], {}).get(REFERS_TO[1], [])
    return list(dict.fromkeys(n for n in names if isinstance(n, str)))


@lru_cache(maxsize=32)
def _questions(path: str, mtime_ns: int) -> dict[str, list[str]]:
    """``{answer grade_id: [code cells it refers to]}`` of one source notebook (cached until it
    changes); a name that is no code cell of the notebook is dropped (the course's test of every
    question fails on it first)."""
    notebook = nbformat.read(path, as_version=4)
    code = {_key(c) for c in notebook.cells if c.cell_type == "code"} - {None}
    return {
        cell.metadata["nbgrader"]["grade_id"]: [n for n in refers_to(cell) if n in code]
        for cell in notebook.cells
        if is_manually_graded(cell)
    }


def questions(source: Path) -> dict[str, list[str]]:
    return _questions(str(source), source.stat().st_mtime_ns)


def _key(cell) -> str | None:
    """A cell's nbgrader grade_id, else its cell id (whatever types a hostile notebook has)."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    grade_id = nbg.get("grade_id") if isinstance(nbg, dict) else None
    key = (
        grade_id
        if isinstance(grade_id, str) and grade_id
        else cell.get("id")
        if isinstance(cell, dict)
        else None
    )
    return key if isinstance(key, str) else None


def _text(value) -> str:
    """nbformat's multiline strings: a string or a list of strings (anything else: nothing)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return ""


class Unreadable(Exception):
    """The submitted notebook cannot be shown (the message says why, for the TA)."""


def read_notebook_cells(path: Path) -> list[dict]:
    """The cells of a submitted notebook, parsed as plain JSON (size-limited): nothing in it is
    executed or trusted; every cell a dict, nothing else checked."""
    try:
        size = path.stat().st_size
    except OSError as error:
        raise Unreadable(f"missing ({error.strerror or error})") from None
    if size > MAX_NOTEBOOK_BYTES:
        raise Unreadable(
            f"too large to show ({size / 2**20:.0f} MB; the limit is {MAX_NOTEBOOK_BYTES // 2**20} MB)"
        )
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as error:
        raise Unreadable(f"not a readable notebook ({type(error).__name__})") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise Unreadable("not a notebook (no list of cells)")
    return [cell for cell in cells if isinstance(cell, dict)]


def read_outputs(path: Path) -> dict[str, list]:
    """``{grade_id or cell id: outputs}`` of the code cells of a submitted notebook (first cell of
    a name wins)."""
    found: dict[str, list] = {}
    for cell in read_notebook_cells(path):
        key = _key(cell)
        if key and key not in found and cell.get("cell_type") == "code":
            outputs = cell.get("outputs")
            found[key] = [o for o in outputs if isinstance(o, dict)] if isinstance(outputs, list) else []
    return found


def read_markdown(path: Path) -> dict[str, str]:
    """``{grade_id or cell id: text}`` of the markdown cells of a submitted notebook (the
    students' written answers among them; first cell of a name wins)."""
    found: dict[str, str] = {}
    for cell in read_notebook_cells(path):
        key = _key(cell)
        if key and key not in found and cell.get("cell_type") == "markdown":
            found[key] = _text(cell.get("source"))
    return found


def output_text(outputs: list) -> str:
    """Everything a cell's outputs show as text (streams, plain-text results, errors)."""
    texts = []
    for output in outputs:
        if output.get("output_type") == "stream":
            texts.append(_text(output.get("text")))
        elif isinstance(output.get("data"), dict):
            texts.append(_text(output["data"].get("text/plain")))
    return _clean("\n".join(texts))


def png(value) -> bytes | str:
    """The decoded PNG, or why it is not shown: strict base64, PNG signature and header, limits."""
    encoded = "".join(_text(value).split())
    if len(encoded) > MAX_PNG_BYTES * 4 // 3 + 4:
        return f"image not shown: larger than {MAX_PNG_BYTES // 2**20} MB"
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return "image not shown: not valid base64"
    if len(data) < 24 or not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        return "image not shown: not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    if not (0 < width <= MAX_PNG_PIXELS and 0 < height <= MAX_PNG_PIXELS):
        return f"image not shown: {width} x {height} pixels (the limit is {MAX_PNG_PIXELS})"
    return data


def _clean(text: str) -> str:
    """Without terminal colours, line ends as newlines (other control characters are shown, by
    :func:`_pre`)."""
    return _ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def _pre(text: str) -> str:
    """The text as text, its lines kept as character references (the panel is an HTML block of a
    markdown cell, which a blank line would end, and markdown would then parse the rest; nothing
    else of it is markup either: :func:`~staff.grading.student_text.inert_html`); the panel's
    class keeps MathJax from a student's ``$``."""
    return f"<pre>{inert_html(text, None, lines=True)}</pre>"


def render(outputs: list) -> tuple[list[str], tuple]:
    """HTML pieces for a cell's outputs (safe kinds only, limited), and a fingerprint of what they
    show, to compare the two runs."""
    pieces, shown, budget, images = [], [], MAX_TEXT_CHARS, 0
    for output in outputs:
        kind = output.get("output_type")
        data = output.get("data") if isinstance(output.get("data"), dict) else {}
        text, image, omitted = "", None, ""
        if kind == "stream":
            text = _text(output.get("text"))
        elif kind == "error":
            trace = output.get("traceback")
            trace = "\n".join(t for t in trace if isinstance(t, str)) if isinstance(trace, list) else ""
            text = trace or f"{_text(output.get('ename'))}: {_text(output.get('evalue'))}"
        elif kind in ("execute_result", "display_data"):
            if "image/png" in data:
                image = png(data["image/png"])
            elif "text/plain" in data:
                text = _text(data["text/plain"])
            else:
                omitted = ", ".join(sorted(str(k) for k in data)[:5]) or "empty"
        if isinstance(image, bytes):
            if images >= MAX_IMAGES:
                pieces.append(f'<p class="omitted">further images not shown (at most {MAX_IMAGES})</p>')
                continue
            images += 1
            shown.append(("image", hashlib.sha256(image).hexdigest()))
            pieces.append(
                f'<img alt="output image" src="data:image/png;base64,{base64.b64encode(image).decode()}">'
            )
        elif isinstance(image, str):
            pieces.append(f'<p class="omitted">{html.escape(image)}</p>')
        elif omitted:
            pieces.append(
                f'<p class="omitted">output not shown (only text and PNG are): {inert_html(omitted)}</p>'
            )
        elif text:
            text = _clean(text)
            shown.append(("text", text))
            if budget <= 0:
                continue
            cut = text[:budget]
            budget -= len(cut)
            pieces.append(_pre(cut))
            if len(cut) < len(text):
                pieces.append(
                    f'<p class="omitted">truncated: {len(text) - len(cut):,} more characters not shown</p>'
                )
    return pieces or ['<p class="omitted">no output</p>'], tuple(shown)


def _side(title: str, pieces: list[str], css: str) -> str:
    return (
        f'<div class="{css}"><h5><strong>{html.escape(title)}</strong></h5>\n'
        + "\n".join(pieces)
        + "\n</div>"
    )


def compare(name: str, submitted: list | None, graded: list | None) -> str:
    """One cell a question refers to: the submitted outputs beside the graded run's, and whether they differ."""
    graded_pieces, graded_shown = (
        render(graded)
        if graded is not None
        else (['<p class="omitted">no such cell in the graded notebook</p>'], None)
    )
    if submitted is None:
        mine, note = ['<p class="omitted">no such cell in the submitted notebook</p>'], ""
    elif not submitted:
        mine, note = (
            ['<p class="omitted">no output: the student did not run this cell before submitting</p>'],
            "",
        )
    else:
        mine, shown = render(submitted)
        note = (
            f'<p class="differs">{html.escape(DIFFERS)}</p>'
            if shown != graded_shown
            else f'<p class="same">{html.escape(SAME)}</p>'
        )
    return (
        f'<div class="submitted-cell" data-cell="{html.escape(name)}"><p>Cell <code>{html.escape(name)}</code></p>\n'
        f'{note}\n<div class="pair">\n{_side(LABEL, mine, "as-submitted")}\n'
        f"{_side('Graded run (what the grader re-executed)', graded_pieces, 'graded-run')}\n</div>\n</div>"
    )


#: The setup cell, whose output names the variant the student's own run used (course.variant.mine).
SETUP_CELL = "setup"


def printed_variant(outputs: list | None) -> str | None:
    """The variant line the student's setup cell printed ("Your variant of student ..."), if any."""
    for line in output_text(outputs or []).splitlines():
        if line.startswith(variant.PRINTED):
            return line.removeprefix("Your ").split(" (", 1)[0].strip()
    return None


def variant_note(assignment: str, student: str, submitted: dict[str, list]) -> str:
    """The student's variant as the course computes it from their id, and whether their own run
    printed the same (a run on another id's variant has another student's numbers)."""
    if assignment not in variant.CHOICES:
        return ""
    expected = variant.of(assignment, variant.graded_as(student)).describe()
    note = f"<p class=\"variant\">This student's {inert_html(expected)} (from their id: the numbers in the answers should be this variant's).</p>"
    printed = printed_variant(submitted.get(SETUP_CELL))
    if printed is None:
        return (
            note
            + '<p class="differs variant-unknown">The submitted setup cell shows no variant line (not run, or its output cleared).</p>'
        )
    if printed != expected:
        return note + (
            f'<p class="differs variant-other">The student\'s own run printed another one: {inert_html(printed)}. '
            "Its numbers are not this student's.</p>"
        )
    return note


def panel(grade_id: str, origin: str, body: str) -> nbformat.NotebookNode:
    """A markdown cell (no nbgrader metadata: nothing to grade) holding one HTML block with no blank
    line in it (text is on one line each, see :func:`_pre`), so markdown never parses its content."""
    text = (
        f'<details class="panel panel-info submitted-outputs tex2jax_ignore" open '
        f'data-grade-id="{html.escape(grade_id)}">\n'
        f'<summary class="panel-heading"><strong>{html.escape(LABEL)}</strong>'
        f'<span class="source">{inert_html(origin)}: {NOT_VERIFIED}</span></summary>\n'
        f'<div class="panel-body">\n{body}\n</div>\n</details>'
    )
    return nbformat.v4.new_markdown_cell("\n".join(line for line in text.split("\n") if line.strip()))


class AddSubmittedOutputs(Preprocessor):
    """After each manually graded answer that refers to code cells, their submitted outputs beside the
    graded run's (formgrader only: registered by ``jupyter/nbconvert/templates/formgrade/conf.json``)."""

    def preprocess(self, nb, resources):
        student = resources.get("student")
        page = grading_page_source(resources, self.log, "submitted outputs") if student else None
        if page is None:
            return nb, resources
        assignment, notebook, source = page
        referred = questions(source)
        wanted = {g: n for g, n in referred.items() if n}
        if not any(is_manually_graded(c) and c.metadata.nbgrader.grade_id in wanted for c in nb.cells):
            return nb, resources
        submitted_root = source.parents[2] / "submitted"
        path = submitted_root / student / assignment / f"{notebook}.ipynb"
        origin = f"submitted/{student}/{assignment}/{notebook}.ipynb"
        try:
            if submitted_root.resolve() not in path.resolve().parents:
                raise Unreadable("outside the course's submitted/ folder")
            submitted, problem = read_outputs(path), ""
        except Unreadable as error:
            submitted, problem = (
                {},
                f"The submitted notebook {origin} is {error}: only the graded run is shown.",
            )
            self.log.warning("%s", problem)
        graded = {}
        for cell in nb.cells:
            if cell.cell_type == "code" and _key(cell) and _key(cell) not in graded:
                graded[_key(cell)] = list(cell.get("outputs", []))
        cells = []
        for cell in nb.cells:
            cells.append(cell)
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if is_manually_graded(cell) and grade_id in wanted:
                if problem:
                    body = f'<p class="differs unreadable">{inert_html(problem, None)}</p>'
                else:
                    body = variant_note(assignment, student, submitted) + "\n".join(
                        compare(name, submitted.get(name), graded.get(name)) for name in wanted[grade_id]
                    )
                cells.append(panel(grade_id, origin, body))
        resources.setdefault("inlining", {}).setdefault("css", []).append(CSS)
        nb.cells = cells
        return nb, resources
