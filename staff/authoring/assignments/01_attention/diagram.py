"""01_attention's architecture diagram (scaled dot-product attention, in NumPy): drawn by ``python -m staff
figure`` into ``docs/figures/architecture_01_attention.png`` (:mod:`staff.authoring.diagram_kit`)."""

from __future__ import annotations

from staff.authoring.diagram_kit import Canvas


def draw() -> Canvas:
    c = Canvas(12, 6.5, "Assignment 1: scaled dot-product attention, in NumPy")
    c.box("x", 0.75, 3.6, "x\ntoken vectors", w=1.1, h=0.7, kind="data")
    c.box("pe", 2.5, 2.1, "positional_encoding\nsin / cos of pos", w=1.8, h=0.7, kind="yours", exercise="4")
    c.circle("plus", 2.5, 3.6)
    c.arrow(c.at("x", "right"), c.at("plus", "left"), "(seq, d_model)", offset=(0, 0.2), ha="center")
    c.arrow(c.at("pe", "top"), c.at("plus", "bottom"), "(seq, d_model)", offset=(-0.08, 0), ha="right")
    for name, y, matrix in (("q", 4.8, "Q"), ("k", 3.6, "K"), ("v", 2.4, "V")):
        c.box(name, 4.55, y, f"${matrix} = x\\,W_{{{matrix.lower()}}}$", w=1.35, h=0.55, stack=2)
        c.arrow((3.6, 3.6), c.at(name, "left"), via=[(3.6, y)] if y != 3.6 else ())
    c.arrow(c.at("plus", "right"), (3.6, 3.6))
    c.box(
        "scores",
        7.3,
        4.2,
        "$QK^\\top / \\sqrt{d_{qkv}}$\nmasked: $-\\infty$ where mask is False",
        w=2.3,
        h=0.75,
    )
    c.arrow(c.at("q", "right"), c.at("scores", "left", 0.15), via=[(5.8, 4.8), (5.8, 4.35)])
    c.arrow(c.at("k", "right"), c.at("scores", "left", -0.15), via=[(5.95, 3.6), (5.95, 4.05)])
    c.shape(5.93, 5.05, "(seq, d_qkv)", ha="center")
    c.box("causal", 7.5, 5.3, "causal_mask: True where $j \\leq i$", w=2.1, h=0.5, kind="yours", exercise="6")
    c.arrow(c.at("causal", "bottom"), c.at("scores", "top", 0.2), "(seq, seq) bool")
    c.box("softmax", 10.45, 4.2, "softmax\nrow max subtracted", w=1.75, h=0.7, kind="yours", exercise="1")
    c.arrow(c.at("scores", "right"), c.at("softmax", "left"), "(seq, seq)", offset=(0, 0.2), ha="center")
    c.box("av", 10.45, 2.4, "$A\\,V$", w=1.3, h=0.55, stack=2)
    c.arrow(c.at("softmax", "bottom"), c.at("av", "top"), "A (seq, seq)\nrows sum to 1", label_at=0.45)
    c.arrow(
        c.at("v", "right"), c.at("av", "left"), "(seq, d_qkv)", offset=(0, 0.2), ha="center", label_at=0.4
    )
    c.box("out", 10.45, 1.05, "concat heads, $\\cdot\\, W_o$", w=2.0, h=0.55, kind="yours", exercise="3")
    c.arrow(c.at("av", "bottom"), c.at("out", "top"), "(n_heads, seq, d_qkv)", ha="right", offset=(-0.08, 0))
    c.box("y", 7.2, 1.05, "y", w=0.9, h=0.5, kind="data")
    c.arrow(c.at("out", "left"), c.at("y", "right"), "(seq, d_model)", offset=(0, 0.2), ha="center")
    c.group(
        3.75,
        0.55,
        11.75,
        5.85,
        "apply_self_attention (Ex 2): one head.   apply_multihead_attention (Ex 3): "
        "every head at once, with a leading n_heads axis",
        label_side="left",
    )
    c.box(
        "shuffle",
        1.9,
        0.95,
        "shuffle_experiment: x[perm] in $\\Rightarrow$ y[perm] out\n"
        "attention alone ignores order; adding PE breaks it",
        w=3.4,
        h=0.75,
        kind="yours",
        exercise="5",
        size=8.5,
    )
    c.legend(loc="lower center", example="(seq, d_model)")
    return c
