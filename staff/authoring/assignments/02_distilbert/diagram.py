"""02_distilbert's architecture diagram (DistilBERT for sentence classification, in PyTorch): drawn by
``python -m staff figure`` into ``docs/figures/architecture_02_distilbert.png``
(:mod:`staff.authoring.diagram_kit`)."""

from __future__ import annotations

from staff.authoring.diagram_kit import Canvas


def draw() -> Canvas:
    c = Canvas(12, 6.6, "Assignment 2: DistilBERT for sentence classification, in PyTorch")
    c.box("ids", 1.2, 0.45, "input_ids", w=1.1, h=0.45, kind="data")
    c.box(
        "emb",
        1.2,
        1.6,
        "Embeddings: word +\nposition, LayerNorm,\ndropout",
        w=1.75,
        h=0.95,
        kind="yours",
        exercise="1",
    )
    c.arrow(c.at("ids", "top"), c.at("emb", "bottom"), "(batch, seq)")
    c.box("qkv", 5.3, 1.6, "q_lin, k_lin, v_lin", w=2.0, kind="yours", exercise="2")
    c.arrow(
        c.at("emb", "right"),
        c.at("qkv", "left"),
        "(batch, seq, dim)",
        offset=(0, 0.2),
        ha="center",
        label_at=0.37,
    )
    c.box("split", 5.3, 2.7, "split_heads", w=2.0)
    c.arrow(c.at("qkv", "top"), c.at("split", "bottom"), "(batch, seq, dim)")
    c.box(
        "attend",
        5.3,
        3.85,
        "attend: $QK^\\top\\!\\cdot$ scale, padding mask,\nsoftmax, dropout, $\\cdot\\,V$",
        w=2.5,
        h=0.75,
        kind="yours",
        exercise="2",
    )
    c.arrow(c.at("split", "top"), c.at("attend", "bottom"), "(batch, n_heads,\n seq, head_dim)")
    c.box("merge", 5.3, 5.0, "merge_heads, out_lin", w=2.0)
    c.arrow(c.at("attend", "top"), c.at("merge", "bottom"), "context, the same shape")
    c.box("mask", 1.2, 3.65, "attention_mask\n1 real, 0 [PAD]", w=1.6, h=0.6, kind="data")
    c.arrow(
        c.at("mask", "right"),
        c.at("attend", "left", -0.2),
        "(batch, 1, 1, seq)",
        offset=(0, -0.2),
        ha="center",
    )
    c.box(
        "sdpa",
        1.55,
        4.85,
        "sdpa_attention:\nF.scaled_dot_product_attention",
        w=2.5,
        h=0.6,
        kind="yours",
        exercise="5",
        size=8.5,
    )
    c.arrow(
        c.at("sdpa", "right"),
        c.at("attend", "left", 0.2),
        via=[(3.15, 4.85), (3.15, 4.05)],
        dashed=True,
        colour="#888888",
    )
    c.note(3.22, 4.47, "same\ncontext", size=8)
    c.circle("add1", 8.2, 5.0)
    c.arrow(c.at("merge", "right"), c.at("add1", "left"), "(batch, seq, dim)", offset=(0, 0.2), ha="center")
    c.arrow((3.9, 1.6), c.at("add1", "top"), via=[(3.9, 5.65), (8.2, 5.65)])
    c.note(6.05, 5.78, "residual: + x", size=8)
    c.box("ln1", 8.2, 4.15, "sa_layer_norm", w=1.7)
    c.arrow(c.at("add1", "bottom"), c.at("ln1", "top"))
    c.box("ffn", 8.2, 3.0, "lin1 $\\to$ GELU $\\to$ lin2\ndim$\\to$hidden_dim$\\to$dim", w=1.7, h=0.65)
    c.arrow(c.at("ln1", "bottom"), c.at("ffn", "top"), "h", offset=(-0.08, 0.05), ha="right")
    c.circle("add2", 8.2, 2.1)
    c.arrow(c.at("ffn", "bottom"), c.at("add2", "top"))
    c.arrow((8.2, 3.65), c.at("add2", "right"), via=[(9.25, 3.65), (9.25, 2.1)])
    c.note(9.3, 2.9, "+ h", size=8)
    c.box("ln2", 8.2, 1.25, "output_layer_norm", w=1.7)
    c.arrow(c.at("add2", "bottom"), c.at("ln2", "top"))
    c.group(3.7, 0.75, 9.45, 6.0, "AttentionBlock: one layer; self.layers holds n_layers of them (Ex 3)")
    c.box(
        "cls", 10.95, 2.1, "h[:, 0]: the [CLS]\nvector, last layer", w=1.6, h=0.65, kind="yours", exercise="3"
    )
    c.arrow(
        c.at("ln2", "right"),
        c.at("cls", "bottom"),
        "(batch, seq, dim)",
        via=[(10.95, 1.25)],
        label_at=0.77,
        offset=(-0.08, 0),
        ha="right",
    )
    c.box("head", 10.95, 3.35, "pre_classifier, ReLU,\ndropout, classifier", w=1.6, h=0.65)
    c.arrow(c.at("cls", "top"), c.at("head", "bottom"), "(batch, dim)", offset=(-0.08, 0), ha="right")
    c.box("logits", 10.95, 4.45, "logits", w=1.0, h=0.45, kind="data")
    c.arrow(
        c.at("head", "top"), c.at("logits", "bottom"), "(batch, num_labels)", offset=(-0.08, 0), ha="right"
    )
    c.box(
        "load",
        10.95,
        5.45,
        "load_pretrained: HF names\n$\\to$ course_name, strict;\npredict",
        w=1.9,
        h=0.8,
        kind="yours",
        exercise="4",
        size=8.5,
    )
    c.legend(loc="lower right")
    return c
