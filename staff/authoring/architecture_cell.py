"""Put each assignment's architecture diagram and reading list into its notebook, as one locked
markdown cell (id ``architecture``) right after the header cell.

The PNG travels inside the cell as a Jupyter attachment (``attachment:architecture.png``), so the
picture shows on Colab, in JupyterLab, in the release and in nbgrader's feedback without any file
next to the notebook. Embedding is idempotent: the cell is replaced, never duplicated, and a
notebook whose cell is already current is not rewritten. The notebook is edited as JSON with its
key order and formatting kept (indent 1, as the committed notebooks are), so the diff is the cell.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from staff import course_dir
from staff.authoring import (
    assignments as folders,  # each assignment's folder (``assignments`` names a list here)
)
from staff.authoring import diagram_kit, reading_lists

CELL_ID = "architecture"
ATTACHMENT = "architecture.png"
#: nbgrader metadata of a locked, ungraded markdown cell, as the notebooks' other intro cells have it.
NBGRADER = {
    "grade": False,
    "grade_id": CELL_ID,
    "locked": True,
    "schema_version": 3,
    "solution": False,
    "task": False,
}
CAPTION = (
    "*Orange boxes are what you write, with the number of their exercise; blue boxes are given; "
    "the purple text on an arrow is the shape of the tensor it carries. Sizes such as `seq` or `dim` "
    "come from the arrays, never from constants.*"
)


def _lines(text: str) -> list[str]:
    """A cell source as Jupyter stores it: lines that keep their newline, the last without."""
    return text.splitlines(keepends=True)


def cell(assignment: str, png: bytes) -> dict:
    """The ``architecture`` cell of one assignment, holding ``png`` as its attachment."""
    source = (
        f"## What you will build\n\n"
        f"![Architecture diagram of {assignment}: what this notebook builds, with the exercise numbers "
        f"and the tensor shapes](attachment:{ATTACHMENT})\n\n{CAPTION}\n\n"
        f"### Reading list\n\n{reading_lists.markdown(assignment)}"
    )
    return {
        "attachments": {ATTACHMENT: {"image/png": base64.b64encode(png).decode("ascii")}},
        "cell_type": "markdown",
        "id": CELL_ID,
        "metadata": {"nbgrader": dict(NBGRADER)},
        "source": _lines(source),
    }


def insert(notebook: dict, new_cell: dict) -> dict:
    """``notebook`` with ``new_cell`` right after the header cell, any earlier copy removed."""
    cells = [
        c
        for c in notebook["cells"]
        if c.get("id") != CELL_ID and c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != CELL_ID
    ]
    header = next((i for i, c in enumerate(cells) if c.get("id") == "header"), 0)
    return {**notebook, "cells": cells[: header + 1] + [new_cell] + cells[header + 1 :]}


def embed(notebook: Path, assignment: str, png: bytes) -> bool:
    """Write the cell into ``notebook``; returns whether the file changed."""
    text = notebook.read_text()
    updated = json.dumps(insert(json.loads(text), cell(assignment, png)), indent=1, ensure_ascii=False) + "\n"
    if updated == text:
        return False
    notebook.write_text(updated)
    return True


def embed_all(
    source: Path = course_dir.SOURCE,
    figures: Path = diagram_kit.FIGURES,
    assignments: list[str] | None = None,
) -> dict[str, bool]:
    """Embed each assignment's committed diagram (``figures``) into its notebook under ``source``."""
    changed = {}
    for assignment in assignments or folders.assignments():
        notebook = source / assignment / f"{assignment}.ipynb"
        if notebook.is_file():
            changed[assignment] = embed(
                notebook, assignment, diagram_kit.figure_path(assignment, figures).read_bytes()
            )
    return changed
