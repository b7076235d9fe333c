"""07_question_answering's reading list, under its diagram in the notebook's first cells
(``architecture_cell.py``): a few papers and one well-known implementation, each with one line on why it
matters here."""

#: [(reference key in staff.authoring.reading_lists.REFERENCES, why it matters here)], in reading order.
READING = [
    (
        "devlin",
        "question answering with an encoder (section 4.2, Figure 4c): question and passage in one "
        "input, a start and an end vector, the best span with start \u2264 end; section 4.3 answers "
        "SQuAD 2.0's unanswerable questions with a null answer at [CLS] (BERT's choice: SQuAD 2.0 only "
        "defines the questions), compared with the best span's score plus a threshold tuned on "
        "development data.",
    ),
    (
        "squad",
        "the task and its data: answers that are spans of a Wikipedia paragraph, exact match and F1.",
    ),
    (
        "squad2",
        "questions without an answer, and why a model must be able to abstain (exercise 4's `allow_null`).",
    ),
    (
        "drqa",
        "span decoding as the pipeline does it (best start \u2264 end within a maximum length, by the "
        "outer product of start and end probabilities), and reading long documents in pieces.",
    ),
    (
        "hf_qa",
        "the pipeline's steps, in code: offsets, `sequence_ids`, overlapping windows with `stride`, "
        "and the best span over the windows.",
    ),
    (
        "sanh",
        "DistilBERT, the online model here, distilled on SQuAD (`distilbert-base-cased-distilled-squad`).",
    ),
    ("clark", "what the attention of your figure can show (assignment 3): which tokens a head reads."),
    (
        "vaswani",
        "the encoder layers under the QA head; multi-head attention (section 3.2.2), whose heads "
        "exercise 5 averages.",
    ),
    ("annotated", "where the attention weights of your figure are computed, in code."),
]
