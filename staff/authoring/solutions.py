"""Worked solutions to publish once grades are out: ``make solutions`` (``python -m staff solutions``).

For each assignment, ``solutions/<assignment>/<assignment>.ipynb`` and an ``.html`` rendering of it
(figures and the architecture diagram embedded: one file to post on the LMS): the source notebook
with its solution code (the ``### BEGIN/END SOLUTION`` lines removed), the model answers of the
free-text questions, and its outputs. Each graded hidden-test cell becomes a one-line note of its
points; no hidden test, hidden fixture, held-out text or gradebook data is in either file.

Why the outputs cannot hold a secret: the hidden tests are taken out before the notebook runs, and
it runs in a fresh kernel inside a scratch copy of the student bundle (:mod:`publish`: the student
package, data and *public* fixtures, ``COURSE_FIXTURES`` pointing there), exactly as a student runs
it, so a hidden fixture is not even reachable through the course's loaders. Why it is checked
anyway: a hidden-test line pasted into a solution, a held-out sentence quoted in a model answer or
a hidden value typed into a cell would pass through; :func:`leaks` finds what it can cheaply, in the
notebook and in the HTML, and :func:`build` refuses to write a solution that has any.
"""

from __future__ import annotations

import html
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
import numpy as np
from nbformat import NotebookNode

from course import fresh_run, paths, settings, submission, variant
from staff import course_dir
from staff.authoring import publish, release
from staff.grading.results import feedback
from staff.grading.review.model_answers import BEGIN, END, is_manually_graded

OUT = paths.ROOT / "solutions"
HELDOUT = Path(__file__).parent / "heldout"
#: Text shorter than this (a few words, a token) may recur by chance (as in tests/staff/authoring/test_publish.py).
MIN_TEXT = 30
#: A number printed with fewer significant digits (0.5, 1.25) says nothing about a hidden value.
MIN_DIGITS = 7
#: Seconds a cell may run. Not CELL_TIMEOUT (autograde's 300): here training runs uncapped, as a student's
#: own run does, and assignment 4's fine-tuning cell can take longer than that (docs/scaling.md); this only
#: stops a hang.
CELL_TIMEOUT = 3600
MARKERS = (feedback.BEGIN, feedback.END, "hidden=True")
HEADER = (
    "**Worked solution**, published after grading: the instructor's code and model answers, with the "
    "outputs of one run (offline, on CPU, from the public course files only). The hidden tests are "
    "graded outside your notebook and are not included."
)
VARIANT_NOTE = (
    "It runs the worked example's {describe}. Each student ran a variant of their own (the setup cell "
    "printed it), so their numbers differ from these; the reasoning does not."
)
_NUMBER = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")
#: Assignments whose model answers quote only numbers the worked solution's own run prints (issue 51: a
#: model answer quoted a stride table an older model printed): :func:`build` refuses to write one whose
#: model answers quote a decimal its outputs do not print (:func:`unprinted_numbers`); a machine's timings,
#: which every run prints anew, are quoted rounded ("about 46 ms"). The others' model answers still quote
#: numbers worked out from the run (differences, ratios) or read off a figure, so are not held to it yet.
QUOTES_FROM_THE_RUN = frozenset({"01_attention", "07_question_answering"})
MODEL_ANSWER = "**Model answer.**"
_DECIMAL = re.compile(r"-?\d+\.\d+")


class SolutionError(RuntimeError):
    """A solution could not be built, or would leak; the message says which assignment, what and how to fix it."""


def _note(cell: NotebookNode, visible: str, cell_id: str) -> NotebookNode:
    """A hidden-test cell as the note that replaces it: its points and what its visible comment says."""
    said = " ".join(
        line.lstrip("#").strip()
        for line in visible.splitlines()
        if line.strip().startswith("#") and "(hidden tests: not shown)" not in line
    )
    said = re.sub(r"^Hidden tests? \([^)]*\):\s*", "", said).strip()
    points = course_dir.nbgrader(cell).get("points") or 0
    return nbformat.v4.new_markdown_cell(
        f"> **Hidden tests ({points:g} points)**, graded outside your notebook"
        + (f": {said}" if said else "."),
        id=cell_id,
    )


def _without_markers(source: str, label: str | None) -> str:
    """The solution regions kept, their delimiter lines removed (``BEGIN`` becomes ``label`` if any)."""
    lines = []
    for line in source.split("\n"):
        if BEGIN in line and label:
            lines.append(label)
        elif BEGIN not in line and END not in line:
            lines.append(line)
    return "\n".join(lines)


def _solution_cells(cell: NotebookNode) -> list[NotebookNode]:
    """What one source cell becomes in the worked solution (none, itself, or itself and a note)."""
    if course_dir.nbgrader(cell).get("grade_id") == submission.CELL_ID:
        return []  # "before you submit" has nothing to check in a worked solution (and would run it twice)
    visible, hidden = feedback.visible_part(cell.source)
    if hidden:
        has_code = any(line.strip() and not line.strip().startswith("#") for line in visible.splitlines())
        kept = [nbformat.v4.new_code_cell(visible, id=cell.id)] if has_code else []
        note_id = f"{cell.id}_note" if kept else cell.id  # stable ids, as in source/
        return kept + ([_note(cell, visible, note_id)] if course_dir.nbgrader(cell).get("grade") else [])
    if cell.cell_type == "markdown" and is_manually_graded(cell):
        label = "**Model answer.**"
        cell.source = (
            _without_markers(cell.source, label) if BEGIN in cell.source else f"{label} {cell.source}"
        )
    elif course_dir.nbgrader(cell).get("solution"):
        cell.source = _without_markers(cell.source, None)
    return [cell]


def solution_notebook(assignment: str) -> NotebookNode:
    """The source notebook as a worked solution, not yet run: no hidden test, no nbgrader metadata
    (it is not an assignment any more), the public address stamped as in the release."""
    nb = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
    release.StampPublicAddress().preprocess(nb, {"nbgrader": {"assignment": assignment}})
    header = HEADER
    if assignment in variant.CHOICES:
        header += " " + VARIANT_NOTE.format(describe=variant.of(assignment, variant.WORKED).describe())
    cells = [nbformat.v4.new_markdown_cell(header, id="worked_solution")]
    for cell in nb.cells:
        cells += _solution_cells(cell)
    for cell in cells:
        cell.metadata.pop("nbgrader", None)
    nb.cells = cells
    nb.metadata.pop("nbgrader", None)
    return nb


def execute(
    nb: NotebookNode, bundle: Path, assignment: str, timeout: int | None = CELL_TIMEOUT
) -> NotebookNode:
    """Run ``nb`` (in place) where a student would: ``bundle/<assignment>/``, a fresh kernel whose
    ``course`` package and fixtures are the bundle's (public only), not capped as under autograde."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    folder = bundle / assignment
    nbformat.write(nb, folder / f"{assignment}.ipynb")  # over the released one: what a student would open
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}  # the full run, as a student's
    env.update(
        {
            settings.FIXTURES_VARIABLE: str(bundle / "fixtures"),
            settings.STUDENT_VARIABLE: variant.WORKED,  # the variant the model answers quote
            "PYTHONPATH": str(bundle),
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        }
    )  # figures as outputs, even under Agg
    running = {}
    try:
        with tempfile.TemporaryDirectory(prefix="solutions-") as sockets:
            client = NotebookClient(
                nb,
                km=fresh_run.kernel_manager(Path(sockets)),
                timeout=timeout,
                resources={"metadata": {"path": str(folder)}},
            )
            client.on_cell_execute = lambda cell, cell_index: running.update(
                cell=cell.get("id", f"number {cell_index}")
            )
            client.execute(env=env, cleanup_kc=True)  # the kernel is shut down: its manager is ours
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as error:
        what = (
            f"{error.ename}: {error.evalue[:300]}"
            if isinstance(error, CellExecutionError)
            else f"still running after {timeout} s: give it longer with --cell-timeout"
            if isinstance(error, CellTimeoutError)
            else "the kernel died: out of memory?"
        )
        raise SolutionError(
            f"{assignment}: cell {running.get('cell', '?')} of the worked solution failed ({what}). The source notebook "
            f"must run top to bottom from the public course files (`make validate`); if someone is editing it, try "
            f"again when they are done"
        ) from None
    return nb


@dataclass(frozen=True)
class Secrets:
    """What an assignment's worked solution must not contain, each as cheap to look for as text."""

    assignment: str
    lines: frozenset[str]  # lines only in hidden-test regions (the release's own notion of secret)
    texts: frozenset[str]  # held-out text and the text stored in hidden fixtures
    names: frozenset[str]  # hidden fixtures' names that no public fixture has
    numbers: frozenset[float]  # hidden fixtures' floats that no public fixture has


def _fixture_values(root: Path) -> tuple[set[str], set[float]]:
    """The text (uint8 arrays, split into lines and fields) and the floats of every fixture below ``root``."""
    from safetensors.numpy import load_file

    texts, numbers = set(), set()
    for path in root.rglob("*.safetensors"):
        for array in load_file(str(path)).values():
            if array.dtype == np.uint8:
                texts.update(re.split(r"[\n\t]", bytes(array).decode("utf-8", errors="ignore")))
            elif array.dtype.kind == "f":
                numbers.update(array.astype(np.float64).ravel().tolist())
    return texts, numbers


def secrets(assignment: str, fixtures: Path | None = None) -> Secrets:
    fixtures = fixtures or paths.fixtures_dir()
    public_texts, public_numbers = _fixture_values(fixtures / "public")
    hidden_texts, hidden_numbers = _fixture_values(fixtures / "hidden" / assignment)
    heldout = {
        field
        for path in HELDOUT.iterdir()
        if path.suffix != ".md"
        for line in path.read_text().splitlines()
        for field in line.split("\t")
    }
    public_names = {p.stem for p in (fixtures / "public" / assignment).glob("*.safetensors")}
    return Secrets(
        assignment,
        frozenset(release.secret_lines(assignment, regions="HIDDEN TESTS")),
        frozenset(t.strip() for t in (hidden_texts - public_texts) | heldout if len(t.strip()) >= MIN_TEXT),
        frozenset(p.stem for p in (fixtures / "hidden" / assignment).glob("*.safetensors")) - public_names,
        frozenset(v for v in hidden_numbers - public_numbers if np.isfinite(v) and v != round(v)),
    )


def notebook_text(nb: NotebookNode, outputs: bool = True) -> str:
    """What a reader of the notebook sees as text: its sources and (unless not ``outputs``) its text
    outputs, not images' base64."""
    parts = []
    for cell in nb.cells:
        parts.append(cell.source)
        for output in cell.get("outputs", []) if outputs else []:
            parts.append(output.get("text", ""))
            parts += [
                v for k, v in output.get("data", {}).items() if k.startswith("text/") and isinstance(v, str)
            ]
            parts += output.get("traceback", [])
    return "\n".join(parts)


def html_text(page: str) -> str:
    """The HTML as read: tags (and the images' data inside them) dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]*>", "", page))


def _significant(token: str) -> int:
    return len(token.split("e")[0].split("E")[0].lstrip("-").replace(".", "").lstrip("0"))


def text_leaks(text: str, secret: Secrets, where: str) -> list[str]:
    """Hidden-test lines, held-out or hidden-fixture text and hidden fixtures' names in ``text``."""
    found = [f"{where}: the marker {m!r} (hidden tests)" for m in MARKERS if m in text]
    # Whole lines, as release.secret_lines tells them apart: a short hidden-test line such as
    # `case["expected"], atol=1e-8)` is also the tail of a longer visible one.
    lines = {line.strip() for line in text.splitlines()}
    found += [f"{where}: a hidden-test line: {line!r}" for line in sorted(secret.lines & lines)]
    found += [
        f"{where}: held-out or hidden-fixture text: {t[:60]!r}" for t in sorted(secret.texts) if t in text
    ]
    return found + [
        f"{where}: the hidden fixture name {n!r}"
        for n in sorted(secret.names)
        if f'"{n}"' in text or f"'{n}'" in text
    ]


def number_leaks(text: str, secret: Secrets, where: str) -> list[str]:
    """Hidden fixtures' values written in ``text`` to at least MIN_DIGITS significant digits."""
    tokens = {t for t in _NUMBER.findall(text) if _significant(t) >= MIN_DIGITS}
    hidden = {d: {f"{v:.{d - 1}e}" for v in secret.numbers} for d in {_significant(t) for t in tokens}}
    return [
        f"{where}: the hidden fixture value {t}"
        for t in sorted(tokens)
        if f"{float(t):.{_significant(t) - 1}e}" in hidden[_significant(t)]
    ]


def leaks(nb: NotebookNode, secret: Secrets, page: str | None = None) -> list[str]:
    """Why a worked solution (its notebook, and its HTML ``page``) must not be published; empty if it may be.
    Hidden values are looked for in what was written by hand (sources, model answers), not in outputs:
    those were computed where no hidden fixture could be read, so a hidden value there is one anybody
    computes from public inputs (assignment 3's attention views show the maps of sentences its
    hidden tests use too)."""
    notebook = f"{secret.assignment}.ipynb"
    found = text_leaks(notebook_text(nb), secret, notebook) + number_leaks(
        notebook_text(nb, False), secret, notebook
    )
    return found + (
        text_leaks(html_text(page), secret, f"{secret.assignment}.html") if page is not None else []
    )


def _decimals(text: str) -> set[str]:
    return set(_DECIMAL.findall(text.replace("\u2212", "-")))  # a typeset minus sign is a minus


def unprinted_numbers(nb: NotebookNode) -> list[str]:
    """The decimals (``66.7``, ``-2.04``) a model answer of the run notebook ``nb`` quotes that none of
    its text outputs prints, as ``"<cell id>: <number>"``; empty if every one is printed. A model answer
    is what follows ``**Model answer.**`` up to its ``**Points.**``; a minus sign must be printed too
    (an unsigned number may be quoted of a negative one), and a number is compared as written
    (``0.10`` is not ``0.1``: quote what the run prints)."""
    printed = {text for cell in nb.cells for text in _decimals(_outputs_text(cell))}
    printed |= {number.lstrip("-") for number in printed}
    missing = []
    for cell in nb.cells:
        if cell.cell_type != "markdown" or MODEL_ANSWER not in cell.source:
            continue
        answer = cell.source.split(MODEL_ANSWER, 1)[1].split("**Points.**", 1)[0]
        quoted = sorted(_decimals(answer), key=lambda number: answer.replace("\u2212", "-").index(number))
        missing += [f"{cell.get('id', '?')}: {number}" for number in quoted if number not in printed]
    return missing


def _outputs_text(cell: NotebookNode) -> str:
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", ""))
        parts += [
            v for k, v in output.get("data", {}).items() if k.startswith("text/") and isinstance(v, str)
        ]
    return "\n".join(parts)


def check_quotes(assignment: str, nb: NotebookNode) -> None:
    """Refuse (:class:`SolutionError`) a run worked solution of :data:`QUOTES_FROM_THE_RUN` whose model
    answers quote a number its outputs do not print: the answer predates the model or the code."""
    missing = unprinted_numbers(nb) if assignment in QUOTES_FROM_THE_RUN else []
    if missing:
        raise SolutionError(
            f"{assignment}: refused to write its worked solution, its model answers quote numbers this run does "
            f"not print: {', '.join(missing[:12])}{' ...' if len(missing) > 12 else ''}. Rewrite those answers "
            f"in the source notebook from what its cells print (run it in Jupyter), then run `make solutions ASSIGNMENT={assignment}` again"
        )


def render_html(nb: NotebookNode, title: str) -> str:
    from nbconvert import HTMLExporter

    page, _ = HTMLExporter(template_name="lab", embed_images=True).from_notebook_node(
        nb, resources={"metadata": {"name": title}}
    )
    return page


def write(assignment: str, nb: NotebookNode, out: Path, secret: Secrets | None = None) -> list[Path]:
    """Write one run solution and its HTML into ``out/<assignment>/``, or refuse (:class:`SolutionError`,
    nothing written) if either would leak."""
    secret = secret or secrets(assignment)
    page = render_html(nb, f"{assignment}: worked solution")
    problems = leaks(nb, secret, page)
    if problems:
        shown = "\n  ".join(problems[:10]) + (
            f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        )
        raise SolutionError(
            f"{assignment}: refused to write its worked solution, it would publish what students must never see:\n  "
            f"{shown}\nRemove it from the source notebook's visible or solution cells (hidden tests belong between "
            f"`{feedback.BEGIN}` and `{feedback.END}`, held-out text in staff/authoring/heldout/ only), then run "
            f"`make solutions` again"
        )
    folder = out / assignment
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / f"{assignment}.ipynb", folder / f"{assignment}.html"]
    for path, content in zip(written, (nbformat.writes(nb), page)):
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(content, encoding="utf-8")
        partial.replace(path)  # atomic: a half-written file is never in the folder to publish
    return written


def build(
    assignments: list[str] | None = None, out: Path = OUT, timeout: int | None = None, report=print
) -> tuple[list[Path], dict[str, str]]:
    """Worked solutions of ``assignments`` (default: all) into ``out``; returns the files written and
    what went wrong with the others, by assignment (one failing does not stop the rest; ``report`` says it at once)."""
    import time

    written, problems = [], {}
    with tempfile.TemporaryDirectory(prefix="course-solutions-") as scratch:
        bundle = publish.build(Path(scratch) / "bundle")  # what a student gets: public fixtures only
        for assignment in assignments or course_dir.assignments():
            start = time.monotonic()
            try:
                nb = execute(solution_notebook(assignment), bundle, assignment, timeout or CELL_TIMEOUT)
                check_quotes(assignment, nb)
                files = write(assignment, nb, out)
            except SolutionError as error:
                problems[assignment] = str(error)
                report(f"solutions: {assignment}: NOT written ({time.monotonic() - start:.0f} s): {error}")
                continue
            written += files
            report(
                f"solutions: wrote {', '.join(str(p.relative_to(out.parent)) for p in files)} "
                f"({time.monotonic() - start:.0f} s)"
            )
    return written, problems
