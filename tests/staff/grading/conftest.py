"""Submissions of assignment 1 as students damage them, shared by the grading tests."""
from __future__ import annotations

import nbformat
import pytest

from staff.authoring import samples
from staff.course_dir import nbgrader

ASSIGNMENT = "01_attention"


def _delete_tests(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.cells = [c for c in nb.cells if not nbgrader(c).get("grade") or c.cell_type == "markdown"]
    return nb


def _strip_metadata(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """As a copy-paste into a fresh notebook leaves it: no nbgrader metadata, new cell ids."""
    for i, cell in enumerate(nb.cells):
        cell.metadata = {}
        cell.id = f"pasted-{i}"
    return nb


@pytest.fixture(scope="session")
def samples1() -> dict[str, samples.Sample]:
    """Assignment 1's bundled samples by student name."""
    return {s.student: s for s in samples.load(ASSIGNMENT)}


@pytest.fixture(scope="session")
def damaged(samples1):
    """student -> (the correct sample's notebook, damaged; expected status; expected score)."""
    correct = samples1["correct_loops"]
    return {
        "deleted_tests": (_delete_tests(samples.fill(correct)), "repaired", 23.0),
        "stripped_metadata": (_strip_metadata(samples.fill(correct)), "repaired", 23.0),
    }
