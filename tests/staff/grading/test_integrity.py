"""The integrity scan flags code that could game the tests (it reads code, never runs it)."""
from __future__ import annotations

import pytest

from staff.authoring import samples
from staff.course_dir import nbgrader
from staff.grading import integrity


@pytest.mark.parametrize("source, flagged", [
    ("np.allclose = lambda *a, **k: True", True),
    ("setattr(torch, 'allclose', f)", True),
    ("import builtins\nbuiltins.abs = abs", True),
    ("import socket", True),
    ("!pip install something", True),
    ("import json\nnb = json.load(open('01_attention.ipynb'))", True),
    ("def softmax(x, axis=-1):\n    e = np.exp(x - x.max(axis, keepdims=True))\n    return e / e.sum(axis, keepdims=True)", False),
    ("weights = np.zeros((3, 3))\nweights[0] += 1\nwith open('notes.txt', 'w') as f: f.write('hi')", False),
])
def test_integrity_scan(source, flagged):
    assert bool(integrity.scan_source(source)) == flagged


def test_redefining_a_given_helper_is_flagged(samples1):
    nb = samples.fill(samples1["correct_loops"])
    answer = next(c for c in nb.cells if nbgrader(c).get("grade_id") == "softmax")
    answer.source += "\n\ndef load_cases(*args, **kwargs):\n    return []\n"
    assert any("redefines load_cases" in flag for flag in integrity.scan(nb))
    assert integrity.scan(samples.fill(samples1["correct_loops"])) == []
