"""The formgrader shows, under a free-text answer, the outputs the student submitted for the cells
the question refers to (its source cell's metadata ``course.refers_to``), beside the graded run's (staff/grading/review/submitted_outputs.py): rendered by
nbgrader's real ``formgrade`` template on crafted courses, hostile outputs included. The browser
view of a graded sample is tests/e2e/test_formgrader.py."""

from __future__ import annotations

import base64
import html as htmllib
import re
import struct
import zlib

import nbformat
import pytest
from nbconvert.exporters import HTMLExporter
from nbgrader.server_extensions.formgrader.handlers import template_path

from course import variant
from staff import course_dir
from staff.grading.review import formgrader, model_answers, submitted_outputs
from staff.grading.review.submitted_outputs import AddSubmittedOutputs

ASSIGNMENT, STUDENT = "a1", "mallory"


def _png(width: int = 2, height: int = 2, junk: bytes = b"") -> bytes:
    """A real PNG (grey pixels), or with ``junk`` a header declaring any size."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    body = junk or zlib.compress(rows)
    return (
        submitted_outputs.PNG_SIGNATURE
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", body)
        + chunk(b"IEND", b"")
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _code(grade_id: str, outputs=()) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("print('run me')", id=grade_id, outputs=list(outputs))
    cell.metadata.nbgrader = {
        "grade_id": grade_id,
        "locked": True,
        "solution": False,
        "grade": False,
        "schema_version": 3,
    }
    return cell


def _answer(grade_id: str, question: str, refers_to=()) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(
        f"{question}\n\n### BEGIN SOLUTION\nThe model answer of {grade_id}, "
        f"naming *decoy* in the solution only.\n### END SOLUTION",
        id=grade_id,
    )
    cell.metadata.nbgrader = {
        "grade_id": grade_id,
        "solution": True,
        "grade": True,
        "locked": False,
        "points": 2,
        "schema_version": 3,
    }
    if refers_to:
        cell.metadata.course = {"refers_to": list(refers_to)}
    return cell


def _stream(text: str) -> dict:
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def _display(data: dict) -> dict:
    return nbformat.v4.new_output("display_data", data=data)


QUESTIONS = [
    _answer(
        "q_speed",
        "Read the speed-up off your table and your figure under exercise 1.",
        refers_to=["experiment", "figure", "experiment", "not_a_cell"],
    ),
    _answer("q_none", "Explain in your own words (the text's *experiment* is no reference)."),
]
HOSTILE = [
    _display({"text/html": "<script>alert('html')</script>", "text/plain": "plain fallback <b>bold?</b>"}),
    _display({"application/javascript": "alert('js')"}),
    _display({"image/svg+xml": "<svg onload=\"alert('svg')\"></svg>"}),
    _display({"text/markdown": "[click](javascript:alert('md'))"}),
    _stream("<img src=x onerror=alert('stream')> costs $x^2$\n\n<b>after a blank line</b>\n"),
    _display({"image/png": _b64(_png(9000, 9000, junk=b"x"))}),
    _display({"image/png": _b64(_png(junk=b"x" * (3 * 2**20)))}),
    _display({"image/png": "not base64 at all!!"}),
    _display({"image/png": _b64(b"GIF89a" + b"\x00" * 40)}),
    _stream("\x1b[31mred\x1b[0m " + "y" * 50_000),
]


def _notebook(cells) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata.kernelspec = {"name": "python3", "language": "python", "display_name": "Python 3"}
    return nb


@pytest.fixture
def course(tmp_path):
    """A course with a source notebook, the graded run (autograded/) and the student's notebook
    (submitted/) with hostile outputs in the named cell ``experiment``."""

    def write(folder: str, experiment, figure) -> None:
        path = tmp_path / folder / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(
            _notebook([_code("experiment", experiment), _code("figure", figure), *QUESTIONS]), path
        )

    (tmp_path / "source" / ASSIGNMENT).mkdir(parents=True)
    nbformat.write(
        _notebook([_code("experiment"), _code("figure"), *QUESTIONS]),
        tmp_path / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
    )
    figure = [_display({"image/png": _b64(_png()), "text/plain": "<Figure>"})]
    write(f"autograded/{STUDENT}", [_stream("speed-up 1.2x (graded run)\n")], figure)
    write(f"submitted/{STUDENT}", [_stream("speed-up 7.1x (my run)\n"), *HOSTILE], figure)
    return tmp_path


def render(
    root, monkeypatch, template: str = "formgrade", student: str = STUDENT, assignment: str = ASSIGNMENT
) -> str:
    """The grading page's HTML, as nbgrader's SubmissionHandler renders it."""
    monkeypatch.setenv("JUPYTER_PATH", str(formgrader.JUPYTER_DATA))
    exporter = HTMLExporter(template_name=template, extra_template_basedirs=[template_path])
    resources = {
        "assignment_id": assignment,
        "notebook_id": assignment,
        "student": student,
        "submission_id": "x",
        "index": 0,
        "total": 1,
        "base_url": "",
        "last_name": "M",
        "first_name": "M",
        "notebook_path": "x",
    }
    page, _ = exporter.from_filename(
        str(root / "autograded" / STUDENT / assignment / f"{assignment}.ipynb"), resources=resources
    )
    return page


def _panels(page: str) -> dict[str, str]:
    """``{grade_id: panel HTML}`` (the page as nbconvert serialises it: attributes sorted, entities
    of plain characters written out)."""
    return dict(
        re.findall(
            r'<details class="panel panel-info submitted-outputs tex2jax_ignore" data-grade-id="(\w+)"'
            r' open="">(.*?)</details>',
            page,
            re.S,
        )
    )


def test_a_named_cell_is_shown_as_submitted_beside_the_graded_run(course, monkeypatch):
    page = render(course, monkeypatch)
    panels = _panels(page)
    assert list(panels) == ["q_speed"], "only the question whose metadata refers to cells gets a panel"
    speed = panels["q_speed"]
    assert "As submitted (the student's own run)" in speed
    cells = re.findall(r'data-cell="(\w+)"', speed)
    assert cells == ["experiment", "figure"], "the metadata's code cells, in order, once each; not the decoy"
    experiment = speed.split('data-cell="figure"')[0]
    mine, graded = experiment.split('class="graded-run"')
    assert "speed-up 7.1x (my run)" in mine and "speed-up 1.2x (graded run)" in graded
    assert "speed-up 7.1x" not in graded
    assert submitted_outputs.DIFFERS in htmllib.unescape(experiment)
    figure = speed.split('data-cell="figure"')[1]
    assert submitted_outputs.SAME in htmllib.unescape(figure) and submitted_outputs.DIFFERS not in figure
    assert figure.count(f"data:image/png;base64,{_b64(_png())}") == 2  # the same real PNG on both sides
    # The page order: the answer, its model answer, then what the student submitted.
    answer, model, shown = (
        page.index(s)
        for s in (
            'id="q_speed"',
            'class="panel panel-success model-answer"',
            'submitted-outputs tex2jax_ignore" data-grade-id="q_speed"',
        )
    )
    assert answer < model < shown


def test_hostile_outputs_are_never_rendered_as_markup(course, monkeypatch):
    page = render(course, monkeypatch)
    speed = _panels(page)["q_speed"]
    for payload in ("alert('html')", "alert('js')", "alert('svg')", "javascript:alert", "<img src=x"):
        assert payload not in page, payload  # neither in the panel nor anywhere on the page
    assert "&lt;img src=x onerror=alert('stream')&gt;" in speed, "a stream's text, escaped"
    assert "plain fallback &lt;b&gt;bold?&lt;/b&gt;" in speed, "text/plain instead of the HTML"
    assert "&lt;b&gt;after a blank line&lt;/b&gt;" in speed, "a blank line does not end the HTML block"
    assert "<svg" not in speed and "<script" not in speed
    assert re.search(r"<pre>[^<]*costs \$x\^2\$", speed), (
        "a student's formula stays text (MathJax skips <pre>)"
    )
    assert speed.count("output not shown (only text and PNG are)") == 3  # javascript, svg, markdown
    text = htmllib.unescape(re.sub(r"<[^>]+>", " ", speed))
    assert "image not shown: 9000 x 9000 pixels" in text
    assert "image not shown: larger than 2 MB" in text
    assert "image not shown: not valid base64" in text
    assert "image not shown: not a PNG" in text
    assert "\x1b" not in speed and "red y" in text
    assert re.search(r"truncated: [\d,]+ more characters not shown", text)
    assert len(speed) < 60_000, "a huge output does not reach the page whole"


def test_a_missing_or_unreadable_submission_gives_a_note(course, monkeypatch):
    submitted = course / "submitted" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    for content, reason in (
        (None, "is missing"),
        (b"\x00\xff{not json", "is not a readable notebook"),
        (b"[1, 2]", "is not a notebook"),
        (b'{"cells": {"a": 1}}', "is not a notebook"),
    ):
        if content is None:
            submitted.unlink()
        else:
            submitted.write_bytes(content)
        speed = _panels(render(course, monkeypatch))["q_speed"]
        assert reason in speed and "only the graded run is shown" in speed, (reason, speed[:300])


def test_a_cell_submitted_without_outputs_says_so(course, monkeypatch):
    submitted = course / "submitted" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(submitted, as_version=4)
    nb.cells[0].outputs = []
    del nb.cells[1]  # the figure's cell deleted: matched by nothing
    nbformat.write(nb, submitted)
    speed = _panels(render(course, monkeypatch))["q_speed"]
    assert "did not run this cell before submitting" in speed
    assert "no such cell in the submitted notebook" in speed


def test_cells_are_matched_by_grade_id_then_cell_id(course, monkeypatch):
    """A student's notebook whose nbgrader metadata is gone still shows its outputs by cell id; a
    cell claiming another's grade_id after the real one does not replace it."""
    submitted = course / "submitted" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(submitted, as_version=4)
    nb.cells[0].metadata = {}
    impostor = _code("experiment", [_stream("impostor output\n")])
    impostor.id = "impostor"  # its grade_id claims the cell, its id is its own
    nb.cells.append(impostor)
    nbformat.write(nb, submitted)
    speed = _panels(render(course, monkeypatch))["q_speed"]
    assert "speed-up 7.1x (my run)" in speed and "impostor output" not in speed


def test_a_student_id_cannot_point_outside_submitted(course, monkeypatch):
    (course / "outside" / ASSIGNMENT).mkdir(parents=True)
    (course / "outside" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").write_bytes(
        (course / "submitted" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes()
    )
    speed = _panels(render(course, monkeypatch, student="../outside"))["q_speed"]
    assert "outside the course" in speed and "7.1x" not in speed


def test_registered_for_the_grading_page_only_before_the_model_answers(monkeypatch):
    """Like the model answers: nbgrader's ``formgrade`` template gets it, its ``feedback`` template
    never does, even with the formgrader's JUPYTER_PATH (a terminal in its JupyterLab)."""
    monkeypatch.setenv("JUPYTER_PATH", str(formgrader.JUPYTER_DATA))

    def preprocessors(template: str) -> list[type]:
        exporter = HTMLExporter(template_name=template, extra_template_basedirs=[template_path])
        return [type(p) for p in exporter._preprocessors]

    grading = preprocessors("formgrade")
    assert grading.index(AddSubmittedOutputs) < grading.index(model_answers.AddModelAnswers)
    assert AddSubmittedOutputs not in preprocessors("feedback")


def test_a_students_copy_of_the_metadata_is_never_read(course, monkeypatch):
    """The cells come from source/ only: a submission (and so its graded run) that points a question
    at other cells changes nothing."""
    for folder in ("submitted", "autograded"):
        path = course / folder / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.metadata.course = {"refers_to": ["figure"]}
        nbformat.write(nb, path)
    panels = _panels(render(course, monkeypatch))
    assert list(panels) == ["q_speed"]
    assert re.findall(r'data-cell="(\w+)"', panels["q_speed"]) == ["experiment", "figure"]


def _course_questions(assignment: str) -> list[nbformat.NotebookNode]:
    source = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
    return [c for c in source.cells if model_answers.is_manually_graded(c)]


@pytest.mark.parametrize("assignment", course_dir.assignments())
def test_every_course_question_refers_to_code_cells_of_the_release(assignment):
    """Every free-text question of the course says in its source metadata which code cells it is
    about: each a code cell of the released notebook (so a submission has it), in the order the
    question uses them. Its text says where they are in words, never as a grade id (the old
    ``*grade_id*`` convention, which students cannot see)."""
    release = nbformat.read(course_dir.release_notebook(assignment), as_version=4)
    code = {course_dir.nbgrader(c).get("grade_id") for c in release.cells if c.cell_type == "code"}
    referred = submitted_outputs.questions(course_dir.source_notebook(assignment))
    for cell in _course_questions(assignment):
        grade_id = cell.metadata.nbgrader.grade_id
        names = submitted_outputs.refers_to(cell)
        assert names, f"{assignment}: question {grade_id} has no metadata course.refers_to"
        assert set(names) <= code, (assignment, grade_id, sorted(set(names) - code))
        assert referred[grade_id] == names
        question = cell.source.split(model_answers.BEGIN)[0]
        shown = [n for n in code if n and f"*{n}*" in question]
        assert not shown, f"{assignment}: question {grade_id} names cells by grade id: {shown}"


def test_the_questions_of_assignments_1_to_4_refer_to_the_cells_they_ask_about():
    referred = {}
    for assignment in ("01_attention", "02_distilbert", "03_visualising_attention", "04_finetuning"):
        referred.update(submitted_outputs.questions(course_dir.source_notebook(assignment)))
    assert referred["q_values"] == ["plot_self_attention"]
    assert referred["q_order"] == ["plot_shuffle"]
    assert referred["q_cls"] == ["plot_attention", "sdpa_experiment"]
    assert referred["q_limits"] == ["show_token", "q_limits_experiment"]
    assert referred["q_scratch"] == ["scratch"]


@pytest.mark.parametrize(
    "assignment", ["01_attention", "02_distilbert", "03_visualising_attention", "04_finetuning"]
)
def test_every_model_answer_splits_its_points(assignment):
    """The TA under each question reads what earns each point: the model answer ends with a
    ``**Points.**`` paragraph whose ``N point(s):`` parts add up to the question's points."""
    for cell in _course_questions(assignment):
        answer = model_answers.solution_text(cell)
        assert "**Points.**" in answer, (
            f"{assignment}: the model answer of {cell.metadata.nbgrader.grade_id} has no split"
        )
        split = answer.split("**Points.**")[1]
        points = sum(int(n) for n in re.findall(r"(\d+) points?:", split))
        assert points == cell.metadata.nbgrader.points, (assignment, cell.metadata.nbgrader.grade_id, points)


@pytest.mark.parametrize(
    "printed, shown",
    [
        ("own", None),
        ("other", "The student's own run printed another one: variant of student 'someone-else'"),
        (None, "The submitted setup cell shows no variant line"),
    ],
)
def test_the_page_shows_the_students_variant_and_whether_their_run_used_it(
    tmp_path, monkeypatch, printed, shown
):
    """An assignment with variants (course/variant.py): every panel starts with the variant the
    course computes from the student's id, and says when the submitted run printed another."""
    assignment = "01_attention"
    own = variant.of(assignment, STUDENT)
    line = {
        "own": f"Your {own.describe()}\n",
        "other": f"Your {variant.of(assignment, 'someone-else').describe()} (kept in .course-student)\n",
        None: "setup (local): seed 0\n",
    }[printed]
    question = _answer("q_scaling", "Quote your table.", refers_to=["experiment"])
    for folder, setup in (
        ("source", []),
        (f"autograded/{STUDENT}", []),
        (f"submitted/{STUDENT}", [_stream(line)]),
    ):
        path = tmp_path / folder / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(
            _notebook([_code("setup", setup), _code("experiment", [_stream("1.5\n")]), question]), path
        )
    panel = htmllib.unescape(_panels(render(tmp_path, monkeypatch, assignment=assignment))["q_scaling"])
    assert f"This student's {own.describe()} (from their id" in panel
    if shown is None:
        assert "another one" not in panel and "no variant line" not in panel
    else:
        assert shown in panel
