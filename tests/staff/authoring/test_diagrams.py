"""Architecture diagrams and reading lists: one per assignment, drawn reproducibly, embedded in the
notebook as a locked markdown cell with the PNG as an attachment, idempotently."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil

import numpy as np
import pytest
from PIL import Image

from staff import course_dir
from staff.authoring import architecture_cell, assignments, diagram_kit, reading_lists

ASSIGNMENTS = course_dir.assignments()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _architecture_cells(notebook: dict) -> list[dict]:
    return [c for c in notebook["cells"] if c.get("id") == architecture_cell.CELL_ID]


def test_every_assignment_has_a_diagram_and_a_reading_list():
    assert assignments.assignments() == ASSIGNMENTS
    for assignment in ASSIGNMENTS:
        assert callable(assignments.module(assignment, "diagram").draw), assignment
        keys = [key for key, _ in assignments.reading(assignment)]
        assert set(keys) <= set(reading_lists.REFERENCES), f"{assignment}: a key not in REFERENCES"
        assert {"vaswani", "devlin", "sanh", "annotated"} <= set(keys), assignment
        assert len(keys) == len(set(keys)), f"{assignment}: a reference listed twice"


def test_references_link_to_arxiv_abstracts_or_their_home():
    for key, (authors, _title, url) in reading_lists.REFERENCES.items():
        assert re.search(r"\(\d{4}\)", authors), f"{key}: no year"
        assert url.startswith("https://"), key
        if "arxiv.org" in url:
            assert re.fullmatch(r"https://arxiv\.org/abs/\d{4}\.\d{4,5}", url), f"{key}: {url}"
    assert reading_lists.REFERENCES["vaswani"][2] == "https://arxiv.org/abs/1706.03762"
    assert reading_lists.REFERENCES["devlin"][2] == "https://arxiv.org/abs/1810.04805"
    assert reading_lists.REFERENCES["sanh"][2] == "https://arxiv.org/abs/1910.01108"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_committed_diagram_is_current_and_small(tmp_path, assignment):
    committed = diagram_kit.figure_path(assignment)
    assert committed.is_file(), f"{committed} is missing: run `make figures`"
    fresh = diagram_kit.draw(assignment, tmp_path).read_bytes()
    assert fresh.startswith(PNG_MAGIC) and len(fresh) < 150_000
    # Compared as pixels, not bytes: another CPU may antialias an edge pixel differently, while a
    # changed character of a label already changes some 25 pixels by more than 48 levels.
    with Image.open(io.BytesIO(fresh)) as a, Image.open(committed) as b:
        assert a.size == b.size, (
            f"{committed.name} is stale (size {b.size}, now {a.size}): run `make figures`"
        )
        diff = np.abs(
            np.asarray(a.convert("RGB"), dtype=np.int16) - np.asarray(b.convert("RGB"), dtype=np.int16)
        )
    changed = int((diff.max(axis=-1) > 48).sum())
    assert changed <= 10, (
        f"{committed.name} is stale ({changed} pixels differ): run `make figures` and commit it"
    )


def test_embedding_is_idempotent_and_touches_nothing_else(tmp_path):
    notebook = tmp_path / "01_attention.ipynb"
    shutil.copy(course_dir.source_notebook("01_attention"), notebook)
    original = json.loads(notebook.read_text())
    original_cells = [c for c in original["cells"] if c.get("id") != architecture_cell.CELL_ID]
    png = diagram_kit.figure_path("01_attention").read_bytes()

    architecture_cell.embed(notebook, "01_attention", png)
    once = notebook.read_text()
    assert architecture_cell.embed(notebook, "01_attention", png) is False
    assert notebook.read_text() == once

    embedded = json.loads(once)
    cells = embedded["cells"]
    assert [c["id"] for c in cells[:2]] == ["header", "architecture"]
    assert [c for c in cells if c["id"] != "architecture"] == original_cells
    (cell,) = _architecture_cells(embedded)
    assert cell["cell_type"] == "markdown"
    assert cell["metadata"]["nbgrader"] == {**cells[0]["metadata"]["nbgrader"], "grade_id": "architecture"}
    assert base64.b64decode(cell["attachments"]["architecture.png"]["image/png"]) == png
    source = "".join(cell["source"])
    assert "](attachment:architecture.png)" in source
    for key, _ in assignments.reading("01_attention"):
        assert reading_lists.REFERENCES[key][2] in source

    other = PNG_MAGIC + b"another drawing"
    assert architecture_cell.embed(notebook, "01_attention", other) is True
    (replaced,) = _architecture_cells(json.loads(notebook.read_text()))
    assert base64.b64decode(replaced["attachments"]["architecture.png"]["image/png"]) == other


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_notebooks_hold_the_current_architecture_cell(assignment):
    png = diagram_kit.figure_path(assignment).read_bytes()
    expected = architecture_cell.cell(assignment, png)
    source = json.loads(course_dir.source_notebook(assignment).read_text())
    assert _architecture_cells(source) == [expected], (
        f"source/{assignment}: run `python -m staff figure --architecture`, then `make release`"
    )
    released = json.loads(course_dir.release_notebook(assignment).read_text())
    (cell,) = _architecture_cells(released)
    assert cell["attachments"] == expected["attachments"] and cell["source"] == expected["source"], (
        f"release/{assignment} lacks the current diagram: run `make release`"
    )
