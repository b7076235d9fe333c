"""The example's reading list, under its diagram in the notebook's first cells
(``architecture_cell.py``). Copied by `make new-assignment`: replace it with the real exercises'."""

#: [(reference key in staff.authoring.reading_lists.REFERENCES, why it matters here)], in reading order.
READING = [
    (
        "layernorm",
        "the normalisation you write here: each token's features, not each feature over the batch.",
    ),
    (
        "vaswani",
        "where layer normalisation sits in the transformer: after each sublayer's residual (section 3.1).",
    ),
    ("xiong", "before each sublayer instead (pre-LN), and why deep models then train without warm-up."),
    ("annotated", "the transformer's `LayerNorm` in PyTorch, line by line."),
    ("devlin", "the encoder whose every layer normalises this way."),
    ("sanh", "DistilBERT, the smaller BERT of assignment 2, with the same layer normalisation."),
]
