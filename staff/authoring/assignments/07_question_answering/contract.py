"""What 07_question_answering's released text promises about the inputs its tests feed each exercise (see
:mod:`staff.authoring.contract_kit`): every term quotes the notebook's own words."""

from __future__ import annotations

import numpy as np

from course import models, qa
from staff.authoring.contract_kit import Case, booleans, floats, integers, one_of, shapes, term, text

# ---- what the release promises about each exercise's inputs (staff.authoring.contract_kit) -----

LAYOUT = "`[CLS] question tokens [SEP] context tokens [SEP]`"
SPAN_SHAPES = (
    "the logits are tensors `(seq,)` of one window, `context_mask` a boolean tensor `(seq,)` that is "
    "`True` on context tokens, and position 0 is `[CLS]`"
)
MAX_LEN = "it is at most `max_answer_len` tokens long"
COVERS = "token $i$ covers `context[offsets[i][0]:offsets[i][1]]` (for context tokens"
OVERLAP = "consecutive pieces **overlap** by `stride` tokens"
ANSWER_SHAPES = "the logits and `context_mask` are `(n_windows, seq)`, `offsets` is `(n_windows, seq, 2)`"
ATTENTION_SHAPES = "one tensor `(1, n_heads, seq, seq)` per layer (one window)"
HEAD = "Only the question-answering head and the encoder's top two layers were trained"


def _run(row: np.ndarray) -> tuple[int, int] | None:
    """The first and last position of the one run of ``True`` in ``row``, or None (no run, or several)."""
    ones = np.flatnonzero(row)
    if ones.size == 0 or ones[-1] - ones[0] + 1 != ones.size:
        return None
    return int(ones[0]), int(ones[-1])


def _context_layout(case: Case) -> str | None:
    """Each window's context mask: ``[CLS]``, at least one question token and ``[SEP]`` before one run
    of context tokens, then ``[SEP]`` (and padding)."""
    mask = np.asarray(case["context_mask"])
    for w, row in enumerate(mask.reshape(-1, mask.shape[-1])):
        where = "context_mask" if mask.ndim == 1 else f"context_mask of window {w}"
        run = _run(row)
        if run is None:
            return f"{where} is not one run of context tokens ({row.astype(int).tolist()})"
        if run[0] < 3:
            return f"{where}'s context starts at position {run[0]}, before [CLS], a question token and [SEP]"
        if run[1] >= row.size - 1:
            return f"{where}'s context reaches the last position: no [SEP] after it"
    return None


def _question_layout(case: Case) -> str | None:
    run = _run(np.asarray(case["question_mask"]))
    if run is None or run[0] != 1:
        return "question_mask is not one run of question tokens right after [CLS] (position 0)"
    if run[1] + 1 >= case["question_mask"].size - 1:
        return "question_mask leaves no [SEP] and no context token after the question"
    return None


def _count(key: str, low: int):
    """A Python int (a 0-d integer array) of at least ``low``."""

    def holds(case: Case) -> str | None:
        value = np.asarray(case[key])
        if value.ndim != 0 or value.dtype.kind not in "iu":
            return f"{key} is not one integer ({value.dtype}, shape {value.shape})"
        return None if int(value) >= low else f"{key} is {int(value)}, below {low}"

    return holds


def _context_chars(case: Case) -> int:
    return len(bytes(np.asarray(case["context"], dtype=np.uint8)).decode("utf-8"))


def _text_span(case: Case) -> str | None:
    """``start <= end``, both tokens of the window."""
    start, end = (int(v) for v in case["span"])
    seq = len(case["offsets"])
    return None if 0 <= start <= end < seq else f"span {start}..{end} is not start <= end within {seq} tokens"


def _span_chars(case: Case) -> str | None:
    """The span's tokens cover characters of the context, in order."""
    start, end = (int(v) for v in case["span"])
    chars, n = np.asarray(case["offsets"])[start : end + 1], _context_chars(case)
    if not ((chars >= 0).all() and (chars[:, 0] <= chars[:, 1]).all() and (chars <= n).all()):
        return f"the offsets of tokens {start}..{end} are not characters of the context ({n} characters)"
    if (np.diff(chars[:, 0]) < 0).any():
        return f"the offsets of tokens {start}..{end} go backwards in the context"
    return None


def _window_chars(case: Case) -> str | None:
    """Every window's context tokens cover characters of the context."""
    n = _context_chars(case)
    for w, (offsets, mask) in enumerate(zip(case["offsets"], case["context_mask"])):
        chars = np.asarray(offsets)[np.asarray(mask)]
        if not ((chars >= 0).all() and (chars[:, 0] <= chars[:, 1]).all() and (chars <= n).all()):
            return f"window {w}'s context offsets are not characters of the context ({n} characters)"
    return None


def _overlapping(case: Case) -> str | None:
    """Consecutive windows move forward through the context and overlap."""
    pieces = [np.asarray(o)[np.asarray(m)] for o, m in zip(case["offsets"], case["context_mask"])]
    for w in range(1, len(pieces)):
        before, now = pieces[w - 1], pieces[w]
        if not before[0, 0] < now[0, 0] < before[-1, 1]:
            return f"window {w}'s context (from character {now[0, 0]}) does not overlap the end of window {w - 1}'s"
    return None


def _at_most_8_windows(case: Case) -> str | None:
    n = len(case["start_logits"])
    return None if 1 <= n <= 8 else f"{n} windows"


def _stride(case: Case) -> str | None:
    """``1 <= stride <`` the context tokens a window of ``max_length`` holds (its length less the question
    and the three special tokens, counted in the expected first window)."""
    stride, max_length = int(case["stride"]), int(case["max_length"])
    fixed = int(
        (np.asarray(case["attention_mask"][0]).astype(bool) & ~np.asarray(case["context_mask"][0])).sum()
    )
    piece = max_length - fixed
    return (
        None
        if 1 <= stride < piece
        else f"stride {stride} is not between 1 and a piece of {piece} context tokens"
    )


def _answer_span(case: Case) -> str | None:
    start, end = (int(v) for v in case["span"])
    question = np.asarray(case["question_mask"])
    if not 0 < start <= end < question.size:
        return f"span {start}..{end} is not start <= end within the {question.size} tokens after [CLS]"
    return None if not question[start : end + 1].any() else f"span {start}..{end} holds question tokens"


def _softmax_rows(case: Case) -> str | None:
    weights = np.asarray(case["attentions"], dtype=np.float64)
    if (weights < 0).any():
        return "attentions holds negative weights"
    worst = float(np.abs(weights.sum(axis=-1) - 1.0).max())
    return None if worst <= 1e-4 else f"an attention row is {worst:.1e} away from summing to 1"


def _trained_part(case: Case) -> str | None:
    """The head and the top layers, as :func:`course.models.save_head` stores them (int8 matrices with
    their row scales), restored to finite floats."""
    weights = models.restore_head({k: np.asarray(v) for k, v in case.items()})
    if sorted(weights) != sorted(qa.QA_HEAD_KEYS):
        return f"it holds {len(weights)} arrays, not the head and the top layers"
    for key, value in weights.items():
        if value.dtype.kind != "f" or not np.isfinite(value).all():
            return f"{key} does not restore to finite floats"
    return None


#: What each exercise's text promises about the inputs its hidden tests feed it.
CONTRACT = {
    "qa_head": (
        shapes(HEAD, **{"qa_outputs.weight": "2 dim", "qa_outputs.bias": "2"}),
        term(HEAD, "*", _trained_part),
    ),
    "spans": (
        shapes(SPAN_SHAPES, start_logits="seq", end_logits="seq", context_mask="seq"),
        floats(SPAN_SHAPES, ("start_logits", "end_logits")),
        booleans(SPAN_SHAPES, "context_mask"),
        term(LAYOUT, "context_mask", _context_layout),
        term(MAX_LEN, "max_answer_len", _count("max_answer_len", 1)),
    ),
    "texts": (
        text("The answer must be the **exact text of the context**", "context"),
        shapes(
            "`offsets` is a `(seq, 2)` tensor (or list of pairs) of one window", offsets="seq 2", span="2"
        ),
        integers(
            "`offsets` is a `(seq, 2)` tensor (or list of pairs) of one window", ("offsets", "span"), low=0
        ),
        term(
            "`start`, `end` the positions of the answer's first and last token (both included)",
            "span",
            _text_span,
        ),
        term(COVERS, ("offsets", "span", "context"), _span_chars),
    ),
    "windows": (
        text(
            "Write `encode_windows(tokenizer, question, context, max_length=384, stride=128)`",
            ("question", "context"),
        ),
        integers("A model reads at most `max_position_embeddings` tokens (512 here)", "max_length", 1, 512),
        term(OVERLAP, "max_length", _count("max_length", 1)),
        term(OVERLAP, "stride", _count("stride", 1)),
        term(OVERLAP, ("stride", "max_length"), _stride),
    ),
    "answers": (
        shapes(
            ANSWER_SHAPES,
            start_logits="n_windows seq",
            end_logits="n_windows seq",
            context_mask="n_windows seq",
            offsets="n_windows seq 2",
        ),
        floats(ANSWER_SHAPES, ("start_logits", "end_logits")),
        booleans(ANSWER_SHAPES, "context_mask"),
        integers(ANSWER_SHAPES, "offsets", low=0),
        term("Hidden tests (6 points): 1 to 8 windows", ("start_logits", "end_logits"), _at_most_8_windows),
        term(LAYOUT, "context_mask", _context_layout),
        term(OVERLAP, ("offsets", "context_mask"), _overlapping),
        term(COVERS, ("offsets", "context"), _window_chars),
        text("The answer must be the **exact text of the context**", "context"),
        term(MAX_LEN, "max_answer_len", _count("max_answer_len", 1)),
        one_of("With `allow_null=False`, always return the best span.", "allow_null", (0, 1)),
    ),
    "attention": (
        shapes(ATTENTION_SHAPES, attentions="n_layers 1 n_heads seq seq", question_mask="seq", span="2"),
        floats(ATTENTION_SHAPES, "attentions"),
        term(
            "`attentions` is the tuple a model returns with `output_attentions=True`",
            "attentions",
            _softmax_rows,
        ),
        booleans(
            "`question_mask` a boolean tensor `(seq,)`, `True` on the question's tokens (sequence id 0)",
            "question_mask",
        ),
        term(LAYOUT, "question_mask", _question_layout),
        integers("An answer is a span of context tokens `s..e` (both included)", "span", low=0),
        term("An answer is a span of context tokens `s..e` (both included)", "span", _answer_span),
    ),
}
