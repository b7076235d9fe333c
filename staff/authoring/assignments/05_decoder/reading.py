"""05_decoder's reading list, under its diagram in the notebook's first cells (``architecture_cell.py``):
a few papers and one well-known implementation, each with one line on why it matters here."""

#: [(reference key in staff.authoring.reading_lists.REFERENCES, why it matters here)], in reading order.
READING = [
    (
        "vaswani",
        "the decoder's masked self-attention (section 3.2.3): a position attends only to earlier ones, "
        "which exercise 1's mask enforces.",
    ),
    ("radford", "GPT-2, the decoder-only model your `GPT` matches."),
    (
        "xiong",
        "pre-LN, as in GPT-2 and your `Block`: with LayerNorm before each part the gradients stay "
        "well scaled, and deep models train even without warm-up.",
    ),
    ("holtzman", "top-p (nucleus) sampling, exercise 3, and why greedy text degenerates into loops."),
    (
        "nanogpt",
        "a small, readable GPT-2 with a KV-cache-free `generate`, the closest relative of your exercises 2 "
        "and 3 (its predecessor, [minGPT](https://github.com/karpathy/minGPT), is written to be read).",
    ),
    (
        "annotated",
        "the original transformer's decoder, its masked attention and greedy decoding, in PyTorch.",
    ),
    ("devlin", "the encoder half you built in assignments 2 to 4, for contrast."),
    ("sanh", "the distillation behind `distilgpt2`, the online model here, trained like DistilBERT."),
]
