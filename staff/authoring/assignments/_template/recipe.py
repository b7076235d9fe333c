"""Fixtures of the example exercise (layer normalisation): a public example for the visible check
and hidden cases of other shapes (one and two leading axes, other widths), so code that hard-codes
the visible sizes fails them. Copied by `make new-assignment` into the new assignment's folder,
whose name it takes: replace it with the real exercises'."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from course.fixtures import pack_cases
from staff.authoring.reference import solution_namespace

#: The assignment's name: its folder's (``staff/authoring/assignments/<assignment>/``).
ASSIGNMENT = Path(__file__).parent.name
#: The tolerances (atol, rtol) the notebook's tests compare these fixtures with.
TOLERANCES = {"*": (1e-6, 1e-5)}
#: The expected outputs in each fixture: a grading kernel never sees them, the judge compares with them.
OUTPUTS = {"layer_norm": ("expected",)}


def _case(layer_norm, rng: np.random.Generator, *shape: int) -> dict:
    x = rng.standard_normal(shape) * 3 + rng.standard_normal(shape[:-1] + (1,)) * 10
    gamma, beta = rng.standard_normal(shape[-1]), rng.standard_normal(shape[-1])
    return dict(x=x, gamma=gamma, beta=beta, expected=layer_norm(x, gamma, beta))


def build() -> dict:
    layer_norm = solution_namespace(ASSIGNMENT)["layer_norm"]
    seed = 1000 * int(ASSIGNMENT[:2]) + 7  # the assignment's own draws: NN007 and NN008
    public, hidden = np.random.default_rng(seed), np.random.default_rng(seed + 1)
    return {
        ("public", "layer_norm"): pack_cases([_case(layer_norm, public, 4, 6)]),
        ("hidden", "layer_norm"): pack_cases(
            [
                _case(layer_norm, hidden, 7, 10),
                _case(layer_norm, hidden, 2, 5, 3),
                _case(layer_norm, hidden, 1, 16),
            ]
        ),
    }
