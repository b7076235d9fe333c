"""The example's architecture diagram (layer normalisation), drawn by ``python -m staff figure`` into
``docs/figures/architecture_<assignment>.png`` (:mod:`staff.authoring.diagram_kit`). Copied by
`make new-assignment`: replace it with a drawing of the real exercises."""

from __future__ import annotations

from staff.authoring.diagram_kit import Canvas


def draw() -> Canvas:
    c = Canvas(12, 3.6, "Layer normalisation, in NumPy")
    c.box("x", 1.0, 1.9, "x\ntoken vectors", w=1.3, h=0.7, kind="data")
    c.box(
        "norm",
        5.0,
        1.9,
        "each row: $(x - \\mu) / \\sqrt{\\sigma^2 + \\epsilon}$\nmean and variance over the last axis",
        w=3.4,
        h=0.75,
        kind="yours",
        exercise="1",
    )
    c.arrow(c.at("x", "right"), c.at("norm", "left"), "(..., d_model)", offset=(0, 0.2), ha="center")
    c.box("affine", 8.75, 1.9, "$\\gamma \\odot \\cdot + \\beta$", w=1.6, h=0.6, kind="yours", exercise="1")
    c.arrow(c.at("norm", "right"), c.at("affine", "left"), "(..., d_model)", offset=(0, 0.2), ha="center")
    c.box("y", 11.0, 1.9, "y", w=0.9, h=0.5, kind="data")
    c.arrow(c.at("affine", "right"), c.at("y", "left"))
    c.group(3.05, 1.2, 9.8, 2.75, "layer_norm(x, gamma, beta, eps)")
    c.legend(loc="lower center", example="(..., d_model)")
    return c
