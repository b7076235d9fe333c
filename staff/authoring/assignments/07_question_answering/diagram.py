"""07_question_answering's architecture diagram (extractive question answering, from logits to the answer's
characters): drawn by ``python -m staff figure`` into
``docs/figures/architecture_07_question_answering.png`` (:mod:`staff.authoring.diagram_kit`)."""

from __future__ import annotations

from staff.authoring.diagram_kit import Canvas


def draw() -> Canvas:
    c = Canvas(12, 6.2, "Assignment 7: extractive question answering, from logits to the answer's characters")
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
