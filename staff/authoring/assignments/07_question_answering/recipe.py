"""Fixtures for 07_question_answering: the offline QA model's trained part, and logits, contexts,
windows and attention to decode.

Trained (:data:`TRAINED`, public): ``qa_head``, the trained part of a ``DistilBertForQuestionAnswering``
on the course's pretrained encoder: its ``qa_outputs`` head and the encoder's top two layers
(:data:`course.qa.QA_HEAD_KEYS`), tuned on questions built from *The Devil's Dictionary*
(:func:`course.qa.make_question`: "What is <word>?" about a context of one to three entries, a fifth
of them about a word the context does not define, whose answer is ``[CLS]``) by
:mod:`staff.authoring.qa_head`. ``make fixtures`` keeps the committed model; ``--retrain`` trains it
again (about 6 minutes on 2 cores) and checks it reaches what the notebook states
(:data:`MIN_VALIDATION`); ``make fixtures-check`` checks the committed model reaches it on this CPU
(:func:`verify_trained`) instead of training it three times per test run.

Public (visible checks): small cases of each exercise. Hidden (autograder only), other sizes:

- ``spans``: one window's start/end logits with a ``[CLS] question [SEP] context [SEP] padding``
  layout, ``max_answer_len``; the expected best ``span`` and ``scores`` (score, null score). Cases
  where the question's tokens have the largest logits (an unmasked decoder answers from the
  question), where the best unconstrained span is longer than ``max_answer_len``, exact ties, and
  the trained model's own logits on unseen questions.
- ``texts``: contexts with accents, capitals and punctuation, the tokenizer's offsets for a
  question/context pair, a token span; the expected ``answer`` (UTF-8 bytes) and ``chars``.
- ``windows``: question, context, ``max_length`` and ``stride``; what ``encode_windows`` returns.
- ``answers``: per-window logits, context masks and offsets of real windows of a long context,
  the context, ``max_answer_len``, ``allow_null``; the expected ``answer``, ``chars`` and ``score``.
  The answer in a later window, a tie across windows (the earlier wins), a null score that must be
  the smallest over the windows (the largest, or the first window's, gives the wrong verdict),
  null winning and losing, and the trained model's logits.
- ``attention``: attention tuples (stacked), an answer ``span``, a ``question_mask``; the expected
  head-averaged ``maps`` from the answer to the question; random and the model's own.

Every expected value comes from the notebook's own solution
(:func:`staff.authoring.reference.solution_namespace`) on the offline model, in float32 on the CPU.
Random inputs come from :class:`staff.authoring.tensors.Draws`, questions from Python's
``random.Random`` (both the same on every machine).
"""

from __future__ import annotations

import math
import random
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file

from course import models, qa
from course.fixtures import pack_cases
from staff.authoring import qa_head
from staff.authoring.reference import solution_namespace
from staff.authoring.tensors import Draws, int_array, text_bytes

ASSIGNMENT = "07_question_answering"
TRAINED = ("qa_head",)
#: Inputs computed by the pretrained model (its logits and attention) move by a few 1e-6 on another
#: CPU's kernels; kernels read the committed copy, so the check allows half of a loose tolerance.
TOLERANCES = {
    "*": (1e-6, 1e-5),
    # Sums of two log-probabilities of the float32 model, graded to 1e-4 (the hidden tests): they
    # moved by 1.53e-5 on an Intel Xeon (issue 50) and 1.24e-5 on an AMD EPYC, 15% and 12% of that,
    # where the check allowed a tenth. An honest student there keeps 85% of the margin; the check
    # allows a quarter, no more.
    "spans/scores": (1e-4, 0.0, 0.25),
    "answers/score": (1e-4, 0.0, 0.25),
    "spans/start_logits": (1e-4, 1e-4, 0.5),
    "spans/end_logits": (1e-4, 1e-4, 0.5),
    "answers/start_logits": (1e-4, 1e-4, 0.5),
    "answers/end_logits": (1e-4, 1e-4, 0.5),
    "attention/attentions": (1e-5, 1e-5, 0.5),
    "attention/maps": (1e-6, 1e-5, 0.5),
    "qa_head": (1.0, 1.0),
}
#: The expected outputs in each fixture: a grading kernel never sees them, the judge compares with them.
OUTPUTS = {
    "spans": ("span", "scores"),
    "texts": ("answer", "chars"),
    "windows": ("input_ids", "attention_mask", "context_mask", "offsets"),
    "answers": ("answer", "chars", "score"),
    "attention": ("maps",),
}


#: On the gate's held-out questions (words and definitions the model never saw; the development set that
#: selects the model, never the notebook's test questions), as the notebook states: the model's F1
#: ahead of the first-definition rule's by this many points (SQuAD's F1, answerable questions), and the
#: share (%) of the questions without an answer it answers with "no answer". A floor against a
#: broken retraining, not a claim that the model reads: the heading rule answers all of them.
MIN_VALIDATION = {"F1 over the rule": 15.0, "no answer found": 70.0}
MAX_ANSWER_LEN = 20
#: How far apart the best and the second-best candidate must be in a case that is not a designed tie,
#: so that float32 against float64 arithmetic (or another CPU) cannot swap them.
MARGIN = 1e-3


# ---- the trained head (staff/authoring/qa_head.py) ---------------------------------------------


def train() -> dict:
    """The trained fixtures alone (:data:`TRAINED`): the head, fitted and checked against
    :data:`MIN_VALIDATION` (:func:`staff.authoring.qa_head.build_head`)."""
    return {("public", "qa_head"): qa_head.build_head(solution_namespace(ASSIGNMENT), MIN_VALIDATION)}


def verify_trained(committed: dict[tuple[str, str], dict[str, np.ndarray]]) -> list[str]:
    """What the committed model falls short of on this CPU (``make fixtures-check``): retraining it
    takes minutes, and the check runs three times per test run; ``--retrain`` trains and checks it."""
    tokenizer, model = load_model(committed[("public", "qa_head")])
    scores = qa_head.validation_scores(solution_namespace(ASSIGNMENT), model, tokenizer)
    return [
        f"{ASSIGNMENT}/qa_head (trained): the committed model {p}"
        for p in qa_head.check_scores(scores, MIN_VALIDATION)
    ]


def load_model(head: dict[str, np.ndarray]):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "qa_head.safetensors"
        save_file(head, str(path))
        return models.load_tokenizer(), qa.load_question_answering(path)


# ---- exercise 1: spans --------------------------------------------------------------------------


def _layout(n_question: int, n_context: int, n_padding: int) -> torch.Tensor:
    """The context mask of ``[CLS] question [SEP] context [SEP] padding``."""
    mask = torch.zeros(3 + n_question + n_context + n_padding, dtype=torch.bool)
    mask[2 + n_question : 2 + n_question + n_context] = True
    return mask


def _candidates(start_logits, end_logits, context_mask, max_answer_len) -> list[float]:
    """Every valid span's score, best first (to check margins)."""
    allowed = context_mask.clone()
    allowed[0] = True
    ls = start_logits.double().masked_fill(~allowed, -math.inf).log_softmax(0)
    le = end_logits.double().masked_fill(~allowed, -math.inf).log_softmax(0)
    positions = context_mask.nonzero()[:, 0].tolist()
    return sorted(
        (ls[s] + le[e]).item() for s in positions for e in positions if 0 <= e - s < max_answer_len
    )[::-1]


def span_case(
    sol: dict, start_logits, end_logits, context_mask, max_answer_len: int, tie: bool = False
) -> dict:
    start, end, score, null = sol["best_span"](start_logits, end_logits, context_mask, max_answer_len)
    scores = _candidates(start_logits, end_logits, context_mask, max_answer_len)
    if not tie and len(scores) > 1 and scores[0] - scores[1] < MARGIN:
        raise RuntimeError(
            f"a span case without a designed tie has its two best spans {scores[0] - scores[1]:.2e} apart"
        )
    return {
        "start_logits": start_logits.numpy().copy(),
        "end_logits": end_logits.numpy().copy(),
        "context_mask": context_mask.numpy(),
        "max_answer_len": int_array(max_answer_len),
        "span": np.array([start, end], dtype=np.int64),
        "scores": np.array([score, null], dtype=np.float64),
    }


def random_span_case(
    sol: dict,
    draws: Draws,
    n_question: int,
    n_context: int,
    n_padding: int,
    max_answer_len: int,
    loud_question: bool = False,
    too_long: bool = False,
    tie: bool = False,
) -> dict:
    mask = _layout(n_question, n_context, n_padding)
    start, end = draws.normal(len(mask)) * 2.0, draws.normal(len(mask)) * 2.0
    context = mask.nonzero()[:, 0]
    if loud_question:  # the question's tokens (and the padding) have the largest logits
        start[1 : 1 + n_question] += 8.0
        end[1 : 1 + n_question] += 8.0
        start[~mask & (torch.arange(len(mask)) > 2 + n_question + n_context)] += 8.0
    if too_long:  # the best unconstrained span is longer than max_answer_len
        start[context[1]] += 6.0
        end[context[1] + max_answer_len + 1] += 6.0
    if tie:  # two context tokens with the same logits, far apart: one-token spans tie
        a, b = int(context[1]), int(context[-2])
        start[a] = start[b] = end[a] = end[b] = 7.0
    return span_case(sol, start, end, mask, max_answer_len, tie=tie)


@torch.no_grad()
def model_span_case(sol: dict, tokenizer, model, question: str, context: str, max_answer_len: int) -> dict:
    windows = sol["encode_windows"](tokenizer, question, context)
    output = model(input_ids=windows["input_ids"], attention_mask=windows["attention_mask"])
    return span_case(
        sol, output.start_logits[0], output.end_logits[0], windows["context_mask"][0], max_answer_len
    )


# ---- exercise 2: texts --------------------------------------------------------------------------


def text_case(sol: dict, tokenizer, question: str, context: str, which: str, draws: Draws) -> dict:
    encoded = tokenizer(question, context, return_offsets_mapping=True)
    positions = [i for i, sid in enumerate(encoded.sequence_ids()) if sid == 1]
    if which == "one":
        start = end = positions[int(draws.integers(0, len(positions), (1,))[0])]
    elif which == "edges":
        start, end = positions[0], positions[-1]
    else:
        a, b = sorted(int(i) for i in draws.integers(0, len(positions), (2,)))
        start, end = positions[a], positions[max(b, a + 1)] if a + 1 < len(positions) else positions[a]
    offsets = np.array(encoded["offset_mapping"], dtype=np.int64)
    text, char_start, char_end = sol["answer_text"](context, offsets, start, end)
    return {
        "context": text_bytes(context),
        "offsets": offsets,
        "span": np.array([start, end], dtype=np.int64),
        "answer": text_bytes(text),
        "chars": np.array([char_start, char_end], dtype=np.int64),
    }


# ---- exercise 3: windows ------------------------------------------------------------------------


def windows_case(sol: dict, tokenizer, question: str, context: str, max_length: int, stride: int) -> dict:
    got = sol["encode_windows"](tokenizer, question, context, max_length, stride)
    return {
        "question": text_bytes(question),
        "context": text_bytes(context),
        "max_length": int_array(max_length),
        "stride": int_array(stride),
        **{key: got[key].numpy() for key in ("input_ids", "attention_mask", "offsets")},
        "context_mask": got["context_mask"].numpy(),
    }


# ---- exercise 4: answers ------------------------------------------------------------------------


def answer_case(
    sol: dict,
    windows: dict,
    context: str,
    start_logits,
    end_logits,
    max_answer_len: int,
    allow_null: bool,
    tie: bool = False,
) -> dict:
    """The expected answer; unless ``tie``, the best window's score, the next window's and the null
    decision are at least :data:`MARGIN` apart."""
    got = sol["best_answer"](
        start_logits,
        end_logits,
        windows["context_mask"],
        windows["offsets"],
        context,
        max_answer_len,
        allow_null,
    )
    per_window = sorted(
        (
            sol["best_span"](start_logits[w], end_logits[w], windows["context_mask"][w], max_answer_len)
            for w in range(len(start_logits))
        ),
        key=lambda r: -r[2],
    )
    nulls = [r[3] for r in per_window]
    if not tie and len(per_window) > 1 and per_window[0][2] - per_window[1][2] < MARGIN:
        raise RuntimeError("an answer case's two best windows are too close")
    if allow_null and abs(min(nulls) - per_window[0][2]) < MARGIN:
        raise RuntimeError("an answer case's null score is too close to its best span's")
    return {
        "start_logits": start_logits.numpy().copy(),
        "end_logits": end_logits.numpy().copy(),
        "context_mask": windows["context_mask"].numpy(),
        "offsets": windows["offsets"].numpy(),
        "context": text_bytes(context),
        "max_answer_len": int_array(max_answer_len),
        "allow_null": int_array(int(allow_null)),
        "answer": text_bytes(got["answer"]),
        "chars": np.array([got["start"], got["end"]], dtype=np.int64),
        "score": np.array(got["score"], dtype=np.float64),
    }


def random_answer_cases(
    sol: dict, tokenizer, draws: Draws, question: str, context: str, max_length: int, stride: int, kind: str
) -> list[dict]:
    """Random logits on real windows of a long context, shaped by ``kind``."""
    windows = sol["encode_windows"](tokenizer, question, context, max_length, stride)
    n, seq = windows["input_ids"].shape
    start, end = draws.normal(n, seq) * 2.0, draws.normal(n, seq) * 2.0
    mask = windows["context_mask"]
    if kind == "later":  # a clear answer in the last window
        tokens = mask[-1].nonzero()[:, 0]
        start[-1, tokens[2]] += 9.0
        end[-1, tokens[4]] += 9.0
        return [answer_case(sol, windows, context, start, end, 10, False)]
    if kind == "tie":  # window 1 repeats window 0's logits: the same score, the earlier window wins
        start[1], end[1] = start[0], end[0]
        mask_equal = torch.equal(mask[0], mask[1])
        if not mask_equal:
            raise RuntimeError("the tie case needs windows 0 and 1 with the same layout")
        start[0, mask[0].nonzero()[3, 0]] += 9.0
        end[0, mask[0].nonzero()[3, 0]] += 9.0
        start[1], end[1] = start[0], end[0]
        return [answer_case(sol, windows, context, start, end, 6, False, tie=True)]
    if kind == "null":  # [CLS] loud in every window but one: the smallest null score decides
        start[:, 0] += 6.0
        end[:, 0] += 6.0
        start[1, 0] -= 9.0
        end[1, 0] -= 9.0
        lower = [
            answer_case(sol, windows, context, start, end, 8, allow_null) for allow_null in (True, False)
        ]
        start[1, 0] += 12.0  # now every window prefers [CLS]: no answer
        end[1, 0] += 12.0
        return lower + [answer_case(sol, windows, context, start, end, 8, True)]
    raise ValueError(kind)


@torch.no_grad()
def model_answer_case(
    sol: dict, tokenizer, model, question: str, context: str, max_length: int, stride: int, allow_null: bool
) -> dict:
    windows = sol["encode_windows"](tokenizer, question, context, max_length, stride)
    output = model(input_ids=windows["input_ids"], attention_mask=windows["attention_mask"])
    return answer_case(
        sol, windows, context, output.start_logits, output.end_logits, MAX_ANSWER_LEN, allow_null
    )


# ---- exercise 5: attention ----------------------------------------------------------------------


def attention_case(sol: dict, attentions: tuple, span: tuple[int, int], question_mask: torch.Tensor) -> dict:
    maps = sol["answer_attention"](attentions, *span, question_mask)
    return {
        "attentions": torch.stack(attentions).numpy(),
        "span": np.array(span, dtype=np.int64),
        "question_mask": question_mask.numpy(),
        "maps": maps.numpy(),
    }


def random_attention_case(
    sol: dict,
    draws: Draws,
    n_layers: int,
    n_heads: int,
    n_question: int,
    n_context: int,
    span: tuple[int, int],
) -> dict:
    seq = 3 + n_question + n_context
    attentions = tuple((draws.normal(1, n_heads, seq, seq) * 2.0).softmax(dim=-1) for _ in range(n_layers))
    question_mask = torch.zeros(seq, dtype=torch.bool)
    question_mask[1 : 1 + n_question] = True
    return attention_case(sol, attentions, span, question_mask)


@torch.no_grad()
def model_attention_case(sol: dict, tokenizer, model, question: str, context: str) -> dict:
    windows = sol["encode_windows"](tokenizer, question, context)
    output = model(
        input_ids=windows["input_ids"], attention_mask=windows["attention_mask"], output_attentions=True
    )
    start, end, _, _ = sol["best_span"](
        output.start_logits[0], output.end_logits[0], windows["context_mask"][0], MAX_ANSWER_LEN
    )
    question_mask = torch.tensor([sid == 0 for sid in tokenizer(question, context).sequence_ids()])
    return attention_case(sol, tuple(output.attentions), (start, end), question_mask)


#: Contexts for the offsets tests: accents (the offline tokenizer strips them), capitals, punctuation.
TEXTS = {
    "public": [
        ("Who wrote it?", "Ambrose Bierce wrote The Devil's Dictionary, finished in 1906."),
        ("What is it?", "A cynic's word-book: 998 entries, all of them wicked."),
    ],
    "hidden": [
        ("Où est-il?", "Le café «Chez Müller» — ouvert à 7h30, fermé le lundi."),
        ("What did Zoë order?", "Zoë ordered crème brûlée (twice!) at 9:45 p.m., then left."),
        ("Which year?", "In 1911, Boni published it; the 1906 edition was called THE CYNIC'S WORD BOOK."),
        ("Who?", "Naïve Ångström met O'Brien-Smith."),
        (
            "Longest?",
            "Antidisestablishmentarianism, floccinaucinihilipilification and hippopotomonstrosesquippedaliophobia.",
        ),
    ],
}


def build(trained: dict | None = None) -> dict:
    sol = solution_namespace(ASSIGNMENT)
    head = (trained or train())[("public", "qa_head")]
    tokenizer, model = load_model(head)
    public, hidden = Draws(2026), Draws(6_2026)
    unseen = random.Random(606)  # questions students never see (the notebook's use other seeds)
    asked = [qa.make_question(unseen, n) for n in (2, 3)]
    long_unseen = [qa.make_question(unseen, n) for n in (9, 12)]
    no_answer = qa.make_question(unseen, 2, answerable=False)
    long_public = qa.make_question(random.Random(5), 7)
    return {
        ("public", "qa_head"): head,
        ("public", "spans"): pack_cases(
            [
                random_span_case(sol, public, 3, 8, 0, 4),
                random_span_case(sol, public, 4, 10, 2, 15, loud_question=True),
            ]
        ),
        ("hidden", "spans"): pack_cases(
            [
                random_span_case(sol, hidden, 6, 12, 3, 5, loud_question=True),
                random_span_case(sol, hidden, 2, 25, 0, 6, too_long=True),
                random_span_case(sol, hidden, 5, 9, 4, 3, tie=True),
                random_span_case(sol, hidden, 1, 1, 2, 15),
                random_span_case(sol, hidden, 9, 30, 5, 11, loud_question=True, too_long=True),
                model_span_case(sol, tokenizer, model, *asked[0][:2], MAX_ANSWER_LEN),
                model_span_case(sol, tokenizer, model, *no_answer[:2], 8),
            ]
        ),
        ("public", "texts"): pack_cases(
            text_case(sol, tokenizer, q, c, which, public)
            for (q, c), which in zip(TEXTS["public"], ("some", "one"))
        ),
        ("hidden", "texts"): pack_cases(
            text_case(sol, tokenizer, q, c, which, hidden)
            for (q, c), which in zip(TEXTS["hidden"], ("some", "one", "edges", "some", "one"))
        ),
        ("public", "windows"): pack_cases([windows_case(sol, tokenizer, *long_public[:2], 64, 16)]),
        ("hidden", "windows"): pack_cases(
            [
                windows_case(sol, tokenizer, *asked[1][:2], 384, 128),
                windows_case(sol, tokenizer, *long_unseen[0][:2], 48, 8),
                windows_case(sol, tokenizer, *long_unseen[1][:2], 100, 40),
            ]
        ),
        ("public", "answers"): pack_cases(
            [
                *random_answer_cases(sol, tokenizer, public, *long_public[:2], 64, 16, "later"),
                model_answer_case(sol, tokenizer, model, *asked[0][:2], 384, 128, False),
            ]
        ),
        ("hidden", "answers"): pack_cases(
            [
                *random_answer_cases(sol, tokenizer, hidden, *long_unseen[0][:2], 48, 8, "later"),
                *random_answer_cases(sol, tokenizer, hidden, *long_unseen[1][:2], 40, 10, "tie"),
                *random_answer_cases(sol, tokenizer, hidden, *long_unseen[1][:2], 56, 16, "null"),
                model_answer_case(sol, tokenizer, model, *long_unseen[1][:2], 64, 24, False),
                model_answer_case(sol, tokenizer, model, *no_answer[:2], 384, 128, True),
            ]
        ),
        ("public", "attention"): pack_cases([random_attention_case(sol, public, 2, 3, 3, 6, (6, 8))]),
        ("hidden", "attention"): pack_cases(
            [
                random_attention_case(sol, hidden, 3, 2, 5, 9, (9, 12)),
                random_attention_case(sol, hidden, 1, 4, 2, 4, (6, 6)),
                model_attention_case(sol, tokenizer, model, *asked[1][:2]),
            ]
        ),
    }
