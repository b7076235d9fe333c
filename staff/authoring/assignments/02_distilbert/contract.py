"""What 02_distilbert's released text promises about the inputs its tests feed each exercise (see
:mod:`staff.authoring.contract_kit`): every term quotes the notebook's own words."""

from __future__ import annotations

import numpy as np

from staff.authoring.contract_kit import Term, floats, integers, one_of, shapes, term, text

from . import recipe as _recipe

CONFIG_FIELDS = _recipe.CONFIG_FIELDS

# ---- what the release promises about each exercise's inputs (staff.authoring.contract_kit) ----------

#: The release's own words each term quotes.
_CONFIG = "The DistilBertConfig a saved case was made with (its sizes are stored next to its tensors)."
_STATE = 'holding the weights saved in `case` (keys "state.<parameter name>")'
_VOCAB = "`word_embeddings` has one row per vocabulary entry"
_TABLES = (
    "`word_embeddings` has one row per vocabulary entry, `position_embeddings` one row per position up to "
    "`config.max_position_embeddings`"
)
_MASK = "`attention_mask` (`(batch, seq)`: 1 for a real token, 0 for padding)"
_HEADS = "the result is cut into `n_heads` heads of `head_dim = dim // n_heads` features"
_LAYER = "A DistilBERT layer takes `x` of shape `(batch, seq, dim)`"
_PROJECTIONS = "The projections `q_lin`, `k_lin`, `v_lin` are `nn.Linear(dim, dim)` each"
_FFN = "The feed-forward network (`lin1`: `dim → hidden_dim`, `lin2`: `hidden_dim → dim`)"
_SENTENCES = (
    "Sentences in a batch have different lengths, so the tokenizer pads the shorter ones with `[PAD]` tokens"
)


def _size(case, field: str) -> int:
    return int(case[field])


def _sized(promise: str, **axes: str) -> Term:
    """:func:`shapes`, and an axis named like a config field (``dim``, ``vocab_size``, ...) is that field."""
    base = shapes(promise, **axes)

    def holds(case):
        verdict = base.holds(case)
        if verdict:
            return verdict
        for key, spec in axes.items():
            for name, size in zip(spec.split(), np.shape(case[key])):
                if name in CONFIG_FIELDS and size != _size(case, name):
                    return f"{key}'s axis {name} is {size}, the config's {name} is {_size(case, name)}"
        return None

    return term(promise, tuple(axes), holds)


def _embeddings_layout(case, prefix: str = "") -> dict[str, tuple[int, ...]]:
    vocab, positions, dim = (_size(case, f) for f in ("vocab_size", "max_position_embeddings", "dim"))
    return {
        f"{prefix}word_embeddings.weight": (vocab, dim),
        f"{prefix}position_embeddings.weight": (positions, dim),
        f"{prefix}LayerNorm.weight": (dim,),
        f"{prefix}LayerNorm.bias": (dim,),
    }


def _block_layout(case, prefix: str = "") -> dict[str, tuple[int, ...]]:
    dim, hidden = _size(case, "dim"), _size(case, "hidden_dim")
    linears = {"q_lin": (dim, dim), "k_lin": (dim, dim), "v_lin": (dim, dim), "out_lin": (dim, dim)}
    linears |= {"lin1": (hidden, dim), "lin2": (dim, hidden)}
    layout = {}
    for name, (out, inp) in linears.items():
        layout |= {f"{prefix}{name}.weight": (out, inp), f"{prefix}{name}.bias": (out,)}
    for norm in ("sa_layer_norm", "output_layer_norm"):
        layout |= {f"{prefix}{norm}.weight": (dim,), f"{prefix}{norm}.bias": (dim,)}
    return layout


def _model_layout(case) -> dict[str, tuple[int, ...]]:
    dim, labels = _size(case, "dim"), _size(case, "num_labels")
    layout = _embeddings_layout(case, "embeddings.")
    for i in range(_size(case, "n_layers")):
        layout |= _block_layout(case, f"layers.{i}.")
    return layout | {
        "pre_classifier.weight": (dim, dim),
        "pre_classifier.bias": (dim,),
        "classifier.weight": (labels, dim),
        "classifier.bias": (labels,),
    }


def _state(promise: str, layout, parts: tuple[str, ...] = ("",)) -> Term:
    """The ``state.<name>`` weights are the module's, sized by the case's config: those whose name starts
    with one of ``parts`` are all there with their shapes, and no weight is outside the layout."""

    def holds(case):
        want = layout(case)
        got = {k.removeprefix("state."): np.shape(v) for k, v in case.items() if k.startswith("state.")}
        if extra := sorted(set(got) - set(want)):
            return f"state.{extra[0]} is no parameter of the module the config describes"
        for name, shape in want.items():
            if not name.startswith(parts):
                continue
            if name not in got:
                return f"state.{name} is missing"
            if got[name] != shape:
                return f"state.{name} is {got[name]}, the config gives {shape}"
        return None

    return term(promise, tuple(f"state.{p}*" for p in parts), holds)


def _zero_one(promise: str, key: str = "attention_mask") -> Term:
    """An integer mask of 0s and 1s (any pattern: right or left padding, holes)."""

    def holds(case):
        mask = np.asarray(case[key])
        if mask.dtype.kind not in "iu":
            return f"{key} is {mask.dtype}, not an integer tensor"
        if not np.isin(mask, (0, 1)).all():
            return f"{key} holds values other than 0 and 1"
        return None

    return term(promise, key, holds)


def _rows_real(promise: str, key: str = "attention_mask", first: bool = False) -> Term:
    """Every sentence has a real token (``first``: its first token is real)."""

    def holds(case):
        mask = np.asarray(case[key])
        if (empty := np.flatnonzero(mask.sum(axis=-1) == 0)).size:
            return f"{key} row {int(empty[0])} has no real token"
        if first and (padded := np.flatnonzero(mask[..., 0] == 0)).size:
            return f"{key} row {int(padded[0])} starts with padding"
        return None

    return term(promise, key, holds)


def _within_positions(promise: str) -> Term:
    def holds(case):
        seq, positions = np.shape(case["input_ids"])[-1], _size(case, "max_position_embeddings")
        return (
            None
            if seq <= positions
            else f"input_ids has {seq} tokens, max_position_embeddings is {positions}"
        )

    return term(promise, ("input_ids", "max_position_embeddings"), holds)


def _heads_divide_dim(promise: str) -> Term:
    def holds(case):
        dim, heads = _size(case, "dim"), _size(case, "n_heads")
        return None if dim % heads == 0 else f"dim {dim} is not divisible by n_heads {heads}"

    return term(promise, ("dim", "n_heads"), holds)


def _config_terms() -> tuple[Term, ...]:
    return (integers(_CONFIG, CONFIG_FIELDS, low=1),)


def _block_terms(padding: tuple[Term, ...]) -> tuple[Term, ...]:
    return (
        _sized(_LAYER, x="batch seq dim", attention_mask="batch seq"),
        floats(_LAYER, "x"),
        _zero_one(_MASK),
        *padding,
        _heads_divide_dim(_HEADS),
        _state(_PROJECTIONS, _block_layout, ("q_lin.", "k_lin.", "v_lin.", "out_lin.", "sa_layer_norm.")),
        _state(_FFN, _block_layout, ("lin1.", "lin2.", "output_layer_norm.")),
        floats(_STATE, "state.*"),
        *_config_terms(),
    )


def _vocab_ids() -> Term:
    return integers(_VOCAB, "input_ids", low=0, high=lambda case: _size(case, "vocab_size") - 1)


def _no_mask(case):
    if int(case["pass_mask"]) == 0 and not np.all(np.asarray(case["attention_mask"]) == 1):
        return "a case run with attention_mask=None has padding"
    return None


#: What each fixture's inputs keep (every input of every hidden case is bounded by some term).
CONTRACT = {
    "classifier_head": (
        shapes(
            "(6 layers, `dim` 384, 12 heads, the `bert-base-uncased` vocabulary)",
            **{
                "pre_classifier.weight": "384 384",
                "pre_classifier.bias": "384",
                "classifier.weight": "labels 384",
                "classifier.bias": "labels",
            },
        ),
        floats("The head is the file `fixtures/public/02_distilbert/classifier_head.safetensors`.", "*"),
    ),
    "embeddings": (
        _sized(
            "The tokenizer turns a sentence into **token ids** (`input_ids`, shape `(batch, seq)`)",
            input_ids="batch seq",
        ),
        _vocab_ids(),
        _within_positions(
            "other vocabularies, dims, batch sizes and lengths (up to max_position_embeddings)"
        ),
        floats(_STATE, "state.*"),
        _state(_TABLES, _embeddings_layout),
        *_config_terms(),
    ),
    "block": _block_terms(
        (
            _rows_real(_SENTENCES),
            integers("head counts (1 to 6)", "n_heads", low=1, high=6),
        )
    ),
    "block_padded": _block_terms(
        (
            _zero_one("padding on other layers and batches: right and left padding, holes,"),
            _rows_real("sentences of a single real token."),
        )
    ),
    "model": (
        _sized(
            "# input_ids, attention_mask: (batch, seq); no mask means every token is real",
            input_ids="batch seq",
            attention_mask="batch seq",
        ),
        _vocab_ids(),
        _within_positions(_TABLES),
        _zero_one(_MASK),
        _rows_real("The tokenizer puts a special `[CLS]` token at position 0 of every sentence", first=True),
        one_of("padded batches, and attention_mask=None.", "pass_mask", (0, 1)),
        term("no mask means every token is real", ("pass_mask", "attention_mask"), _no_mask),
        _heads_divide_dim(_HEADS),
        integers("an `nn.ModuleList` of `config.n_layers` `AttentionBlock`s", "n_layers", low=1),
        floats(_STATE, "state.*"),
        _state(
            "DistilBERT for sentence classification is the embeddings, `config.n_layers` attention blocks "
            "one after the other, and a small head on the first token.",
            _model_layout,
        ),
        *_config_terms(),
    ),
    "predictions": (
        text(
            '`predict(model, tokenizer, sentence)`: tokenize the sentence (`return_tensors="pt"`)', "sentence"
        ),
    ),
    "sdpa": (
        shapes(
            "q, k, v: (batch, n_heads, seq, head_dim); attention_mask: (batch, seq), 1 = real token, 0 = padding.",
            q="batch n_heads seq head_dim",
            k="batch n_heads seq head_dim",
            v="batch n_heads seq head_dim",
            attention_mask="batch seq",
        ),
        floats("q, k, v: (batch, n_heads, seq, head_dim)", ("q", "k", "v")),
        _zero_one("The tokenizer's `attention_mask` is a `(batch, seq)` tensor of 0/1 integers"),
        _zero_one("lengths; right and left padding,"),
        _rows_real("holes, a sentence of a single real token, no padding."),
    ),
}
