"""Assignment 7's question answering: the model, questions built from shipped text, and transformers' pipeline.

The model (:func:`load_question_answering`, :func:`load_qa_tokenizer`) is loaded like
:mod:`course.models`' others: offline the course's converted encoder with a trained head, online the
hub's SQuAD model, one setting apart.

Why questions are built here: offline there is no SQuAD-trained model (or SQuAD) in the course,
so the offline model is the course's pretrained encoder with a question-answering head trained on
a small task made from *The Devil's Dictionary* (``data/lm/``, which ships): a context of a few
entries ("Abasement: A decent and customary mental attitude ... . Ability: ..."), the question
"What is abasement?", the answer the words of that entry's definition, a span of the context. A
question about a word the context does not define has no answer. The fixtures recipe trains the
head on such questions and the notebook asks new ones, all with :func:`make_question`, which draws
from Python's ``random.Random`` (the same draws on every machine).

Why :func:`pipeline_answer`: the notebook checks the student's span decoding against transformers'
``question-answering`` pipeline on the same model. transformers 5 removed that task
(``pipeline("question-answering")`` raises and points to chat models), but still ships the pipeline's
span decoder for document question answering (``select_starts_ends`` and ``decode_spans``,
unchanged). So on transformers 4.x this calls the pipeline itself, and on 5.x it runs the pipeline's
own steps: its tokenizer call (question first, ``truncation="only_second"``, ``stride``, offsets),
its ``p_mask`` (everything but the context and ``[CLS]``), transformers' ``select_starts_ends`` per
window, and its merge of the windows' answers (copied from transformers 4.57's
``QuestionAnsweringPipeline.postprocess``, which the course's tests compare with the real pipeline).
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from transformers import AutoTokenizer, DistilBertForQuestionAnswering, PreTrainedTokenizerBase

from course import paths
from course.env import is_online
from course.models import MODEL_INPUTS, _quiet, _with_head, load_tokenizer, save_head

#: The question-answering model used online: DistilBERT-base-*cased* distilled on SQuAD 1.1 (87.1 F1
#: on its dev set). Cased: it comes with its own tokenizer (:func:`load_qa_tokenizer`), not the
#: uncased one of the other assignments.
HUB_QA_MODEL = "distilbert-base-cased-distilled-squad"
#: The offline model's trained part: the question-answering head (a start and an end logit per
#: token) and the encoder's top ``TUNED_LAYERS`` layers (of 6), tuned by the course's fixtures
#: (``staff/authoring/qa_head.py``); the layers below are the pretrained encoder's.
TUNED_LAYERS = 2
_LAYER_KEYS = tuple(
    f"{module}.{part}"
    for module in (
        "attention.q_lin",
        "attention.k_lin",
        "attention.v_lin",
        "attention.out_lin",
        "sa_layer_norm",
        "ffn.lin1",
        "ffn.lin2",
        "output_layer_norm",
    )
    for part in ("weight", "bias")
)
QA_HEAD_KEYS = ("qa_outputs.weight", "qa_outputs.bias") + tuple(
    f"distilbert.transformer.layer.{layer}.{key}"
    for layer in range(6 - TUNED_LAYERS, 6)
    for key in _LAYER_KEYS
)
#: How many questions each part of the held-out words gets (:func:`held_out_questions`): the
#: development questions that select and gate a retrained model (``staff/authoring/qa_head.py``), and
#: the test questions the notebook reports on, about other words.
HELD_OUT_QUESTIONS = 300
#: The two parts of the held-out words: ``"gate"`` (development: selects and gates the model) and
#: ``"test"`` (the notebook's report). No word, as asked word or as an entry of a context, is in both.
HELD_OUT_PARTS = ("gate", "test")
#: The SQuAD 1.1 dev questions the notebook measures the online model on (a spaced sample, for time).
SQUAD_QUESTIONS = 500

CORPUS = paths.DATA / "lm" / "devils_dictionary.txt"
_ENTRY = re.compile(
    r"^([A-Z][A-Z']+), (?:n|v|adj|adv|v\.t|v\.i|x|pro|prep|conj)\.\s+(.+?)(?=\n\n|\Z)", re.M | re.S
)


@lru_cache(maxsize=1)
def dictionary_entries() -> tuple[tuple[str, str], ...]:
    """(word, definition) of every one-word entry of the shipped dictionary whose first sentence is
    3 to 14 words long and plain (no cross-references): the definition is that sentence without its
    final full stop, e.g. ("abasement", "A decent and customary mental attitude in the presence of
    wealth of power")."""
    entries = []
    for match in _ENTRY.finditer(CORPUS.read_text(encoding="ascii")):
        body = " ".join(match[2].split())
        first = re.match(r"(.+?[.!?])(\s|$)", body)
        if not first:
            continue
        definition = first[1].rstrip(".!?")
        if 3 <= len(definition.split()) <= 14 and not set("[]{}_") & set(definition):
            entries.append((match[1].lower(), definition))
    return tuple(entries)


def make_question(
    rng: random.Random,
    n_entries: int,
    answerable: bool = True,
    entries: tuple[tuple[str, str], ...] | None = None,
) -> tuple[str, str, int, str]:
    """(question, context, answer_start, answer): a context of ``n_entries`` dictionary entries and
    "What is <word>?" about one of them (``answer`` its definition, ``answer_start`` its first
    character in the context), or, when not ``answerable``, about a word the context does not
    define (``answer_start`` -1, ``answer`` "")."""
    entries = entries or dictionary_entries()
    chosen = rng.sample(entries, n_entries + (0 if answerable else 1))
    asked = rng.randrange(n_entries) if answerable else n_entries
    context, start = "", -1
    for index, (word, definition) in enumerate(chosen[:n_entries]):
        piece = f"{word.capitalize()}: "
        if index == asked:
            start = len(context) + len(piece)
        context += piece + definition + ". "
    answer = chosen[asked][1] if answerable else ""
    return f"What is {chosen[asked][0]}?", context.strip(), start, answer


def split_entries() -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """The dictionary's entries for training the offline model and for measuring it: disjoint words
    (4 in 5 for training), the same on every machine. The notebook's held-out questions are about
    the second part's words, which the model never saw in training."""
    entries = list(dictionary_entries())
    random.Random(0).shuffle(entries)
    cut = len(entries) * 4 // 5
    return tuple(entries[:cut]), tuple(entries[cut:])


def held_out_parts() -> dict[str, tuple[tuple[str, str], ...]]:
    """The held-out entries of :func:`split_entries` in two disjoint parts by word (``"gate"``: the first
    half, ``"test"``: the rest), the same on every machine."""
    _, held_out = split_entries()
    half = len(held_out) // 2
    return {"gate": held_out[:half], "test": held_out[half:]}


def held_out_questions(
    count: int, part: str, seed: int = 2, n_entries=(1, 2, 3)
) -> list[tuple[str, str, int, str]]:
    """``count`` questions (one in five without an answer) about the held-out words of ``part`` (see
    :data:`HELD_OUT_PARTS`: every entry of every context, and every asked word, is of that part),
    contexts of ``n_entries`` entries (drawn from the tuple)."""
    rng = random.Random(seed)
    entries = held_out_parts()[part]
    return [
        make_question(rng, rng.choice(n_entries), answerable=rng.random() >= 0.2, entries=entries)
        for _ in range(count)
    ]


def squad_questions(count: int = SQUAD_QUESTIONS) -> list[tuple[str, str, int, list[str]]]:
    """Online only: ``count`` questions of SQuAD 1.1's dev set (every question has an answer), evenly
    spaced over it (the set is ordered by article), as (question, context, first answer's start, the
    answers the annotators gave), the last as SQuAD's evaluation takes it (the best over them)."""
    from datasets import load_dataset

    dev = load_dataset("rajpurkar/squad", split="validation")
    rows = dev.select(range(0, len(dev), max(1, len(dev) // count))[:count])
    return [
        (row["question"], row["context"], row["answers"]["answer_start"][0], list(row["answers"]["text"]))
        for row in rows
    ]


# ---- rules that need no model: what the model must beat -----------------------------------------


def first_definition(context: str) -> str:
    """The rule "the first definition": answer every question with the context's first definition
    (the text between its first ": " and the full stop that ends that entry)."""
    return context.split(": ", 1)[-1].split(". ", 1)[0].rstrip(".")


def heading_lookup(question: str, context: str) -> str:
    """The rule "the asked word's heading": the definition of the entry headed by the word the
    question asks about ("What is rum?" -> after "Rum: "), "" (no answer) when no entry has it. On the
    course's dictionary questions it is right every time: the task needs no reading."""
    word = re.fullmatch(r"What is (.+)\?", question.strip())
    if not word:
        return ""
    for entry in context.rstrip(".").split(". "):
        heading, _, definition = entry.partition(": ")
        if heading.lower() == word[1].lower():
            return definition
    return ""


def sentences(context: str) -> list[str]:
    """The context's sentences (split after ".", "!" or "?" and a space), each without its final full stop."""
    return [s.rstrip(".") for s in re.split(r"(?<=[.!?])\s+", context.strip()) if s.strip(".")]


def first_sentence(context: str) -> str:
    """The rule "the first sentence" (SQuAD's passages have no entries): the context's first sentence."""
    return (sentences(context) or [""])[0]


#: Question words the overlap rule ignores: they say what is asked, not about what.
_STOP_WORDS = frozenset(
    "what which who whom whose when where why how is are was were be been do does did of in on at to "
    "for by with from and or as it its that this there".split()
)


def most_shared_words(question: str, context: str) -> str:
    """The rule "the sentence sharing the most words with the question" (in its simplest form, the
    sliding-window baseline of SQuAD's paper): the context's sentence with the most distinct normalised
    words of the question (question words such as *what*, *is* left out); the first on a tie; ""
    (no answer) when no sentence shares a word."""
    asked = set(_normalized_tokens(question)) - _STOP_WORDS
    best, shared = "", 0
    for sentence in sentences(context):
        count = len(asked & set(_normalized_tokens(sentence)))
        if count > shared:
            best, shared = sentence, count
    return best


def _normalized_tokens(text: str) -> list[str]:
    """SQuAD's answer normalisation (its official evaluation script): lower case, no punctuation,
    no articles (a, an, the), single spaces; then split into words."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return re.sub(r"\b(a|an|the)\b", " ", text).split()


_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def exact_match(prediction: str, truth: str) -> float:
    """SQuAD's exact match: 1.0 when the normalised texts are equal ("" for no answer), else 0.0."""
    return float(_normalized_tokens(prediction) == _normalized_tokens(truth))


def f1(prediction: str, truth: str) -> float:
    """SQuAD's F1: the harmonic mean of precision and recall of the normalised words the prediction
    shares with the truth; when either is empty (no answer), 1.0 if both are, else 0.0."""
    got, want = _normalized_tokens(prediction), _normalized_tokens(truth)
    if not got or not want:
        return float(got == want)
    shared = sum(min(got.count(word), want.count(word)) for word in set(got))
    if not shared:
        return 0.0
    precision, recall = shared / len(got), shared / len(want)
    return 2 * precision * recall / (precision + recall)


def _truths(truth: str | list[str]) -> list[str]:
    return [truth] if isinstance(truth, str) else list(truth) or [""]


def scores(predictions: list[str], truths: list[str | list[str]]) -> dict[str, float]:
    """SQuAD's exact match and F1 (%, each question's best over its expected answers, as SQuAD's
    evaluation takes them) over all questions and over the answerable ones (an expected answer
    other than ""), and how many questions each counts."""
    rows = np.array(
        [
            (
                any(_truths(truth)),
                max(exact_match(got, t) for t in _truths(truth)),
                max(f1(got, t) for t in _truths(truth)),
            )
            for got, truth in zip(predictions, truths, strict=True)
        ],
        dtype=float,
    ).reshape(-1, 3)
    answerable = rows[:, 0] == 1

    def mean(values: np.ndarray) -> float:
        return 100 * float(values.mean()) if len(values) else float("nan")

    return {
        "questions": len(rows),
        "answerable": int(answerable.sum()),
        "exact match": mean(rows[:, 1]),
        "F1": mean(rows[:, 2]),
        "answerable exact match": mean(rows[answerable, 1]),
        "answerable F1": mean(rows[answerable, 2]),
    }


def score_table(answers: dict[str, list[str]], truths: list[str | list[str]]) -> str:
    """A table of :func:`scores`, one line per answerer (the model, each rule): exact match and F1
    over all the questions and over the answerable ones."""
    table = {name: scores(predictions, truths) for name, predictions in answers.items()}
    count = next(iter(table.values()))
    width = max(len(name) for name in table) + 2
    lines = [
        " " * width
        + f"{'all ' + str(count['questions']) + ' questions':>24}"
        + f"{str(count['answerable']) + ' with an answer':>24}",
        " " * width + f"{'exact match':>16}{'F1':>8}" * 2,
    ]
    for name, row in table.items():
        lines.append(
            f"{name:<{width}}{row['exact match']:15.1f}%{row['F1']:7.1f}%"
            f"{row['answerable exact match']:15.1f}%{row['answerable F1']:7.1f}%"
        )
    return "\n".join(lines)


def too_long(truths: list[str | list[str]], tokenizer, max_answer_len: int) -> int:
    """How many answerable questions have no expected answer of at most ``max_answer_len`` tokens:
    no span the decoder may return matches them exactly (the ceiling on exact match)."""
    return sum(
        any(_truths(truth))
        and all(
            len(tokenizer(t, add_special_tokens=False)["input_ids"]) > max_answer_len for t in _truths(truth)
        )
        for truth in truths
    )


def has_qa_pipeline() -> bool:
    """Whether the installed transformers still has the ``question-answering`` pipeline (4.x)."""
    from transformers.pipelines import SUPPORTED_TASKS

    return "question-answering" in SUPPORTED_TASKS


def pipeline_answer(
    model,
    tokenizer,
    question: str,
    context: str,
    max_length: int = 384,
    stride: int = 128,
    max_answer_len: int = 15,
    handle_impossible_answer: bool = False,
    use_pipeline: bool | None = None,
) -> dict:
    """What transformers' ``question-answering`` pipeline answers, with ``align_to_words=False`` (the
    characters of the best tokens, not widened to whole words) and ``top_k=1``: a dict with
    ``answer``, ``start``, ``end`` (characters of ``context``) and ``score``, the *probability*
    p_start(s) * p_end(e), each a softmax over the window's context tokens and ``[CLS]``.

    ``use_pipeline``: None = the pipeline itself where transformers has it, else its own steps
    (see the module docstring); False forces the steps (the tests compare both on transformers 4.x).
    """
    if use_pipeline is None:
        use_pipeline = has_qa_pipeline()
    if use_pipeline:
        from transformers import pipeline

        answer = pipeline("question-answering", model=model, tokenizer=tokenizer, device=model.device)(
            question=question,
            context=context,
            max_seq_len=max_length,
            doc_stride=stride,
            max_answer_len=max_answer_len,
            handle_impossible_answer=handle_impossible_answer,
            align_to_words=False,
        )
        return {key: answer[key] for key in ("answer", "start", "end", "score")}
    return _pipeline_steps(
        model, tokenizer, question, context, max_length, stride, max_answer_len, handle_impossible_answer
    )


def _select_starts_ends():
    try:  # transformers 4.x: the question-answering pipeline's module
        from transformers.pipelines.question_answering import select_starts_ends
    except ImportError:  # transformers 5.x: the same function, kept for document question answering
        from transformers.pipelines.document_question_answering import select_starts_ends
    return select_starts_ends


def _pipeline_steps(
    model, tokenizer, question, context, max_length, stride, max_answer_len, handle_impossible_answer
) -> dict:
    select_starts_ends = _select_starts_ends()
    encoded = tokenizer(
        text=question,
        text_pair=context,
        padding="do_not_pad",
        truncation="only_second",
        max_length=max_length,
        stride=stride,
        return_token_type_ids=True,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
    )
    min_null_score, answers = 1000000, []
    for window in range(len(encoded["input_ids"])):
        ids = encoded["input_ids"][window]
        p_mask = np.array([[token != 1 for token in encoded.sequence_ids(window)]], dtype=np.int64)
        p_mask[0, np.nonzero(np.array(ids) == tokenizer.cls_token_id)[0]] = 0
        attention_mask = np.array([encoded["attention_mask"][window]])
        with torch.no_grad():
            output = model(
                input_ids=torch.tensor([ids], device=model.device),
                attention_mask=torch.tensor(attention_mask, device=model.device),
            )
        starts, ends, scores, min_null_score = select_starts_ends(
            output.start_logits.float().cpu().numpy(),
            output.end_logits.float().cpu().numpy(),
            p_mask,
            attention_mask,
            min_null_score,
            1,
            handle_impossible_answer,
            max_answer_len,
        )
        offsets = encoded[window].offsets
        for s, e, score in zip(starts, ends, scores):
            start, end = offsets[s][0], offsets[e][1]
            same = next((a for a in answers if a["answer"].lower() == context[start:end].lower()), None)
            if same:  # the pipeline adds the scores of windows that give the same answer text
                same["score"] += score.item()
            else:
                answers.append(
                    {"score": score.item(), "start": start, "end": end, "answer": context[start:end]}
                )
    if handle_impossible_answer:
        answers.append({"score": min_null_score, "start": 0, "end": 0, "answer": ""})
    best = sorted(answers, key=lambda answer: answer["score"], reverse=True)[0]
    return {key: best[key] for key in ("answer", "start", "end", "score")}


def load_qa_tokenizer() -> PreTrainedTokenizerBase:
    """The tokenizer of :func:`load_question_answering`'s model, returning :data:`MODEL_INPUTS`.

    Offline it is :func:`load_tokenizer`'s (uncased WordPiece); online the cased one of
    :data:`HUB_QA_MODEL`. Either is a fast tokenizer, so it returns character offsets
    (``return_offsets_mapping``) and ``sequence_ids``, which span decoding needs.
    """
    _quiet()
    if is_online():
        return AutoTokenizer.from_pretrained(HUB_QA_MODEL, model_input_names=MODEL_INPUTS)
    return load_tokenizer()


def load_question_answering(
    head_path: Path | None = None,
    dtype: torch.dtype = torch.float32,
    attn_implementation: str = "eager",
) -> DistilBertForQuestionAnswering:
    """An extractive question-answering DistilBERT (a start and an end logit per token), in eval mode.

    Online: :data:`HUB_QA_MODEL` as published (``head_path`` is ignored). Offline: the converted
    encoder with the trained part (the QA head ``qa_outputs`` and the top layers, :data:`QA_HEAD_KEYS`)
    saved at ``head_path`` by :func:`save_qa_head` (assignment 7's fixtures train it on questions built
    from *The Devil's Dictionary*); without ``head_path``, the pretrained encoder and transformers'
    initialisation of the head.
    """
    return _with_head(
        DistilBertForQuestionAnswering,
        HUB_QA_MODEL,
        head_path,
        QA_HEAD_KEYS,
        "Question-answering head",
        dtype,
        attn_implementation,
    )


def save_qa_head(model: DistilBertForQuestionAnswering, path: Path) -> None:
    """Save only the trained part (:data:`QA_HEAD_KEYS`), its matrices as int8 with a scale per row
    (a quarter of float32's size; the loaded model computes in float32 from these values)."""
    save_head(model, QA_HEAD_KEYS, path, torch.int8)
