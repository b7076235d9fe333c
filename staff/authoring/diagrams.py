"""One architecture diagram per assignment: what the notebook builds, with the names its code
uses, the tensor shapes on the arrows and the notebook's exercise numbers on the parts students
write. ``python -m staff figure`` (``make figures``) draws them into
``docs/figures/architecture_<assignment>.png``; ``architecture_cell.py`` embeds them in the notebooks.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.patches import Rectangle

from course import paths
from staff.authoring.diagram_kit import Canvas

FIGURES = paths.ROOT / "docs" / "figures"


def figure_path(assignment: str, folder: Path = FIGURES) -> Path:
    return folder / f"architecture_{assignment}.png"


def attention_01() -> Canvas:
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


def distilbert_02() -> Canvas:
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


def visualising_03() -> Canvas:
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


def finetuning_04() -> Canvas:
    c = Canvas(12, 6.5, "Assignment 4: fine-tuning a pretrained encoder for sentiment")
    x = 1.65
    c.box("data", x, 5.45, "sentences, labels (0/1)", w=2.3, h=0.45, kind="data")
    c.box(
        "tok",
        x,
        4.6,
        "tokenizer $\\to$ input_ids, attention_mask;\nthe collator pads to the batch's longest",
        w=3.0,
        h=0.6,
    )
    c.arrow(c.at("data", "bottom"), c.at("tok", "top"))
    c.box("enc", x, 3.55, "encoder: pretrained\nDistilBertModel, trained too", w=2.4, h=0.6)
    c.arrow(c.at("tok", "bottom"), c.at("enc", "top"), "(batch, seq) each")
    c.box("cls", x, 2.55, "hidden[:, 0]: [CLS] vector", w=2.4, h=0.45, kind="yours", exercise="1")
    c.arrow(c.at("enc", "bottom"), c.at("cls", "top"), "(batch, seq, dim)")
    c.box("head", x, 1.7, "dropout, W_hy: dim $\\to$ 1", w=2.4, h=0.45, kind="yours", exercise="1")
    c.arrow(c.at("cls", "bottom"), c.at("head", "top"), "(batch, dim)")
    c.box("z", x, 0.85, "logit z; predict: $\\sigma(z)$", w=2.4, h=0.45, kind="data")
    c.arrow(c.at("head", "bottom"), c.at("z", "top"), "(batch,)")
    c.group(0.2, 1.4, 3.15, 3.95, "SentimentClassifier")
    steps = [
        ("s1", "optimizer.zero_grad()", "given", None),
        ("s2", "training_step: BCE with logits\nagainst labels, under autocast", "yours", "2"),
        ("s3", "scaler.scale(loss).backward()", "given", None),
        ("s4", "unscale_, clip_grad_norm_", "given", None),
        ("s5", "scaler.step(optimizer): AdamW;\nscaler.update()", "given", None),
        ("s6", "scheduler.step(): linear\nwarm-up, then decay", "given", None),
    ]
    for i, (name, text, kind, exercise) in enumerate(steps):
        c.box(
            name,
            8.3,
            5.2 - 0.8 * i,
            text,
            w=2.7,
            h=0.6 if "\n" in text else 0.42,
            kind=kind,
            exercise=exercise,
            size=9,
        )
        if i:
            c.arrow(c.at(steps[i - 1][0], "bottom"), c.at(name, "top"))
    c.shape(8.38, 3.955, "loss: a scalar")
    c.group(6.7, 0.9, 9.9, 5.65, "optimisation_step (Ex 3)")
    c.arrow(
        c.at("z", "right"),
        c.at("s2", "left"),
        "z (batch,)",
        via=[(6.2, 0.85), (6.2, 4.4)],
        offset=(0, 0.2),
        ha="center",
        label_at=0.3,
    )
    c.arrow(c.at("s6", "right"), c.at("s1", "right"), via=[(10.25, 1.2), (10.25, 5.2)])
    c.note(10.32, 3.2, "next\nbatch", size=8)
    c.box(
        "eval",
        11.1,
        2.35,
        "evaluate: eval(),\nno_grad; accuracy,\nloss, confusion",
        w=1.55,
        h=0.85,
        kind="yours",
        exercise="4",
        size=8.5,
    )
    c.arrow(
        c.at("s6", "bottom"),
        c.at("eval", "bottom"),
        "every eval_every steps",
        via=[(8.3, 0.7), (11.1, 0.7)],
        offset=(0, -0.17),
        ha="center",
        label_at=0.45,
    )
    c.box(
        "hist",
        11.1,
        4.1,
        "history: train_loss,\nlr, val_loss,\nval_accuracy",
        w=1.55,
        h=0.8,
        kind="data",
        size=8.5,
    )
    c.arrow(c.at("eval", "top"), c.at("hist", "bottom"))
    c.group(6.45, 0.4, 11.95, 5.95, "train (Ex 5): epochs x batches, model.train(), tqdm", label_side="right")
    c.box(
        "analyser",
        4.7,
        2.35,
        "Analyser: new sentences\n$\\to$ predict $\\to$ DataFrame:\nprobability, label",
        w=2.15,
        h=0.8,
        kind="yours",
        exercise="6",
        size=8.5,
    )
    c.legend(loc="lower left")
    return c


def decoder_05() -> Canvas:
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


def question_answering_06() -> Canvas:
    c = Canvas(12, 6.2, "Assignment 6: extractive question answering, from logits to the answer's characters")
    c.box("text", 1.2, 5.0, "question, context\n(characters)", w=1.9, h=0.65, kind="data")
    c.box(
        "windows",
        4.3,
        5.0,
        "encode_windows: [CLS] q [SEP] ctx [SEP]\noverlapping windows (stride)",
        w=3.3,
        h=0.65,
        kind="yours",
        exercise="3",
    )
    c.arrow(c.at("text", "right"), c.at("windows", "left"))
    c.box(
        "model",
        8.9,
        5.0,
        "DistilBertForQuestionAnswering\n(encoder + qa_outputs: 2 logits per token)",
        w=3.6,
        h=0.65,
    )
    c.arrow(c.at("windows", "right"), c.at("model", "left"))
    c.note(2.65, 4.35, "input_ids, context_mask (n_windows, seq), offsets (n_windows, seq, 2)", size=8)
    c.box(
        "span",
        8.9,
        3.35,
        "best_span, per window: log-softmax over\ncontext + [CLS], s \u2264 e < s + max_answer_len",
        w=3.6,
        h=0.65,
        kind="yours",
        exercise="1",
    )
    c.arrow(c.at("model", "bottom"), c.at("span", "top"), "start, end logits (seq,) each")
    c.box(
        "chars",
        4.3,
        3.35,
        "answer_text: offsets[s][0] .. offsets[e][1]\n= the context's own characters",
        w=3.3,
        h=0.65,
        kind="yours",
        exercise="2",
    )
    c.arrow(c.at("span", "left"), c.at("chars", "right"))
    c.note(6.05, 3.85, "s, e, score, null", size=8)
    c.box(
        "answer",
        4.3,
        1.7,
        "best_answer: the best span over all windows,\nor no answer if the smallest null wins",
        w=3.6,
        h=0.65,
        kind="yours",
        exercise="4",
    )
    c.arrow(c.at("chars", "bottom"), c.at("answer", "top"), "text, char_start, char_end")
    c.box("result", 1.1, 1.7, '{"answer", "start",\n"end", "score"}', w=1.6, h=0.65, kind="data")
    c.arrow(c.at("answer", "left"), c.at("result", "right"))
    c.box(
        "pipeline",
        6.15,
        0.45,
        "transformers' QA pipeline: the same\nanswers, characters, scores",
        w=2.9,
        h=0.6,
    )
    c.arrow(c.at("answer", "bottom", 0.9), c.at("pipeline", "top", -0.95), "compared")
    c.box(
        "attention",
        8.9,
        1.7,
        "answer_attention: answer tokens \u2192 question\ntokens, mean over heads",
        w=3.6,
        h=0.65,
        kind="yours",
        exercise="5",
    )
    c.arrow(
        c.at("model", "right"),
        c.at("attention", "right"),
        "attentions (1, n_heads, seq, seq) per layer",
        via=[(11.2, 5.0), (11.2, 1.7)],
        label_at=0.5,
    )
    c.box(
        "figure", 9.3, 0.45, "heatmap per layer\n(n_layers, n_answer, n_question)", w=2.8, h=0.6, kind="data"
    )
    c.arrow(c.at("attention", "bottom", 0.4), c.at("figure", "top"))
    c.legend(loc="lower left", example="(n_windows, seq)")
    return c


DRAWINGS = {
    "01_attention": attention_01,
    "02_distilbert": distilbert_02,
    "03_visualising_attention": visualising_03,
    "04_finetuning": finetuning_04,
    "05_decoder": decoder_05,
    "06_question_answering": question_answering_06,
}


def draw(assignment: str, folder: Path = FIGURES) -> Path:
    """Draw one assignment's diagram into ``folder``; returns the PNG's path."""
    return DRAWINGS[assignment]().save(figure_path(assignment, folder))


def draw_all(folder: Path = FIGURES) -> list[Path]:
    return [draw(assignment, folder) for assignment in DRAWINGS]
