"""05_decoder's reading list, under its diagram in the notebook's first cells (``architecture_cell.py``):
a few papers and one well-known implementation, each with one line on why it matters here."""

#: [(reference key in staff.authoring.reading_lists.REFERENCES, why it matters here)], in reading order.
READING = [
    (
        "vaswani",
        "the encoder-decoder layer of exercise 2: masked self-attention, then cross-attention "
        "(section 3.1, Figure 1).",
    ),
    ("radford", "GPT-2, the decoder-only model your `GPT` matches."),
    (
        "xiong",
        "pre-LN, as in GPT-2 and your `Block`: with LayerNorm before each part the gradients stay "
        "well scaled, and deep models train even without warm-up.",
    ),
    ("holtzman", "top-p (nucleus) sampling, exercise 4, and why greedy text degenerates into loops."),
    (
        "nanogpt",
        "a small, readable GPT-2 and its training loop, the closest relative of your exercise 5 "
        "(its predecessor, [minGPT](https://github.com/karpathy/minGPT), is written to be read).",
    ),
    (
        "bahdanau",
        "exercise 6: attention as a learned alignment between output and input; the maps of their "
        "Figure 3 look like your cross-attention figure, a diagonal where French keeps English's word "
        "order and reversed where it does not.",
    ),
    ("annotated", "the encoder-decoder transformer and greedy decoding, in PyTorch."),
    ("devlin", "the encoder half you built in assignments 2 to 4, for contrast."),
    ("sanh", "the distillation behind `distilgpt2`, the online model here, trained like DistilBERT."),
]
