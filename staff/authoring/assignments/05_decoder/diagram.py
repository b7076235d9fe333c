"""05_decoder's architecture diagram (a GPT-style decoder and its generation loop): drawn by ``python -m staff
figure`` into ``docs/figures/architecture_05_decoder.png`` (:mod:`staff.authoring.diagram_kit`)."""

from __future__ import annotations

from staff.authoring.diagram_kit import Canvas


def draw() -> Canvas:
    c = Canvas(12, 6.0, "Assignment 5: a GPT-style decoder and its generation loop")
    up = -0.6  # the groups start at up + 0.85
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
        exercise="2",
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
    c.group(0.2, up + 0.85, 3.95, up + 6.0, "GPT.forward (Ex 2)")
    bx = 5.45
    c.box("qkv", bx, up + 5.45, "ln_1 $\\to$ qkv, split_heads", w=2.3, h=0.42)
    c.box("cache", bx, up + 4.3, "k, v = cat(past, new)", w=2.3, h=0.45, kind="yours", exercise="2")
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
        exercise="3",
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
        exercise="3",
        size=9,
    )
    c.arrow(c.at("pick", "bottom"), c.at("step", "top"), "(batch, 1)")
    c.arrow(c.at("step", "right"), c.at("last", "right"), via=[(11.4, up + 1.95), (11.4, up + 5.45)])
    c.note(11.47, up + 3.7, "KV\ncache", size=8)
    c.group(8.2, up + 0.85, 11.95, up + 6.0, "generate (Ex 3)")
    c.legend(loc="upper right", example="(batch, length, d_model)")
    return c
