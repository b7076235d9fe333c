"""The instructor's side of nbgrader in JupyterLab, in real Chromium: the Create Assignment panel
turns cells of a source notebook into a graded answer, autograded tests and a manually graded
answer, the metadata lands in the file, and releasing (nbgrader generate_assignment, as `make
release` runs it) picks the change up."""

from __future__ import annotations

import shutil

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from course import paths
from staff import course_dir
from staff.authoring import release
from staff.course_dir import CourseDir, nbgrader
from staff.grading.review import formgrader
from support import free_port

pytestmark = pytest.mark.notebooks


@pytest.fixture
def course(tmp_path) -> CourseDir:
    """A scratch course with one plain source notebook (no nbgrader metadata yet)."""
    folder = tmp_path / "course" / "source" / "demo"
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("Why is the answer 4?"),
        nbformat.v4.new_code_cell(
            "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"
        ),
        nbformat.v4.new_code_cell("assert double(2) == 4"),
    ]
    nbformat.write(nb, folder / "demo.ipynb")
    shutil.copy2(paths.ROOT / "nbgrader_config.py", tmp_path / "course" / "nbgrader_config.py")
    return CourseDir(tmp_path / "course")


def test_create_assignment_panel_marks_cells_and_release_picks_them_up(browser, course, tmp_path):
    server = formgrader.start(course, port=free_port(), log=tmp_path / "jupyter.log")
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(server.page("lab/tree/source/demo/demo.ipynb"))
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        page.get_by_text("Create Assignment").click()
        types = page.locator("select.jp-mod-styled")  # the panel's "Type" of each cell, in order
        types.nth(2).wait_for(timeout=30_000)
        types.nth(0).select_option("manual")
        types.nth(1).select_option("solution")
        types.nth(2).select_option("tests")
        points = page.locator(".nbgrader-CellPoints input")
        points.nth(0).fill("2")
        points.nth(0).press("Tab")
        points.nth(2).fill("3")
        points.nth(2).press("Tab")
        save(page, tmp_path / "jupyter.log")
        page.close()
    finally:
        server.stop()

    cells = nbformat.read(course.source / "demo" / "demo.ipynb", as_version=4).cells
    question, answer, tests = (nbgrader(c) for c in cells)
    assert question["solution"] and question["grade"] and question["points"] == 2
    assert answer["solution"] and not answer["grade"]
    assert tests["grade"] and tests["locked"] and tests["points"] == 3 and not tests["solution"]

    release.generate(["demo"], course=course)
    released = nbformat.read(course_dir.release_notebook("demo", course.release), as_version=4).cells
    assert "return 2 * x" not in released[1].source and "NotImplementedError" in released[1].source
    assert released[2].source == "assert double(2) == 4" and nbgrader(released[2])["points"] == 3


def save(page, log, attempts: int = 4) -> None:
    """Ctrl+S until the notebook is no longer dirty. The panel writes a cell's metadata when its
    input loses focus, which on a loaded machine can land after a save already started and leave
    the document dirty again; a second Ctrl+S (as a user would press) then saves it. The assertions
    on the file afterwards are what the test is about."""
    page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})  # keys go to the notebook
    for _ in range(attempts):
        page.keyboard.press("Control+s")
        try:
            page.wait_for_function("!document.querySelector('.jp-mod-dirty')", timeout=15_000)
            return
        except PlaywrightTimeout:
            continue
    dialogs = page.locator(".jp-Dialog").all_inner_texts()
    pytest.fail(
        f"the notebook stayed unsaved after {attempts} Ctrl+S; dialogs open: {dialogs}; "
        f"server log ends:\n{log.read_text()[-2000:]}"
    )
