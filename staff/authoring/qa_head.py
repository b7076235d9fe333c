"""Assignment 6's offline question-answering head, trained once by ``make fixtures --retrain``.

The course has no SQuAD-trained model offline, so its pretrained encoder gets a QA head
(``qa_outputs``: a start and an end logit per token, 770 numbers) fitted on questions built from
*The Devil's Dictionary* (:func:`course.qa.make_question`). The encoder stays frozen, so its token
vectors are computed once and the head is fitted on them in seconds, and only the head ships (a
3 KB public fixture); the notebook loads it and trains nothing. Measured: a linear head on the
frozen encoder finds the exact definition for about a fifth of the questions about unseen words
(it must match the asked word with an entry, which the frozen vectors carry only weakly); training
the last layer too learned slowly and would ship megabytes, for a notebook about decoding.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import load_file

from course import models, qa


def _split_entries() -> tuple[tuple, tuple]:
    """Dictionary entries for training and for validation: disjoint words (4 in 5 for training)."""
    entries = list(qa.dictionary_entries())
    random.Random(0).shuffle(entries)
    cut = len(entries) * 4 // 5
    return tuple(entries[:cut]), tuple(entries[cut:])


def _questions(rng: random.Random, entries: tuple, count: int) -> list[tuple[str, str, int, str]]:
    return [
        qa.make_question(rng, rng.choice([1, 2, 3]), answerable=rng.random() >= 0.2, entries=entries)
        for _ in range(count)
    ]


@torch.no_grad()
def _features(model, tokenizer, questions) -> list[tuple]:
    """Per batch: the frozen encoder's last hidden states, the allowed positions (context and [CLS])
    and the target start and end tokens ([CLS] = 0 for a question without an answer)."""
    batches = []
    for first in range(0, len(questions), 64):
        chunk = questions[first : first + 64]
        encoded = tokenizer(
            [q for q, *_ in chunk],
            [c for _, c, *_ in chunk],
            padding=True,
            return_offsets_mapping=True,
            return_tensors="pt",
        )
        hidden = model.distilbert(
            input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"]
        ).last_hidden_state
        allowed = torch.tensor([[sid == 1 for sid in encoded.sequence_ids(b)] for b in range(len(chunk))])
        allowed[:, 0] = True
        starts, ends = [], []
        for b, (_, _, char_start, answer) in enumerate(chunk):
            if char_start < 0:
                starts.append(0), ends.append(0)
                continue
            offsets, sids = encoded["offset_mapping"][b].tolist(), encoded.sequence_ids(b)
            starts.append(
                next(i for i, (o, s) in enumerate(zip(offsets, sids)) if s == 1 and o[0] == char_start)
            )
            ends.append(
                next(
                    i
                    for i, (o, s) in enumerate(zip(offsets, sids))
                    if s == 1 and o[1] == char_start + len(answer)
                )
            )
        batches.append((hidden, allowed, torch.tensor(starts), torch.tensor(ends)))
    return batches


def fit_head(model, tokenizer) -> None:
    """Fit ``model.qa_outputs`` in place on the frozen encoder's vectors of the training questions:
    cross-entropy of the start and of the end token over the context and [CLS], as the notebook
    decodes. Adam, 150 epochs of 24 batches, about 15 s on 2 cores."""
    train, _ = _split_entries()
    batches = _features(model, tokenizer, _questions(random.Random(1), train, 1500))
    torch.manual_seed(0)
    head = torch.nn.Linear(model.config.dim, 2)
    optimizer = torch.optim.Adam(head.parameters(), lr=3e-3)
    for _ in range(150):
        for hidden, allowed, starts, ends in batches:
            logits = head(hidden).masked_fill(~allowed[..., None], -1e4)  # (batch, seq, 2)
            loss = torch.nn.functional.cross_entropy(
                logits[..., 0], starts
            ) + torch.nn.functional.cross_entropy(logits[..., 1], ends)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.qa_outputs.load_state_dict(head.state_dict())


def validation_scores(sol: dict, model, tokenizer) -> dict[str, float]:
    """Exact answers (the definition, character for character) among answerable validation questions
    and "no answer" among the others, decoded by the notebook's solution with allow_null=True."""
    _, validation = _split_entries()
    right = {"answerable": [], "unanswerable": []}
    for question, context, _, answer in _questions(random.Random(2), validation, 300):
        got = sol["answer_question"](model, tokenizer, question, context, allow_null=True)["answer"]
        right["answerable" if answer else "unanswerable"].append(got == answer)
    return {kind: float(np.mean(values)) for kind, values in right.items()}


def build_head(sol: dict, minimum: dict[str, float]) -> dict[str, np.ndarray]:
    """The fitted head as arrays (the format of :func:`course.qa.save_qa_head`), after checking it
    reaches ``minimum`` (what the notebook states) on the validation questions."""
    tokenizer, model = models.load_tokenizer(), qa.load_question_answering()
    fit_head(model, tokenizer)
    scores = validation_scores(sol, model, tokenizer)
    print(
        f"fixtures: QA head: validation exact answers {scores['answerable']:.3f}, "
        f"no-answer found {scores['unanswerable']:.3f}"
    )
    for kind, least in minimum.items():
        if scores[kind] < least:
            raise RuntimeError(
                f"the fitted QA head reaches {scores[kind]:.3f} on {kind} validation questions, "
                f"below the {least} the notebook states"
            )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "qa_head.safetensors"
        qa.save_qa_head(model, path)
        return load_file(str(path))
