"""01_attention's reading list, under its diagram in the notebook's first cells (``architecture_cell.py``):
a few papers and one well-known implementation, each with one line on why it matters here."""

#: [(reference key in staff.authoring.reading_lists.REFERENCES, why it matters here)], in reading order.
READING = [
    (
        "vaswani",
        "sections 3.2 and 3.5: scaled dot-product and multi-head attention, the $\\sqrt{d_k}$ "
        "(footnote 4) and the sinusoidal encoding you write here.",
    ),
    ("bahdanau", "where attention began: a decoder that learns which source words to look at."),
    ("annotated", "the paper as runnable PyTorch, line by line; compare its `attention()` with yours."),
    ("devlin", "the encoder you will load in assignment 2 is this model's architecture."),
    ("sanh", "the smaller BERT you build next, in assignment 2."),
]
