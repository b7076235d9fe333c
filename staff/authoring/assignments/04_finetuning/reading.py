"""04_finetuning's reading list, under its diagram in the notebook's first cells (``architecture_cell.py``):
a few papers and one well-known implementation, each with one line on why it matters here."""

#: [(reference key in staff.authoring.reading_lists.REFERENCES, why it matters here)], in reading order.
READING = [
    ("devlin", "fine-tuning the whole encoder with a head on `[CLS]` (section 4.1, GLUE's SST-2)."),
    (
        "sanh",
        "DistilBERT's results on GLUE, SST-2 included; online, the encoder you fine-tune here "
        "is this pretrained DistilBERT (distilbert-base-uncased).",
    ),
    (
        "howard",
        "fine-tuning a pretrained language model for classification, and why warm-up and "
        "learning-rate schedules matter.",
    ),
    (
        "mosbach",
        "why fine-tuning BERT is unstable on small data sets, and the remedy: small learning "
        "rates, Adam's bias correction, more training steps.",
    ),
    ("adamw", "AdamW, the optimiser of exercise 5: weight decay decoupled from the gradient step."),
    ("vaswani", "the encoder being fine-tuned."),
    (
        "annotated",
        "a full training loop for a transformer, with label smoothing and a learning-rate schedule.",
    ),
]
