"""02_distilbert's reading list, under its diagram in the notebook's first cells (``architecture_cell.py``):
a few papers and one well-known implementation, each with one line on why it matters here."""

#: [(reference key in staff.authoring.reading_lists.REFERENCES, why it matters here)], in reading order.
READING = [
    (
        "sanh",
        "the model you build: BERT's layers halved, no token-type embeddings, trained by distillation.",
    ),
    ("devlin", "the architecture and the `[CLS]` token the classifier reads (section 3, Figure 1)."),
    ("vaswani", "the post-LayerNorm encoder layer (section 3.1) that `AttentionBlock` implements."),
    ("annotated", "the same encoder layer, residuals and masks in PyTorch, explained line by line."),
    ("layernorm", "what `sa_layer_norm` and `output_layer_norm` compute, and why."),
    (
        "minilm",
        "the distillation behind the offline model, all-MiniLM-L6-v2 (a 6-layer MiniLM, then "
        "trained for sentence embeddings).",
    ),
    (
        "flash",
        "why a fused attention kernel (exercise 5) is faster: it never writes the score matrix to memory.",
    ),
]
