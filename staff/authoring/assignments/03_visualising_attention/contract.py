"""What 03_visualising_attention's released text promises about the inputs its tests feed each exercise (see
:mod:`staff.authoring.contract_kit`): every term quotes the notebook's own words."""

from __future__ import annotations

import numpy as np

from staff.authoring.contract_kit import Case, Verdict, floats, integers, padding, shapes, term
from staff.authoring.contract_kit import text as utf8

#: The bert-base-uncased vocabulary's size (course.models.load_tokenizer), for the padded batch's ids.
VOCAB_SIZE = 30522


def _tokens(case: Case, key: str) -> list[str]:
    return bytes(case[key]).decode("utf-8").split(" ")


def _rows_sum_to_one(*keys: str):
    """Weights >= 0 whose rows (last axis) sum to 1 (float32: within 1e-5)."""

    def holds(case: Case) -> Verdict:
        for key in keys:
            value = np.asarray(case[key], dtype=np.float64)
            if (value < 0).any():
                return f"{key} has negative weights"
            off = np.abs(value.sum(axis=-1) - 1)
            if off.size and off.max() > 1e-5:
                return f"a row of {key} sums to 1 only within {off.max():.1e}"
        return None

    return holds


def _head_average(*keys: str):
    """Each of ``keys`` is the mean over heads of ``heads``."""

    def holds(case: Case) -> Verdict:
        mean = np.asarray(case["heads"], dtype=np.float64).mean(axis=1)
        for key in keys:
            if np.abs(np.asarray(case[key], dtype=np.float64) - mean).max() > 1e-6:
                return f"{key} is not the mean over heads of heads"
        return None

    return holds


def _one_token_per_key(*pairs: tuple[str, str]):
    """Each ``(tokens, maps)``: one token per position of the map."""

    def holds(case: Case) -> Verdict:
        for tokens, maps in pairs:
            n, seq = len(_tokens(case, tokens)), np.shape(case[maps])[-1]
            if n != seq:
                return f"{tokens} has {n} tokens for {seq} positions in {maps}"
        return None

    return holds


def _cls_first(*keys: str):
    def holds(case: Case) -> Verdict:
        for key in keys:
            tokens = _tokens(case, key)
            if tokens[0] != "[CLS]" or tokens.count("[CLS]") != 1:
                return f"{key} does not start with the one [CLS] ({tokens})"
        return None

    return holds


def _sep_last(*keys: str):
    def holds(case: Case) -> Verdict:
        for key in keys:
            tokens = _tokens(case, key)
            if tokens[-1] != "[SEP]":
                return f"{key} does not end with [SEP] ({tokens})"
        return None

    return holds


def _layers(key: str):
    def holds(case: Case) -> Verdict:
        return None if np.shape(case[key])[0] >= 1 else f"{key} has no layer"

    return holds


def _real_tokens(case: Case) -> Verdict:
    """A 0/1 mask, padding anywhere (first, last, in holes), every sentence with a real token."""
    mask = np.asarray(case["attention_mask"])
    if mask.dtype.kind not in "iu" or not np.isin(mask, (0, 1)).all():
        return "attention_mask holds values other than 0 and 1"
    empty = np.flatnonzero(mask.sum(axis=-1) == 0)
    return f"attention_mask row {empty[0]} is all padding" if empty.size else None


def _padded_keys_zero(case: Case) -> Verdict:
    attentions, mask = np.asarray(case["attentions"]), np.asarray(case["attention_mask"])
    padded = (mask == 0)[None, :, None, None, :]
    weights = np.broadcast_to(padded, attentions.shape)
    return "a padded key has a nonzero weight" if (attentions[weights] != 0).any() else None


def _mask_when_used(case: Case) -> Verdict:
    use = np.asarray(case["use_mask"])
    if use.dtype.kind not in "iu" or use.ndim or int(use) not in (0, 1):
        return f"use_mask is {use.tolist()}, not 0 or 1"
    if not int(use) and not np.asarray(case["attention_mask"]).all():
        return "without a mask, the batch has padding"
    return None


#: The shapes the statistics exercises promise (statistics and sentences fixtures).
_MAPS_SHAPES = "from a head-averaged map `avg` `(n_layers, seq, seq)`"
_PER_HEAD = "`maps` `(n_layers, n_heads, seq, seq)`"
#: What each exercise promises of the inputs its tests feed it (staff.authoring.contract_kit).
CONTRACT = {
    "averaging": (
        shapes(
            "A saved (n_layers, batch, n_heads, seq, seq) array as models return it",
            attentions="n_layers batch n_heads seq seq",
        ),
        shapes(
            "`attention_mask` (`(batch, seq)`, 1 = real token, 0 = padding)",
            attentions="_ batch _ seq seq",
            attention_mask="batch seq",
        ),
        floats("every row (fixed `b, h, i`) sums to 1", "attentions"),
        term("every row (fixed `b, h, i`) sums to 1", "attentions", _rows_sum_to_one("attentions")),
        term("The model gives padded keys weight 0", "attentions", _padded_keys_zero),
        term("padding first or in holes", "attention_mask", _real_tokens),
        integers(
            "for sentence `index` of the batch", "index", 0, lambda case: np.shape(case["attentions"])[1] - 1
        ),
        term("None (every token is real)", "use_mask", _mask_when_used),
    ),
    "statistics": (
        shapes(_PER_HEAD, heads="n_layers n_heads seq seq"),
        shapes(
            _MAPS_SHAPES, heads="n_layers _ seq seq", maps="n_layers seq seq", averaged="n_layers seq seq"
        ),
        floats(_PER_HEAD, ("heads", "maps", "averaged")),
        term("every row (fixed `b, h, i`) sums to 1", "heads", _rows_sum_to_one("heads")),
        term("its rows still sum to 1", ("maps", "averaged"), _rows_sum_to_one("maps", "averaged")),
        term(
            "averages the heads of each layer into one `(seq, seq)` map",
            ("maps", "averaged"),
            _head_average("maps", "averaged"),
        ),
        term("It must work for any number of layers, 1 included.", "maps", _layers("maps")),
        utf8("Token strings saved in a fixture (UTF-8 bytes, separated by spaces)", ("words", "tokens")),
        term(
            "tokens: the seq token strings",
            ("words", "tokens"),
            _one_token_per_key(("words", "maps"), ("tokens", "averaged")),
        ),
        term("`[CLS]` is always at position 0", ("words", "tokens"), _cls_first("words", "tokens")),
        term("`[SEP]` ends each sentence", ("words", "tokens"), _sep_last("words", "tokens")),
    ),
    "sentences": (
        utf8("A string saved in a fixture (as UTF-8 bytes)", "text"),
        utf8("`text_pair=None` for one sentence", "text_pair", empty=True),
        shapes(_PER_HEAD, heads="n_layers n_heads seq seq"),
        shapes(_MAPS_SHAPES, heads="n_layers _ seq seq", maps="n_layers seq seq"),
        floats(_PER_HEAD, ("heads", "maps")),
        term("every row (fixed `b, h, i`) sums to 1", "heads", _rows_sum_to_one("heads")),
        term("its rows still sum to 1", "maps", _rows_sum_to_one("maps")),
        term("averages the heads of each layer into one `(seq, seq)` map", "maps", _head_average("maps")),
        utf8("Token strings saved in a fixture (UTF-8 bytes, separated by spaces)", "words"),
        term("tokens: the seq token strings", "words", _one_token_per_key(("words", "maps"))),
        term("`[CLS]` is always at position 0", "words", _cls_first("words")),
        term("`[SEP]` ends each sentence", "words", _sep_last("words")),
    ),
    "padded_batch": (
        shapes(
            "`attention_mask` (`(batch, seq)`, 1 = real token, 0 = padding)",
            input_ids="batch seq",
            attention_mask="batch seq",
        ),
        padding("padding may also come first", "attention_mask", "either"),
        integers("the `bert-base-uncased` vocabulary", "input_ids", 0, VOCAB_SIZE - 1),
    ),
}
