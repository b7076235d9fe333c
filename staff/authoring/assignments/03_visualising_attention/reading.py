"""03_visualising_attention's reading list, under its diagram in the notebook's first cells
(``architecture_cell.py``): a few papers and one well-known implementation, each with one line on why it
matters here."""

#: [(reference key in staff.authoring.reading_lists.REFERENCES, why it matters here)], in reading order.
READING = [
    (
        "clark",
        "the heads to look for: `[CLS]`/`[SEP]` sinks, previous- and next-token heads, entropy per head.",
    ),
    (
        "jain",
        "why a heatmap is not an explanation: other attention weights can give the same prediction.",
    ),
    ("wiegreffe", "the reply: when attention can still tell you something, and how to test it."),
    ("vig", "bertviz's head and model views, by their author."),
    ("devlin", "the special tokens `[CLS]` and `[SEP]` and sentence pairs (section 3)."),
    ("sanh", "the layout of the model whose attention you read."),
    ("vaswani", "multi-head attention (section 3.2.2): what one head and the average of all heads are."),
    ("annotated", "where the attention weights you plot are computed, in code."),
]
