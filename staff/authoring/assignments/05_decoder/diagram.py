"""05_decoder's architecture diagram (a GPT-style decoder and an encoder–decoder): drawn by ``python -m staff
figure`` into ``docs/figures/architecture_05_decoder.png`` (:mod:`staff.authoring.diagram_kit`)."""

from __future__ import annotations

from matplotlib.patches import Rectangle

from staff.authoring.diagram_kit import Canvas


def draw() -> Canvas:
    c = Canvas(12, 9.9, "Assignment 5: a GPT-style decoder and an encoder\u2013decoder")
    up = 3.3  # sections 1 to 5 above, section 6's encoder-decoder below
    x = 1.95
    c.box("ids", x, up + 5.55, "ids", w=1.0, h=0.42, kind="data")
    c.box("emb", x, up + 4.7, "wte(ids) + wpe(positions),\npositions from past_length", w=2.6, h=0.6)
    c.arrow(c.at("ids", "bottom"), c.at("emb", "top"), "(batch, length)")
    c.box(
        "block",
        x,
        up + 3.45,
        "Block, pre-LN:\nx + proj(attend(ln_1(x)))\nx + fc_out(GELU(fc(ln_2(x))))",
        w=2.6,
        h=0.95,
        kind="yours",
        exercise="3",
        stack=2,
        size=9,
    )
    c.arrow(c.at("emb", "bottom"), c.at("block", "top"), "(batch, length, d_model)")
    c.note(0.55, up + 2.75, "\u00d7 n_layers", size=8.5)
    c.box("lnf", x, up + 2.3, "ln_f", w=1.2, h=0.42)
    c.arrow(c.at("block", "bottom"), c.at("lnf", "top"), "(batch, length, d_model)", label_at=0.55)
    c.box("logits", x, up + 1.5, "logits = x $W_{te}^\\top$ (tied)", w=2.6, h=0.45, kind="data")
    c.arrow(c.at("lnf", "bottom"), c.at("logits", "top"))
    c.shape(x, up + 1.1, "(batch, length, vocab_size)", ha="center")
    c.group(0.2, up + 0.85, 3.95, up + 6.0, "GPT.forward (Ex 3)")
    bx = 5.45
    c.box("qkv", bx, up + 5.45, "ln_1 $\\to$ qkv, split_heads", w=2.3, h=0.42)
    c.box("cache", bx, up + 4.3, "k, v = cat(past, new)", w=2.3, h=0.45, kind="yours", exercise="3")
    c.arrow(c.at("qkv", "bottom"), c.at("cache", "top"), "q, k, v: (batch, n_heads,\n length, d_head)")
    c.box("attend", bx, up + 2.95, "attend(q, k, v, mask)", w=2.3, h=0.45, kind="yours", exercise="1")
    c.arrow(c.at("cache", "bottom"), c.at("attend", "top"), "k, v: (batch, n_heads,\n past + length, d_head)")
    c.box(
        "mask",
        bx,
        up + 1.6,
        "decoder_mask: $j \\leq$ past + i,\nand key j is no padding",
        w=2.3,
        h=0.6,
        kind="yours",
        exercise="1",
        size=9,
    )
    c.arrow(c.at("mask", "top"), c.at("attend", "bottom"), "(batch, 1, length,\n past + length)")
    c.group(4.1, up + 0.85, 8.05, up + 6.0, "inside a Block: the cache and the mask")
    gx = 9.85
    c.box("last", gx, up + 5.45, "logits[:, -1]", w=1.6, h=0.42, kind="data")
    c.box(
        "dist",
        gx,
        up + 4.4,
        "next_token_distribution:\ntemperature, top-k, top-p",
        w=2.6,
        h=0.6,
        kind="yours",
        exercise="4",
    )
    c.arrow(c.at("last", "bottom"), c.at("dist", "top"), "(batch, vocab)")
    c.box("pick", gx, up + 3.2, "argmax if T = 0, else\nmultinomial(probs, generator)", w=2.6, h=0.6)
    c.arrow(
        c.at("dist", "bottom"), c.at("pick", "top"), "probs (batch, vocab)", offset=(-0.08, 0), ha="right"
    )
    c.box(
        "step",
        gx,
        up + 1.95,
        "append it; the next call feeds\nonly the new token, past = present",
        w=2.6,
        h=0.6,
        kind="yours",
        exercise="4",
        size=9,
    )
    c.arrow(c.at("pick", "bottom"), c.at("step", "top"), "(batch, 1)")
    c.arrow(c.at("step", "right"), c.at("last", "right"), via=[(11.4, up + 1.95), (11.4, up + 5.45)])
    c.note(11.47, up + 3.7, "KV\ncache", size=8)
    c.group(8.2, up + 0.85, 11.95, up + 6.0, "generate (Ex 4)")
    c.box(
        "lm",
        5.975,
        3.72,
        "lm_loss; ngram_perplexity baselines; then a character-level GPT on The Devil's Dictionary",
        w=11.55,
        h=0.42,
        kind="yours",
        exercise="5",
        size=9,
    )
    # Section 6: Seq2Seq.forward. The encoder's lane above, the decoder's below, memory between them.
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
        exercise="6",
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
        exercise="2",
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
        "Seq2Seq.forward (Ex 6), trained to reverse digits by teacher forcing: "
        "target_in = target[:, :-1], labels = target[:, 1:]",
    )
    c.legend(loc="upper right", example="(batch, length, d_model)")
    return c
