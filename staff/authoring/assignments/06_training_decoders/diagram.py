"""06_training_decoders' architecture diagram (a character-level GPT's training and an encoder–decoder): drawn by ``python -m staff
figure`` into ``docs/figures/architecture_06_training_decoders.png`` (:mod:`staff.authoring.diagram_kit`)."""

from __future__ import annotations

from matplotlib.patches import Rectangle

from staff.authoring.diagram_kit import Canvas


def draw() -> Canvas:
    c = Canvas(12, 4.7, "Assignment 6: training decoders")
    c.box(
        "lm",
        5.975,
        3.72,
        "lm_loss; ngram_perplexity baselines; then assignment 5's GPT trained on The Devil's Dictionary, characters",
        w=11.55,
        h=0.42,
        kind="yours",
        exercise="2",
        size=9,
    )
    # Exercise 3: Seq2Seq.forward. The encoder's lane above, the decoder's below, memory between them.
    top, bottom = 2.55, 0.95
    c.box("src", 0.7, top, "source", w=0.9, h=0.42, kind="data")
    c.shape(0.7, top - 0.42, "(batch, src)", ha="center")
    c.box("src_emb", 2.6, top, "embed(source) +\npositions(0 \u2026 src-1)", w=2.0, h=0.6)
    c.arrow(c.at("src", "right"), c.at("src_emb", "left"))
    c.box(
        "encoder", 6.7, top, "encoder: nn.TransformerEncoder,\nself-attention over the source", w=2.6, h=0.6
    )
    c.arrow(
        c.at("src_emb", "right"),
        c.at("encoder", "left"),
        "(batch, src, d_model)",
        offset=(0, 0.2),
        ha="center",
    )
    c.box("pad", 2.6, 1.75, "source_padding\n1 = real token", w=1.5, h=0.55, kind="data", size=9)
    c.box(
        "ignore",
        4.6,
        1.75,
        "src_key_padding_mask\n= source_padding == 0",
        w=1.95,
        h=0.55,
        kind="yours",
        exercise="3",
        size=9,
    )
    c.arrow(c.at("pad", "right"), c.at("ignore", "left"))
    c.arrow(c.at("ignore", "right"), c.at("encoder", "bottom", -0.85), via=[(5.85, 1.75)])
    c.box("tgt", 0.7, bottom, "target_in", w=0.9, h=0.42, kind="data", size=9)
    c.shape(0.7, bottom + 0.42, "(batch, tgt)", ha="center")
    c.box("tgt_emb", 2.6, bottom, "embed(target_in) +\npositions(0 \u2026 tgt-1)", w=2.0, h=0.6)
    c.arrow(c.at("tgt", "right"), c.at("tgt_emb", "left"))
    c.box(
        "layer",
        6.7,
        bottom,
        "decoder_layer (post-LN): causal self-\nattention, cross-attention on memory\n"
        "with source_padding, FFN",
        w=2.9,
        h=0.8,
        kind="yours",
        exercise="1",
        stack=1,
        size=9,
    )
    c.arrow(
        c.at("tgt_emb", "right"),
        c.at("layer", "left"),
        "(batch, tgt, d_model)",
        offset=(0, -0.2),
        ha="center",
    )
    c.arrow(c.at("encoder", "bottom", 0.4), (7.1, bottom + 0.47), "memory\n(batch, src, d_model)")
    c.note(6.7, 0.33, "\u00d7 n_layers, each with dict(layer.named_parameters())", ha="center", size=8)
    c.box("head", 9.8, bottom, "head: Linear\nd_model $\\to$ 13", w=1.2, h=0.55)
    c.arrow((8.22, bottom), c.at("head", "left"))
    c.box("out", 11.25, bottom, "logits", w=0.85, h=0.42, kind="data")
    c.arrow(c.at("head", "right"), c.at("out", "left"))
    c.shape(11.25, bottom - 0.42, "(batch, tgt, 13)", ha="center")
    c.box("cross", 9.85, top, "cross_attentions,\none per layer", w=1.5, h=0.6, kind="data", size=9)
    c.arrow(
        (8.22, bottom + 0.25),
        c.at("cross", "left"),
        "each (batch, heads, tgt, src)",
        via=[(8.85, bottom + 0.25), (8.85, top)],
        label_at=0.45,
    )
    # What the student's figure shows once it has learned: output digit i reads source digit n - 1 - i.
    n, cell = 5, 0.13
    x0, y0 = 10.95, top - n * cell / 2
    for i in range(n):
        for j in range(n):
            c.ax.add_patch(
                Rectangle(
                    (x0 + j * cell, y0 + (n - 1 - i) * cell),
                    cell,
                    cell,
                    linewidth=0.4,
                    edgecolor="white",
                    facecolor="#fde725" if i + j == n - 1 else "#3b528b",
                    zorder=2,
                )
            )
    c.arrow(c.at("cross", "right"), (x0, top))
    c.note(x0 + n * cell / 2, top - 0.55, "anti-diagonal", ha="center", size=8)
    c.group(
        0.2,
        0.2,
        11.95,
        3.3,
        "Seq2Seq.forward (Ex 3), trained to reverse digits by teacher forcing: "
        "target_in = target[:, :-1], labels = target[:, 1:]",
    )
    c.legend(loc="upper right", example="(batch, length, d_model)")
    return c
