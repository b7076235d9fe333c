"""03_visualising_attention's architecture diagram (attention out of the model, as pictures and numbers):
drawn by ``python -m staff figure`` into ``docs/figures/architecture_03_visualising_attention.png``
(:mod:`staff.authoring.diagram_kit`)."""

from __future__ import annotations

from staff.authoring.diagram_kit import Canvas


def draw() -> Canvas:
    c = Canvas(12, 6.2, "Assignment 3: attention out of the model, as pictures and numbers")
    c.box("text", 0.95, 4.85, "text, text_pair", w=1.55, h=0.5, kind="data")
    c.box("encode", 3.15, 4.85, "encode:\n[CLS] A [SEP] B [SEP]", w=2.0, h=0.65, kind="yours", exercise="1")
    c.arrow(c.at("text", "right"), c.at("encode", "left"))
    c.box("model", 7.3, 4.85, "transformers' DistilBERT\n(eager attention)", w=2.9, h=0.65)
    c.arrow(
        c.at("encode", "right"), c.at("model", "left"), "input_ids (1, seq)", offset=(0, -0.2), ha="center"
    )
    c.note(2.2, 4.25, "also tokens, sentence_b_start", size=8)
    c.box("att", 7.3, 3.6, "attentions: n_layers tensors", w=2.9, h=0.5, kind="data")
    c.arrow(c.at("model", "bottom"), c.at("att", "top"), "(batch, n_heads, seq, seq) each")
    c.box(
        "avg",
        3.05,
        2.45,
        "head_averaged_attention:\nmean over heads, real tokens only",
        w=2.85,
        h=0.65,
        kind="yours",
        exercise="2",
    )
    c.arrow(c.at("att", "left"), c.at("avg", "top"), via=[(3.05, 3.6)])
    bottom = [
        ("plot", 1.05, "plot_attention\none layer", "3a"),
        ("all", 3.05, "plot_all_layers\n\u2264 3 per row", "3b"),
        ("shares", 5.05, "attention_shares\n[CLS], [SEP], self", "4"),
        ("token", 7.15, "plot_token_attention\none query, every head", "3c"),
        ("entropy", 9.2, "attention_entropy\nper head, in nats", "4"),
    ]
    for name, x, text, exercise in bottom:
        c.box(name, x, 0.95, text, w=1.8, h=0.65, kind="yours", exercise=exercise, size=9)
    for name in ("plot", "all", "shares"):
        c.arrow((3.05, 1.75), c.at(name, "top"), via=[(c.boxes[name][0], 1.75)] if name != "all" else ())
    c.arrow(c.at("avg", "bottom"), (3.05, 1.75), "avg (n_layers, n_real, n_real)", label_at=0.45)
    c.box("bertviz", 11.1, 0.95, "bertviz views\n(Ex 5, not graded)", w=1.6, h=0.65, size=9)
    for name in ("token", "entropy", "bertviz"):
        c.arrow((8.4, 1.75), c.at(name, "top"), via=[(c.boxes[name][0], 1.75)])
    c.arrow(
        c.at("att", "bottom", 1.1),
        (8.4, 1.75),
        "one sentence, per head:\n(n_layers, n_heads, seq, seq)",
        label_at=0.5,
    )
    c.note(
        8.8,
        3.6,
        "Averaging first hides sharp heads that disagree:\nH(mean over heads) \u2265 mean over heads of H (Jensen)",
        size=8,
        ha="left",
    )
    c.note(
        0.3,
        0.2,
        "Each row of a map is a query and sums to 1; layers, heads and tokens are counted from 0.",
        size=8,
    )
    c.legend(loc="lower right")
    return c
