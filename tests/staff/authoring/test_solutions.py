"""make solutions: the worked solutions hold every solution, model answer and output, and nothing hidden.

The notebooks' shape is checked for every assignment (no kernel: cheap); assignment 1 is built for
real (about 30 s here), the others only by hand (`make solutions`: assignments 4 and 5 train).
"""

from __future__ import annotations

import copy
import re

import nbformat
import pytest
from safetensors.numpy import load_file

from course import paths
from staff import cli, course_dir
from staff.authoring import solutions
from staff.grading.review.model_answers import solution_text

ASSIGNMENTS = course_dir.assignments()
FIRST = ASSIGNMENTS[0]


def _source_cells(assignment: str):
    return nbformat.read(course_dir.source_notebook(assignment), as_version=4).cells


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_notebook_keeps_solutions_and_answers_and_drops_hidden_tests(assignment):
    nb = solutions.solution_notebook(assignment)
    by_id = {cell.id: cell for cell in nb.cells}
    text = solutions.notebook_text(nb)
    for marker in ("### BEGIN", "### END", "{{PUBLIC_REPO}}", "{{COLAB_URL}}"):
        assert marker not in text, f"{marker!r} left in the worked solution of {assignment}"
    assert not [cell.id for cell in nb.cells if "nbgrader" in cell.metadata]
    for cell in _source_cells(assignment):
        meta = course_dir.nbgrader(cell)
        if "### BEGIN HIDDEN TESTS" in cell.source and meta.get("grade"):
            note = by_id.get(cell.id) or by_id[f"{cell.id}_note"]
            assert note.cell_type == "markdown"
            assert (
                f"Hidden tests ({meta['points']:g} points)" in note.source and "graded outside" in note.source
            )
        elif meta.get("solution"):
            answer = [line.strip() for line in solution_text(cell).splitlines() if line.strip()]
            missing = [
                line for line in answer if line not in {s.strip() for s in by_id[cell.id].source.splitlines()}
            ]
            assert answer and not missing, f"{assignment}: solution of {cell.id} lacks {missing[:2]}"
            if cell.cell_type == "markdown" and meta.get("grade"):
                assert "**Model answer.**" in by_id[cell.id].source
    assert solutions.leaks(nb, solutions.secrets(assignment)) == []


@pytest.fixture(scope="module")
def secret():
    return solutions.secrets(FIRST)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Assignment 1 built for real, once: its folder in the output and the run notebook."""
    out = tmp_path_factory.mktemp("solutions")
    written, problems = solutions.build([FIRST], out=out, report=lambda line: None)
    assert problems == {}
    return out / FIRST, nbformat.read(written[0], as_version=4)


@pytest.mark.notebooks
def test_built_solution_has_outputs_figures_and_nothing_hidden(built, secret):
    folder, nb = built
    assert sorted(p.name for p in folder.iterdir()) == [f"{FIRST}.html", f"{FIRST}.ipynb"]
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(cell.execution_count for cell in code), "every code cell ran"
    outputs = [o for cell in code for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    figures = sum("image/png" in o.get("data", {}) for o in outputs)
    attachments = sum(len(cell.get("attachments") or {}) for cell in nb.cells)
    assert figures >= 1 and attachments >= 1
    page = (folder / f"{FIRST}.html").read_text()
    assert page.count("data:image/png;base64,") >= figures + attachments, "figures and diagram embedded"
    assert "attachment:" not in page
    assert "visible checks passed" in solutions.notebook_text(nb)
    assert solutions.leaks(nb, secret, page) == []


def _hidden_value(secret: solutions.Secrets) -> str:
    """A float of a hidden-only fixture of assignment 1, printed in full as Python does."""
    name = sorted(secret.names)[0]
    arrays = load_file(str(paths.fixtures_dir() / "hidden" / FIRST / f"{name}.safetensors"))
    return next(
        repr(v)
        for array in arrays.values()
        if array.dtype.kind == "f"
        for v in array.ravel().tolist()
        if v in secret.numbers
    )


def _heldout_line(secret: solutions.Secrets) -> str:
    text = (solutions.HELDOUT / "devils_dictionary_w-z.txt").read_text()
    return next(line for line in text.splitlines() if len(line.strip()) > 40)


INJECTIONS = {
    "hidden-test line": (lambda secret: sorted(secret.lines)[0], "a hidden-test line"),
    "held-out text": (_heldout_line, "held-out or hidden-fixture text"),
    "hidden fixture name": (
        lambda secret: f'load_cases("{FIRST}", "{sorted(secret.names)[0]}")',
        "the hidden fixture name",
    ),
    "hidden value": (lambda secret: f"expected {_hidden_value(secret)}", "the hidden fixture value"),
    "marker": (lambda secret: "### BEGIN HIDDEN TESTS", "the marker"),
}


def _injected(nb, kind: str, secret: solutions.Secrets):
    """``nb`` with one leak of ``kind`` in it, as if pasted into a solution or model answer."""
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb.cells if c.cell_type == "code")
    leak = INJECTIONS[kind][0](secret)
    cell.source += "\n" + leak
    return nb


@pytest.mark.parametrize("kind", INJECTIONS)
def test_each_kind_of_leak_is_found(secret, kind):
    nb = _injected(solutions.solution_notebook(FIRST), kind, secret)
    found = solutions.leaks(nb, secret)
    assert len(found) == 1 and found[0].startswith(f"{FIRST}.ipynb: {INJECTIONS[kind][1]}"), found


@pytest.mark.notebooks
def test_a_leak_is_refused_with_a_clear_message_and_nothing_written(built, secret, tmp_path):
    with pytest.raises(solutions.SolutionError) as error:
        solutions.write(FIRST, _injected(built[1], "hidden-test line", secret), tmp_path, secret)
    message = str(error.value)
    assert f"{FIRST}: refused to write" in message and "a hidden-test line" in message, message
    assert f"{FIRST}.ipynb" in message and f"{FIRST}.html" in message, "both files are checked"
    assert "make solutions" in message, "says how to go on"
    assert not list(tmp_path.iterdir()), "nothing written"


@pytest.mark.notebooks
def test_the_kernel_reaches_only_the_bundle_and_its_public_fixtures(tmp_path):
    """The notebook runs against the student bundle: `course` and the fixtures are the bundle's, and
    a hidden fixture cannot be loaded (so a hidden test could not even run)."""
    from staff.authoring import publish

    bundle = publish.build(tmp_path / "bundle")
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "import course, course.paths\nprint(course.__file__)\nprint(course.paths.fixtures_dir())",
                id="where",
            ),
            nbformat.v4.new_code_cell(
                f'from course.fixtures import load_cases\nload_cases("{FIRST}", "softmax", hidden=True)',
                id="hidden_load",
            ),
        ]
    )
    with pytest.raises(solutions.SolutionError, match=r"cell hidden_load .*FixtureError.*try again") as error:
        solutions.execute(nb, bundle, FIRST, timeout=60)
    assert "is missing" in str(error.value)
    printed = nb.cells[0].outputs[0].text.split()
    assert printed == [str(bundle / "course" / "__init__.py"), str(bundle / "fixtures")]


def test_command_line_and_make_target():
    args = cli.parser().parse_args(["solutions", FIRST, "--out", "x", "--cell-timeout", "60"])
    assert args.run is cli._solutions and args.assignments == [FIRST] and args.cell_timeout == 60
    makefile = (paths.ROOT / "Makefile").read_text()
    assert re.search(r"^solutions: setup ## .*\n\t\$\(STAFF\) solutions ", makefile, re.MULTILINE)
    assert re.search(r"^\.PHONY:.* solutions ", makefile, re.MULTILINE)
    assert "solutions/" in (paths.ROOT / ".gitignore").read_text().splitlines()


def _run_notebook(answer: str, printed: str) -> nbformat.NotebookNode:
    code = nbformat.v4.new_code_cell("print(table)", id="table")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    question = nbformat.v4.new_markdown_cell(
        f"**Question 2.** Quote the 12.5 you see.\n**Model answer.**\n{answer}\n\n**Points.** 0.5 point: 9.75.",
        id="q_windows",
    )
    return nbformat.v4.new_notebook(cells=[code, question])


def test_model_answers_may_quote_only_numbers_the_run_prints():
    printed = "stride 4: 66.7%  83.2%\nwindow 2  log p   -2.04  null  -0.03\n"
    # as printed, with a typeset minus sign, unsigned, or a percentage: all printed
    fine = _run_notebook("Exact match 66.7 %, F1 83.2 %; log p \u22122.04, and 0.03 above it.", printed)
    assert solutions.unprinted_numbers(fine) == []  # the question's 12.5 and the points' 9.75 are not quoted
    stale = _run_notebook("Exact match 66.7 %, F1 84.5 %, log p -0.03, 2.0 times, 0.030.", printed)
    assert solutions.unprinted_numbers(stale) == ["q_windows: 84.5", "q_windows: 2.0", "q_windows: 0.030"]
    assert solutions.unprinted_numbers(_run_notebook("log p -2.04", printed.replace("-2.04", "2.04"))) == [
        "q_windows: -2.04"  # a minus sign quoted must be printed
    ]
    held = next(iter(solutions.QUOTES_FROM_THE_RUN))
    with pytest.raises(
        solutions.SolutionError, match=r"quote numbers this run does not print: q_windows: 84\.5"
    ):
        solutions.check_quotes(held, stale)
    solutions.check_quotes(held, fine)
    solutions.check_quotes("not_held_to_it", stale)  # the other assignments still quote derived numbers
