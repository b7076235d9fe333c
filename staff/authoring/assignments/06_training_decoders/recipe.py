"""Fixtures for 06_training_decoders. Expected outputs come from the notebook's own solution
(:func:`staff.authoring.reference.solution_namespace`) or, where the exercise is to match them, from
PyTorch's own implementation; all on the CPU in float32, but for the training.

- ``decoder_layer``: a random ``nn.TransformerDecoderLayer`` (``p.<state_dict key>``), both
  inputs and paddings; the layer's output and cross-attention weights.
- ``language_model``: logits and ids with the loss; small random texts with both n-gram perplexities.
- ``reversal`` (hidden only): exercise 3's training, step by step. Random weights of the given sizes
  (``w.*``) in the solution's ``Seq2Seq``, and its ``parity_logits`` and ``parity_cross`` (every
  decoder layer) for 8 padded sequences and random answers (the prerequisite: the answers must come
  from the model's parameters); then the given loop (AdamW with the notebook's learning rate, warm-up
  and cosine decay, clipping, cross-entropy over the real target tokens) from those weights, in
  float64 (:func:`staff.authoring.tensors.train_steps`), on ``train_source`` ``(steps, batch, 10)``
  digit sequences of 5-10 digits (the notebook's tokens) padded on the right and their
  ``train_target`` (BOS, reversed digits, EOS): every step's loss (``losses``), then the trained
  model's ``logits`` and ``cross`` (every decoder layer) with teacher forcing on 32 unseen ``source``
  sequences padded to 12, wider than any training batch, and their ``target``.
"""

from __future__ import annotations

import nbformat
import numpy as np
import torch
import torch.nn.functional as F

from course.fixtures import pack_cases
from staff.authoring.reference import solution_namespace
from staff.authoring.tensors import (
    Draws,
    arrays,
    int_array,
    padding_mask,
    randomize,
    state_arrays,
    train_steps,
)
from staff.course_dir import nbgrader, source_notebook

ASSIGNMENT = "06_training_decoders"
#: The tolerances (atol, rtol) the notebook's tests compare these fixtures with (staff.authoring.fixtures).
# The training of ``reversal`` runs in float64 and agrees to 5e-15 (measured across
# ATEN_CPU_CAPABILITY=default/avx2/avx512, 1 and 2 threads, and the correct samples' implementations).
# Its tolerances sit far above that and below what one untrained parameter tensor changes (measured,
# one bias or LayerNorm scale left out of the optimiser: losses 5e-4, logits 3.9e-3 and cross-attention
# 2.7e-4).
TOLERANCES = {
    "*": (1e-6, 1e-5),
    "decoder_layer/y": (1e-5, 1e-5),
    "reversal/parity_logits": (5e-3, 5e-3),  # the prerequisite: parity with the grader's weights, in float32
    "reversal/parity_cross": (5e-3, 5e-3),
    "reversal/losses": (1.5e-4, 0.0),
    "reversal/logits": (1.5e-3, 0.0),
    "reversal/cross": (1e-4, 0.0),
}
#: The expected outputs in each fixture (key patterns): a grading kernel never sees them, the judge
#: compares with them (staff/grading/execution/sandbox.py, judge.py). Everything else is an input.
OUTPUTS = {
    "decoder_layer": ("y", "cross_weights"),
    "language_model": ("loss", "perplexity_*"),
    "reversal": ("parity_logits", "parity_cross", "losses", "logits", "cross"),
}
#: Exercise 3's graded training: the batch and learning rate are the notebook's (``train_seq2seq``).
S2S_TRAINING = dict(steps=8, warmup_steps=2, weight_decay=0.01)  # AdamW's default weight decay


@torch.no_grad()
def decoder_layer_case(
    sol: dict,
    g: Draws,
    d_model: int,
    n_heads: int,
    batch: int,
    seq: int,
    memory_len: int,
    x_pattern=None,
    memory_pattern=None,
) -> dict:
    layer = randomize(
        torch.nn.TransformerDecoderLayer(d_model, n_heads, 2 * d_model, dropout=0.0, batch_first=True), g
    )
    x, memory = g.normal(batch, seq, d_model), g.normal(batch, memory_len, d_model)
    x_padding, memory_padding = (
        padding_mask(batch, seq, x_pattern),
        padding_mask(batch, memory_len, memory_pattern),
    )
    y, cross = sol["decoder_layer"](x, memory, layer.state_dict(), n_heads, x_padding, memory_padding)
    expected = layer(
        x,
        memory,
        tgt_mask=torch.ones(seq, seq, dtype=torch.bool).triu(1),
        tgt_is_causal=True,
        tgt_key_padding_mask=x_padding == 0,
        memory_key_padding_mask=memory_padding == 0,
    )
    real = x_padding.bool()
    assert (y[real] - expected[real]).abs().max() < 1e-5, (
        "the solution's decoder layer differs from PyTorch's"
    )
    return {
        **state_arrays(layer, "p."),
        **arrays(
            x=x,
            memory=memory,
            x_padding=x_padding,
            memory_padding=memory_padding,
            n_heads=int_array(n_heads),
            y=y,
            cross_weights=cross,
        ),
    }


def language_model_case(
    sol: dict, g: Draws, batch: int, seq: int, vocab: int, train_len: int, val_len: int
) -> dict:
    logits = g.normal(batch, seq, vocab) * 2
    ids = g.integers(0, vocab, (batch, seq))
    # Texts with structure (a bigram model beats a unigram one) and characters never seen in training.
    train_ids = torch.cumsum(g.integers(0, 3, (train_len,)), 0) % (vocab - 1)
    val_ids = torch.cumsum(g.integers(0, 4, (val_len,)), 0) % vocab
    perplexities = {
        f"perplexity_{order}": np.array(sol["ngram_perplexity"](train_ids, val_ids, vocab, order))
        for order in (1, 2)
    }
    return {
        **arrays(
            logits=logits,
            ids=ids,
            loss=sol["lm_loss"](logits, ids),
            train_ids=train_ids,
            val_ids=val_ids,
            vocab_size=int_array(vocab),
        ),
        **perplexities,
    }


def graded_sizes() -> dict:
    """The encoder-decoder's given sizes, batch and learning rate, read from the notebook's given
    (read-only) ``train_seq2seq`` cell (its ``S2S_*`` lines): the grader's weights and training must
    fit the class and loop the students are given."""
    cells = {
        nbgrader(c).get("grade_id"): c.source
        for c in nbformat.read(source_notebook(ASSIGNMENT), as_version=4).cells
    }
    found: dict = {}
    exec("\n".join(line for line in cells["train_seq2seq"].splitlines() if line.startswith("S2S_")), found)
    return {
        "s2s": dict(d_model=found["S2S_D_MODEL"], n_heads=found["S2S_HEADS"], n_layers=found["S2S_LAYERS"]),
        "s2s_training": dict(batch=found["S2S_BATCH"], learning_rate=found["S2S_LEARNING_RATE"]),
    }


def _digit_sequences(sol: dict, g: Draws, count: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` sources of MIN_DIGITS to MAX_DIGITS digits drawn with :class:`Draws` (the notebook's
    own sampler uses torch's generator), padded on the right to ``width``, and their targets (BOS, the
    reversed digits, EOS) padded to ``width + 2``: what the notebook's ``reversal_batch`` gives."""
    lengths = g.integers(sol["MIN_DIGITS"], sol["MAX_DIGITS"] + 1, (count,))
    source = torch.full((count, width), sol["PAD"])
    target = torch.full((count, width + 2), sol["PAD"])
    for row, n in enumerate(lengths.tolist()):
        digits = g.integers(0, 10, (n,)) + sol["FIRST_DIGIT"]
        source[row, :n] = digits
        target[row, 0], target[row, 1 : n + 1], target[row, n + 1] = sol["BOS"], digits.flip(0), sol["EOS"]
    return source, target


def reversal_case(sol: dict, g: Draws, unseen: int = 32, width: int = 12, parity: int = 8) -> dict:
    """The prerequisite: random weights of the given sizes in the solution's ``Seq2Seq``, and its
    logits and cross-attention for ``parity`` unseen sources with random answers as long as the
    grader's. Then the given loop from those weights on batches of new sequences, and the trained
    model's logits and cross-attention with teacher forcing on ``unseen`` sources padded to ``width``
    (wider than any training batch)."""
    given = graded_sizes()
    sizes, settings = given["s2s"], {**S2S_TRAINING, **given["s2s_training"]}
    source, target = _digit_sequences(sol, g, unseen, width)
    padding = (source != sol["PAD"]).long()
    model = randomize(sol["Seq2Seq"](sol["SEQ2SEQ_VOCAB"], **sizes), g)
    target_in = torch.cat(
        [torch.full((parity, 1), sol["BOS"]), g.integers(0, 10, (parity, width)) + sol["FIRST_DIGIT"]], 1
    )
    weights = state_arrays(model, "w.")
    with torch.no_grad():
        parity_logits, parity_cross = model(
            source[:parity], padding[:parity], target_in, torch.ones_like(target_in)
        )
    drawn = [_digit_sequences(sol, g, settings["batch"], sol["MAX_DIGITS"]) for _ in range(settings["steps"])]
    train_source, train_target = (torch.stack(parts) for parts in zip(*drawn))

    def loss_of(m, batch):  # the given loop's loss: teacher forcing, the real target tokens only
        batch_source, batch_target = batch
        answer_in, labels = batch_target[:, :-1], batch_target[:, 1:]
        scores, _ = m(
            batch_source, (batch_source != sol["PAD"]).long(), answer_in, (answer_in != sol["PAD"]).long()
        )
        return F.cross_entropy(
            scores.reshape(-1, sol["SEQ2SEQ_VOCAB"]), labels.reshape(-1), ignore_index=sol["PAD"]
        )

    losses, trained = train_steps(
        model,
        list(zip(train_source, train_target)),
        loss_of,
        settings["learning_rate"],
        settings["warmup_steps"],
        settings["weight_decay"],
    )
    answer_in = target[:, :-1]
    with torch.no_grad():
        logits, cross = trained(source, padding, answer_in, (answer_in != sol["PAD"]).long())
    return {
        **weights,
        **{k: int_array(v) for k, v in sizes.items()},
        **arrays(
            parity_source=source[:parity],
            parity_source_padding=padding[:parity],
            parity_target_in=target_in,
            parity_logits=parity_logits,
            parity_cross=torch.stack(list(parity_cross)),
            train_source=train_source,
            train_target=train_target,
            learning_rate=np.array(float(settings["learning_rate"])),
            warmup_steps=int_array(settings["warmup_steps"]),
            losses=losses,
            source=source,
            target=target,
            logits=logits,
            cross=torch.stack(list(cross)),
        ),
    }


def build() -> dict:
    sol = solution_namespace(ASSIGNMENT)
    public, hidden = Draws(606), Draws(6_0606)
    return {
        ("public", "decoder_layer"): pack_cases(
            [decoder_layer_case(sol, public, 16, 2, 2, 5, 6, [5, 3], [4, 6])]
        ),
        ("hidden", "decoder_layer"): pack_cases(
            [
                decoder_layer_case(sol, hidden, 24, 3, 3, 7, 4, [7, 1, 5], [4, 2, 3]),
                decoder_layer_case(sol, hidden, 40, 5, 1, 9, 11),
            ]
        ),
        ("public", "language_model"): pack_cases([language_model_case(sol, public, 2, 6, 11, 400, 100)]),
        ("hidden", "language_model"): pack_cases(
            [
                language_model_case(sol, hidden, 3, 9, 17, 900, 250),
                language_model_case(sol, hidden, 1, 4, 5, 60, 30),
            ]
        ),
        ("hidden", "reversal"): pack_cases([reversal_case(sol, hidden)]),
    }
