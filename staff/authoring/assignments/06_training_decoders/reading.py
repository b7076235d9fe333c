"""06_training_decoders' reading list, under its diagram in the notebook's first cells
(``architecture_cell.py``): a few papers and one well-known implementation, each with one line on why
it matters here."""

#: [(reference key in staff.authoring.reading_lists.REFERENCES, why it matters here)], in reading order.
READING = [
    (
        "vaswani",
        "the encoder-decoder layer of exercise 1: masked self-attention, then cross-attention "
        "(section 3.1, Figure 1).",
    ),
    (
        "nanogpt",
        "a small, readable GPT-2 and its training loop, the closest relative of your exercise 2 "
        "(its predecessor, [minGPT](https://github.com/karpathy/minGPT), is written to be read).",
    ),
    (
        "bahdanau",
        "exercise 3: attention as a learned alignment between output and input; the maps of their "
        "Figure 3 look like your cross-attention figure, a diagonal where French keeps English's word "
        "order and reversed where it does not.",
    ),
    ("annotated", "the encoder-decoder transformer, teacher forcing and greedy decoding, in PyTorch."),
    ("radford", "GPT-2, the decoder-only model you train here at a small scale, on characters."),
    (
        "devlin",
        "the encoder half you built in assignments 2 to 4; the encoder-decoder of exercise 3 joins both halves.",
    ),
    (
        "sanh",
        "DistilBERT, trained to match a teacher's distribution over tokens: the same cross-entropy your "
        "language model minimises, with softer targets.",
    ),
]
