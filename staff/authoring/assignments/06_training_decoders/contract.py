"""What 06_training_decoders's released text promises about the inputs its tests feed each exercise (see
:mod:`staff.authoring.contract_kit`): every term quotes the notebook's own words."""

from __future__ import annotations

import numpy as np
import torch

from staff.authoring.contract_kit import (
    floats,
    graded,
    heads_divide,
    integers,
    mismatched,
    padding,
    scalar,
    settings_are,
    shapes,
    term,
)

from . import recipe as _recipe

S2S_TRAINING = _recipe.S2S_TRAINING
graded_sizes = _recipe.graded_sizes

# --- the contract: what the released text promises about each exercise's inputs ---------------------

HEADS_SPLIT = "(batch, length, n_heads * d_head) -> (batch, n_heads, length, d_head)"
#: Exercise 1.
PROJECTIONS = (
    "project the queries from `query` `(batch, query_length, d_model)` and the keys and values from "
    "`key_value` `(batch, key_length, d_model)`"
)
LAYER_PARAMS = (
    "`params` is that layer's `state_dict()`: `self_attn.*`, `multihead_attn.*` (the cross-attention), "
    "`linear1.*`, `linear2.*`, `norm1.*` to `norm3.*`"
)
IN_PROJ = (
    "`in_proj_weight` of shape `(3·d_model, d_model)` (the query rows first), with `in_proj_bias` of shape "
    "`(3·d_model,)`"
)
SELF_PADDING = "**causal self-attention** over the decoder's own tokens (assignment 5's mask, `decoder_mask`)"
MEMORY_PADDING = "query $i$ may attend to memory position $j$ when `memory_padding[b, j]` is 1"
#: Exercise 2.
LM_LOSS = (
    "`lm_loss(logits, ids)`: `logits` `(batch, length, vocab)` from your model on `ids` `(batch, length)`"
)
LM_POSITIONS = "over all `length - 1` positions"
NGRAM = (
    "`ngram_perplexity(train_ids, val_ids, vocab_size, order)`: the add-one smoothed unigram (`order=1`) or "
    "bigram (`order=2`) model counted on `train_ids`, and its perplexity on predicting `val_ids[1:]`"
)
#: Exercise 3.
S2S_TOKENS = (
    "`PAD` = 0, `BOS` (begin) = 1, `EOS` (end) = 2, and the digits 0–9 as tokens 3–12 (`DIGIT + 3`), a "
    "vocabulary of 13"
)
S2S_DIGITS = "The sources have 5 to 10 digits, so a batch is padded on the right with `PAD`"
S2S_PADDING = "source_padding 1 for real tokens"
S2S_INPUTS = (
    "`source` and `source_padding` `(batch, source_length)`, `target_in` and `target_padding` "
    "`(batch, target_length)` (1 for real tokens)"
)
S2S_LENGTHS = "def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=2, max_length=16):"
S2S_TEACHER = "the decoder's *input* is the target without its last token"
GRADER_S2S = "it loads weights of its own (random, of the given sizes) into a fresh `Seq2Seq` of your class"
S2S_STEPS = (
    "for 8 steps of the given loop below (AdamW with its learning rate, 2 warm-up steps then a cosine decay to 0 "
    "over the 8 steps"
)
S2S_BATCHES = "each step on a batch of 64 new sequences padded on the right to 10 digits"
S2S_UNSEEN = "on 32 unseen sequences padded to 12 tokens"
S2S_TARGET = "The target is `BOS`, the reversed digits, `EOS`"
S2S_VOCAB, S2S_MAX_LENGTH, PAD, BOS, EOS, FIRST_DIGIT = 13, 16, 0, 1, 2, 3


def _decoder_layer_shapes(case) -> str | None:
    d, ff = np.shape(case["x"])[-1], np.shape(case["p.linear1.weight"])[0]
    attention = {
        "in_proj_weight": (3 * d, d),
        "in_proj_bias": (3 * d,),
        "out_proj.weight": (d, d),
        "out_proj.bias": (d,),
    }
    expected = {
        f"{part}.{k}": shape for part in ("self_attn", "multihead_attn") for k, shape in attention.items()
    }
    expected |= {
        "linear1.weight": (ff, d),
        "linear1.bias": (ff,),
        "linear2.weight": (d, ff),
        "linear2.bias": (d,),
    }
    expected |= {f"norm{i}.{k}": (d,) for i in (1, 2, 3) for k in ("weight", "bias")}
    return mismatched(case, expected, "p.")


def _digit_rows(key: str, width: int | None = None):
    """Each row (of any batch): 5 to 10 digit tokens, then PAD to the end (``width`` long if given)."""

    def holds(case) -> str | None:
        value = np.asarray(case[key])
        if width is not None and value.shape[-1] != width:
            return f"{key} is padded to {value.shape[-1]}, not {width}"
        for row, tokens in enumerate(value.reshape(-1, value.shape[-1]).tolist()):
            n = sum(t != PAD for t in tokens)
            digits = all(FIRST_DIGIT <= t < S2S_VOCAB for t in tokens[:n])
            if not (5 <= n <= 10 and digits and all(t == PAD for t in tokens[n:])):
                return f"{key} row {row} is not 5 to 10 digits then PAD ({tokens})"
        return None

    return holds


def _source_padding(case) -> str | None:
    if not np.array_equal(
        np.asarray(case["parity_source_padding"]), (np.asarray(case["parity_source"]) != PAD).astype(int)
    ):
        return "parity_source_padding is not 1 exactly at the real tokens of parity_source"
    return None


def _reversed_targets(source_key: str, target_key: str):
    """Each target row: BOS, the source's digits reversed, EOS, then PAD, two longer than the source."""

    def holds(case) -> str | None:
        sources, targets = np.asarray(case[source_key]), np.asarray(case[target_key])
        if targets.shape != (*sources.shape[:-1], sources.shape[-1] + 2):
            return f"{target_key} is {targets.shape}, not the sources' {sources.shape} with 2 more tokens"
        for row, (source, target) in enumerate(
            zip(
                sources.reshape(-1, sources.shape[-1]).tolist(),
                targets.reshape(-1, targets.shape[-1]).tolist(),
            )
        ):
            digits = [t for t in source if t != PAD]
            expected = [BOS, *digits[::-1], EOS] + [PAD] * (len(target) - len(digits) - 2)
            if target != expected:
                return (
                    f"{target_key} row {row} is not BOS, the reversed digits of {source_key}, EOS ({target})"
                )
        return None

    return holds


def _steps(key: str, steps: int, *rest: int):
    def holds(case) -> str | None:
        shape = np.shape(case[key])
        return None if shape == (steps, *rest) else f"{key} is {shape}, not {steps} steps of {rest}"

    return holds


def _s2s_lengths(case) -> str | None:
    source, target = np.shape(case["source"])[1], np.shape(case["parity_target_in"])[1]
    answer = np.shape(case["target"])[1] - 1  # the teacher-forced input: the target without its last token
    if source > S2S_MAX_LENGTH or max(target, answer) > S2S_MAX_LENGTH:
        return f"sources of {source} and answers of {max(target, answer)} tokens pass max_length {S2S_MAX_LENGTH}"
    return None


def _teacher_input(case) -> str | None:
    target_in = np.asarray(case["parity_target_in"])
    if not (target_in[:, 0] == BOS).all():
        return "a row of parity_target_in does not start with BOS"
    rest = target_in[:, 1:]
    return (
        None
        if ((rest >= FIRST_DIGIT) & (rest < S2S_VOCAB)).all()
        else "parity_target_in holds PAD or BOS after BOS"
    )


def _seq2seq_shapes(case) -> str | None:
    d, heads, layers = (scalar(case, k) for k in ("d_model", "n_heads", "n_layers"))
    nn = torch.nn
    with torch.random.fork_rng(
        devices=[]
    ):  # the layers' random initialisation leaves the caller's seed alone
        model = nn.Module()  # the given Seq2Seq.__init__'s layers
        model.embed, model.positions = nn.Embedding(S2S_VOCAB, d), nn.Embedding(S2S_MAX_LENGTH, d)
        encoder_layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True)
        model.encoder = nn.TransformerEncoder(encoder_layer, layers, enable_nested_tensor=False)
        model.decoder = nn.ModuleList(
            [
                nn.TransformerDecoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True)
                for _ in range(layers)
            ]
        )
        model.head = nn.Linear(d, S2S_VOCAB)
    return mismatched(case, {k: tuple(v.shape) for k, v in model.state_dict().items()}, "w.")


CONTRACT = {
    "decoder_layer": (
        shapes(
            PROJECTIONS,
            x="batch query_length d_model",
            memory="batch key_length d_model",
            x_padding="batch query_length",
            memory_padding="batch key_length",
        ),
        floats(PROJECTIONS, ("x", "memory")),
        floats(LAYER_PARAMS, "p.*"),
        term(IN_PROJ, "p.*", _decoder_layer_shapes),
        integers(HEADS_SPLIT, "n_heads", 1),
        term(HEADS_SPLIT, "n_heads", heads_divide(lambda case: np.shape(case["x"])[-1])),
        padding(SELF_PADDING, "x_padding", "either"),
        padding(MEMORY_PADDING, "memory_padding", "either"),
    ),
    "language_model": (
        shapes(LM_LOSS, logits="batch length vocab", ids="batch length"),
        floats(LM_LOSS, "logits"),
        integers(LM_LOSS, "ids", 0, lambda case: np.shape(case["logits"])[-1] - 1),
        term(
            LM_POSITIONS,
            "ids",
            lambda case: None if np.shape(case["ids"])[1] >= 2 else "ids is one token long",
        ),
        shapes(NGRAM, train_ids="train_length", val_ids="val_length"),
        integers(NGRAM, ("train_ids", "val_ids"), 0, lambda case: scalar(case, "vocab_size") - 1),
        integers(NGRAM, "vocab_size", 1),
        term(
            NGRAM,
            "val_ids",
            lambda case: None if len(case["val_ids"]) >= 2 else "val_ids has no character after its first",
        ),
    ),
    "reversal": (
        floats(GRADER_S2S, "w.*"),
        term(S2S_LENGTHS, "w.*", _seq2seq_shapes),
        term(
            GRADER_S2S,
            ("d_model", "n_heads", "n_layers"),
            lambda c: graded(c, ("d_model", "n_heads", "n_layers"), graded_sizes()["s2s"]),
        ),
        shapes(
            S2S_INPUTS,
            source="batch source_length",
            target="batch _",
            parity_source="parity source_length",
            parity_source_padding="parity source_length",
            parity_target_in="parity target_length",
        ),
        integers(
            S2S_TOKENS,
            ("source", "target", "parity_source", "parity_target_in", "train_source", "train_target"),
            0,
            S2S_VOCAB - 1,
        ),
        term(S2S_UNSEEN, "source", _digit_rows("source", 12)),
        term(S2S_DIGITS, "parity_source", _digit_rows("parity_source")),
        term(S2S_BATCHES, "train_source", _digit_rows("train_source", 10)),
        term(
            S2S_BATCHES,
            "train_source",
            _steps("train_source", S2S_TRAINING["steps"], graded_sizes()["s2s_training"]["batch"], 10),
        ),
        term(S2S_TARGET, "target", _reversed_targets("source", "target")),
        term(S2S_TARGET, "train_target", _reversed_targets("train_source", "train_target")),
        padding(S2S_DIGITS, "parity_source_padding", "right"),
        term(S2S_PADDING, "parity_source_padding", _source_padding),
        term(S2S_LENGTHS, ("source", "target", "parity_target_in"), _s2s_lengths),
        term(S2S_TEACHER, "parity_target_in", _teacher_input),
        term(
            S2S_STEPS,
            ("learning_rate", "warmup_steps"),
            settings_are(
                {
                    "learning_rate": graded_sizes()["s2s_training"]["learning_rate"],
                    "warmup_steps": S2S_TRAINING["warmup_steps"],
                }
            ),
        ),
    ),
}
