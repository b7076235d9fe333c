"""04_finetuning's architecture diagram (fine-tuning a pretrained encoder for sentiment): drawn by ``python -m
staff figure`` into ``docs/figures/architecture_04_finetuning.png`` (:mod:`staff.authoring.diagram_kit`)."""

from __future__ import annotations

from staff.authoring.diagram_kit import Canvas


def draw() -> Canvas:
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
