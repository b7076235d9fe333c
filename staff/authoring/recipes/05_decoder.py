"""Fixtures for 05_decoder. Expected outputs come from the notebook's own solution
(:func:`staff.authoring.reference.solution_namespace`) or, where the exercise is to match them, from
PyTorch's and Hugging Face's own implementations; all on the CPU in float32.

- ``causal``: q, k, v ``(batch, heads, query, key/d_head)``, a padding mask and a past length; the
  mask, weights and outputs. Hidden cases: other sizes, left and right padding, past lengths.
- ``decoder_layer``: a random ``nn.TransformerDecoderLayer`` (``p.<state_dict key>``), both
  inputs and paddings; the layer's output and cross-attention weights.
- ``gpt``: a random GPT-2 (``transformers``' ``GPT2LMHeadModel``, weights under the notebook's
  names ``w.*``), a padded batch and a cache split point; GPT-2's own logits.
- ``sampling``: logits and rows of (temperature, top_k, top_p) with 0 for "off"; probabilities.
- ``decoding``: a random GPT-2 and prompts; greedy tokens (equal to ``GPT2LMHeadModel.generate``,
  asserted here), the tokens given to the model per call with the cache, and seeded samples.
- ``language_model``: logits and ids with the loss; small random texts with both n-gram perplexities.
- ``heldout`` (hidden only): 500 windows of 32 characters of the entries the students' corpus
  leaves out (``staff/authoring/heldout/``), cut from consecutive blocks of 33, and the character
  after each (``targets``), which is in no window: the kernel never has a character it is scored on.
  The judge computes the perplexity of each student's trained model on them. First the test loads
  random weights of the graded run's sizes (``w.*``, read from the notebook's given cells) into the
  student's ``GPT`` and compares its ``logits`` on ``ids`` with GPT-2's (a prerequisite: the
  answers must come from the model's parameters).
- ``reversal`` (hidden only): 64 digit sequences of 5-10 digits (the notebook's tokens), padded to 12,
  wider than any training batch; the reversed digits and EOS (``targets``) and, per output digit,
  the source position it copies (``alignment``, -1 elsewhere). The judge counts the student's
  trained encoder-decoder's greedy tokens and its cross-attention's argmax (best layer) against
  them. First, random weights of the given sizes (``w.*``) in the student's ``Seq2Seq``, and the
  solution's ``parity_logits`` and ``parity_cross`` (every decoder layer) for 8 such sequences and
  random answers (the prerequisite, as for ``heldout``).
"""

from __future__ import annotations

import types
from pathlib import Path

import nbformat
import numpy as np
import torch

from course import gpt, paths, text
from course.fixtures import pack_cases
from staff.authoring.contracts import floats, integers, padding, shapes, term
from staff.authoring.reference import solution_namespace
from staff.authoring.tensors import Draws, int_array, padding_mask, random_ids, randomize, state_arrays
from staff.course_dir import nbgrader, source_notebook

ASSIGNMENT = "05_decoder"
HELDOUT = Path(__file__).resolve().parent.parent / "heldout" / "devils_dictionary_w-z.txt"
#: The tolerances (atol, rtol) the notebook's tests compare these fixtures with (staff.authoring.fixtures).
TOLERANCES = {
    "*": (1e-6, 1e-5),
    "decoder_layer/y": (1e-5, 1e-5),
    "gpt": (1e-5, 1e-5),
    "heldout/logits": (5e-3, 5e-3),
    "reversal/parity_logits": (5e-3, 5e-3),
    "reversal/parity_cross": (5e-3, 5e-3),
}  # the prerequisites: parity with the grader's weights
#: The expected outputs in each fixture (key patterns): a grading kernel never sees them, the judge
#: compares with them (staff/grading/execution/sandbox.py, judge.py). Everything else is an input.
OUTPUTS = {
    "causal": ("mask", "out", "weights"),
    "decoder_layer": ("y", "cross_weights"),
    "gpt": ("logits",),
    "sampling": ("probs",),
    "decoding": ("greedy", "lengths", "sampled"),
    "language_model": ("loss", "perplexity_*"),
    "heldout": ("targets", "logits"),
    "reversal": ("targets", "alignment", "parity_logits", "parity_cross"),
}
GPT_SIZES = ("vocab_size", "n_positions", "d_model", "n_heads", "n_layers")


# --- the contract: what the released text promises about each exercise's inputs ---------------------

#: Exercise 1: the mask's input, and attend's shapes.
CAUSAL_MASK = (
    "`attention_mask` is `(batch, past_length + query_length)` with 1 for real tokens and 0 for padding"
)
EITHER_SIDE = (
    "The padding may be on either side: on the right, as in most training batches, or on the **left**, as in "
    "batches of prompts for generation (so that every prompt ends at the last position), and the hidden tests "
    "use both."
)
ATTEND = (
    "`attend(q, k, v, mask=None)`: scaled dot-product attention for `q` of shape `(batch, heads, "
    "query_length, d_head)` and `k`, `v` of shape `(batch, heads, key_length, d_head)`"
)
#: The given split_heads: heads split the width.
HEADS_SPLIT = "(batch, length, n_heads * d_head) -> (batch, n_heads, length, d_head)"
#: Exercise 2.
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
SELF_PADDING = "**causal self-attention** over the decoder's own tokens (exercise 1's mask)"
MEMORY_PADDING = "query $i$ may attend to memory position $j$ when `memory_padding[b, j]` is 1"
#: Exercise 3 (and the GPTs of exercises 4 and 5).
GPT_WEIGHTS = 'Your GPT with the weights of a fixture case (keys "w.<parameter name>")'
GPT_LAYERS = "The classes below give you every layer; write the two `forward` methods."
GPT_ARGUMENTS = 'model = GPT(*(int(case[key]) for key in ("vocab_size", "n_positions", "d_model", "n_heads", "n_layers")))'
GPT_INPUTS = (
    "`GPT.forward(ids, attention_mask=None, past=None)`: `ids` `(batch, length)`; `attention_mask` "
    "`(batch, past_length + length)` or `None` (all ones)"
)
TOKEN_EMBEDDING = "self.wte = nn.Embedding(vocab_size, d_model)"
POSITION_EMBEDDING = "self.wpe = nn.Embedding(n_positions, d_model)"
GPT_MASK = "Build the mask once with `decoder_mask`"
GPT_CACHE = (
    "`past` is `None` or the list of every block's `(k, v)` from the previous call. The positions of `ids` "
    "start at `past_length`."
)
#: Exercise 4.
SAMPLING_LOGITS = (
    "`next_token_distribution(logits, temperature=1.0, top_k=None, top_p=None)`: `logits` is `(batch, vocab)`"
)
TEMPERATURE = "**temperature** $T$: softmax of `logits / T`"
GREEDY = "With `temperature=0` return the one-hot distribution of the argmax."
TOP_K = "**top-k**: keep only the $k$ largest logits (set the others to $-\\infty$), then softmax."
TOP_P = (
    "keep the **smallest set of tokens whose probabilities add up to at least $p$** (always at least the top "
    "token)"
)
PROMPT = "`ids` `(batch, prompt_length)` is the prompt (no padding)"
NEW_TOKENS = (
    "return `(batch, prompt_length + max_new_tokens)` ids, the prompt followed by the generated tokens"
)
CONTEXT_LIMIT = "The text may not grow beyond `model.n_positions` tokens"
SEEDED = "the same seeded `torch.Generator` then gives the same text every time"
#: Exercise 5.
LM_LOSS = (
    "`lm_loss(logits, ids)`: `logits` `(batch, length, vocab)` from your model on `ids` `(batch, length)`"
)
LM_POSITIONS = "over all `length - 1` positions"
NGRAM = (
    "`ngram_perplexity(train_ids, val_ids, vocab_size, order)`: the add-one smoothed unigram (`order=1`) or "
    "bigram (`order=2`) model counted on `train_ids`, and its perplexity on predicting `val_ids[1:]`"
)
GRADER_GPT = (
    "it loads weights of its own (random, of the graded run's sizes) into a fresh `GPT` of your class"
)
PARITY_IDS = "compares the logits on 4 sequences of 32 random tokens"
WINDOWS = (
    "The grader cuts the entries your copy leaves out into 500 windows of 32 characters and gives your model "
    "each window alone"
)
#: Exercise 6.
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
S2S_VOCAB, S2S_MAX_LENGTH, PAD, BOS, FIRST_DIGIT = 13, 16, 0, 1, 3


def _int(case, key: str) -> int:
    return int(np.asarray(case[key]))


def _causal_lengths(case) -> str | None:
    mask, past = np.asarray(case["attention_mask"]), np.asarray(case["past_length"])
    if past.ndim or past.dtype.kind not in "iu" or past < 0:
        return f"past_length is {past.tolist()}, not a whole number of earlier tokens"
    batch, _, query_length, _ = np.shape(case["q"])
    if mask.shape != (batch, int(past) + query_length):
        return f"attention_mask is {mask.shape}, not (batch, past_length + query_length) = ({batch}, {int(past) + query_length})"
    if mask.shape[1] != np.shape(case["k"])[2]:
        return f"attention_mask covers {mask.shape[1]} keys, k has {np.shape(case['k'])[2]}"
    return None


def _heads(width_of):
    """n_heads divides the width (split_heads gives each head width // n_heads)."""

    def holds(case) -> str | None:
        heads, width = _int(case, "n_heads"), width_of(case)
        return (
            None if heads >= 1 and width % heads == 0 else f"d_model {width} is not n_heads {heads} × d_head"
        )

    return holds


def _mismatched(found, expected: dict[str, tuple[int, ...]], prefix: str) -> str | None:
    found = {k[len(prefix) :]: tuple(np.shape(v)) for k, v in found.items() if k.startswith(prefix)}
    if set(found) != set(expected):
        missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
        return f"the parameters differ from the layer's: missing {missing[:3]}, extra {extra[:3]}"
    wrong = [k for k in sorted(expected) if found[k] != expected[k]]
    return f"{prefix}{wrong[0]} is {found[wrong[0]]}, not {expected[wrong[0]]}" if wrong else None


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
    return _mismatched(case, expected, "p.")


def _gpt_shapes(case) -> str | None:
    vocab, positions, d, layers = (
        _int(case, k) for k in ("vocab_size", "n_positions", "d_model", "n_layers")
    )
    block = {
        "ln_1": (d,),
        "ln_2": (d,),
        "qkv": (3 * d, d),
        "proj": (d, d),
        "fc": (4 * d, d),
        "fc_out": (d, 4 * d),
    }
    expected = {
        "wte.weight": (vocab, d),
        "wpe.weight": (positions, d),
        "ln_f.weight": (d,),
        "ln_f.bias": (d,),
    }
    for i in range(layers):
        for name, shape in block.items():
            expected[f"blocks.{i}.{name}.weight"] = shape
            expected[f"blocks.{i}.{name}.bias"] = shape[:1]
    return _mismatched(case, expected, "w.")


def _fits_positions(key: str, extra=lambda case: 0):
    def holds(case) -> str | None:
        length, limit = np.shape(case[key])[-1] + extra(case), _int(case, "n_positions")
        return None if length <= limit else f"{key} makes {length} tokens, more than n_positions {limit}"

    return holds


def _cache_split(case) -> str | None:
    split, length = _int(case, "split"), np.shape(case["ids"])[1]
    return None if 1 <= split < length else f"the cache holds {split} of {length} tokens"


def _settings(case):
    return np.asarray(case["settings"], dtype=np.float64), np.asarray(case["logits"], dtype=np.float64)


def _temperatures(case) -> str | None:
    temperatures = _settings(case)[0][:, 0]
    return None if (temperatures >= 0).all() else f"a temperature is {temperatures.min()}"


def _one_argmax(case) -> str | None:
    settings, logits = _settings(case)
    if (settings[:, 0] == 0).any():
        top = np.sort(logits, axis=-1)
        if (top[:, -1] == top[:, -2]).any():
            return "a row of logits has two largest entries, so the argmax is not one token"
    return None


def _top_k(case) -> str | None:
    settings, logits = _settings(case)
    vocab = logits.shape[-1]
    for k in settings[:, 1]:
        if k != int(k) or not 0 <= k <= vocab:
            return f"top_k {k} is not a number of tokens from 1 to the vocabulary {vocab} (0: off)"
        if 0 < k < vocab:
            top = -np.sort(-logits, axis=-1)
            if (top[:, int(k) - 1] == top[:, int(k)]).any():
                return f"with top_k {int(k)}, a row's logits ranked {int(k)} and {int(k) + 1} tie: the k largest are not one set"
    return None


def _top_p(case, margin: float = 1e-5) -> str | None:
    settings, logits = _settings(case)
    for temperature, k, p in settings:
        if not 0 <= p <= 1:
            return f"top_p {p} is not a probability (0: off)"
        if p == 0 or temperature == 0:
            continue
        scaled = logits / temperature
        if k:
            kth = -np.sort(-scaled, axis=-1)[:, int(k) - 1 : int(k)]
            scaled = np.where(scaled < kth, -np.inf, scaled)
        probs = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
        mass = np.cumsum(-np.sort(-probs / probs.sum(axis=-1, keepdims=True), axis=-1), axis=-1)
        if (np.abs(mass - p) < margin).any():
            return f"with top_p {p}, a row's probabilities add up to p within {margin}: the kept set is not clear"
    return None


def _graded(case, keys, sizes) -> str | None:
    wrong = [k for k in keys if _int(case, k) != sizes[k]]
    return f"{wrong[0]} is {_int(case, wrong[0])}, the graded run's is {sizes[wrong[0]]}" if wrong else None


def _tokens(key: str, rows: int, length: int):
    def holds(case) -> str | None:
        value = np.asarray(case[key])
        if value.shape != (rows, length):
            return f"{key} is {value.shape}, not {rows} sequences of {length}"
        vocab = _int(case, "vocab_size")
        return (
            None
            if value.min() >= 0 and value.max() < vocab
            else f"{key} holds a token outside the {vocab} symbols"
        )

    return holds


def _digit_rows(key: str):
    """Each row: 5 to 10 digit tokens, then PAD to the end."""

    def holds(case) -> str | None:
        for row, tokens in enumerate(np.asarray(case[key]).tolist()):
            n = sum(t != PAD for t in tokens)
            digits = all(FIRST_DIGIT <= t < S2S_VOCAB for t in tokens[:n])
            if not (5 <= n <= 10 and digits and all(t == PAD for t in tokens[n:])):
                return f"{key} row {row} is not 5 to 10 digits then PAD ({tokens})"
        return None

    return holds


def _source_padding(case) -> str | None:
    for source, mask in (("source", "source_padding"), ("parity_source", "parity_source_padding")):
        if not np.array_equal(np.asarray(case[mask]), (np.asarray(case[source]) != PAD).astype(int)):
            return f"{mask} is not 1 exactly at the real tokens of {source}"
    return None


def _s2s_lengths(case) -> str | None:
    source, target = np.shape(case["source"])[1], np.shape(case["parity_target_in"])[1]
    if source + 1 > S2S_MAX_LENGTH or target > S2S_MAX_LENGTH:  # the grader decodes source_length + 1 tokens
        return f"sources of {source} and answers of {max(source + 1, target)} tokens pass max_length {S2S_MAX_LENGTH}"
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
    d, heads, layers = (_int(case, k) for k in ("d_model", "n_heads", "n_layers"))
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
    return _mismatched(case, {k: tuple(v.shape) for k, v in model.state_dict().items()}, "w.")


def _gpt_weights(*more) -> tuple:
    """A GPT's weights (``w.*``) and sizes, as gpt_from_case reads them."""
    return (
        floats(GPT_WEIGHTS, "w.*"),
        term(GPT_LAYERS, ("w.*",), _gpt_shapes),
        integers(GPT_ARGUMENTS, GPT_SIZES, 1),
        term(HEADS_SPLIT, "n_heads", _heads(lambda case: _int(case, "d_model"))),
        *more,
    )


CONTRACT = {
    "causal": (
        shapes(
            ATTEND,
            q="batch heads query_length d_head",
            k="batch heads key_length d_head",
            v="batch heads key_length d_head",
        ),
        floats(ATTEND, ("q", "k", "v")),
        term(CAUSAL_MASK, ("attention_mask", "past_length"), _causal_lengths),
        padding(EITHER_SIDE, "attention_mask", "either"),
    ),
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
        term(HEADS_SPLIT, "n_heads", _heads(lambda case: np.shape(case["x"])[-1])),
        padding(SELF_PADDING, "x_padding", "either"),
        padding(MEMORY_PADDING, "memory_padding", "either"),
    ),
    "gpt": _gpt_weights(
        shapes(GPT_INPUTS, ids="batch length", attention_mask="batch length"),
        integers(TOKEN_EMBEDDING, "ids", 0, lambda case: _int(case, "vocab_size") - 1),
        term(POSITION_EMBEDDING, "ids", _fits_positions("ids")),
        padding(GPT_MASK, "attention_mask", "either"),
        integers(GPT_CACHE, "split", 1),
        term(GPT_CACHE, "split", _cache_split),
    ),
    "sampling": (
        shapes(SAMPLING_LOGITS, logits="batch vocab", settings="_ 3"),
        floats(SAMPLING_LOGITS, ("logits", "settings")),
        term(TEMPERATURE, "settings", _temperatures),
        term(GREEDY, "settings", _one_argmax),
        term(TOP_K, "settings", _top_k),
        term(TOP_P, "settings", _top_p),
    ),
    "decoding": _gpt_weights(
        shapes(PROMPT, prompt="batch prompt_length"),
        integers(TOKEN_EMBEDDING, "prompt", 0, lambda case: _int(case, "vocab_size") - 1),
        integers(NEW_TOKENS, "max_new_tokens", 1),
        term(
            CONTEXT_LIMIT,
            ("prompt", "max_new_tokens"),
            _fits_positions("prompt", lambda c: _int(c, "max_new_tokens")),
        ),
        floats(TEMPERATURE, "temperature"),
        term(
            TEMPERATURE,
            "temperature",
            lambda case: None if case["temperature"] >= 0 else "the temperature is negative",
        ),
        integers(TOP_K, "top_k", 0, lambda case: _int(case, "vocab_size")),
        floats(TOP_P, "top_p"),
        term(
            TOP_P,
            "top_p",
            lambda case: None if 0 <= case["top_p"] <= 1 else "top_p is not a probability (0: off)",
        ),
        integers(SEEDED, "seed", 0),
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
        integers(NGRAM, ("train_ids", "val_ids"), 0, lambda case: _int(case, "vocab_size") - 1),
        integers(NGRAM, "vocab_size", 1),
        term(
            NGRAM,
            "val_ids",
            lambda case: None if len(case["val_ids"]) >= 2 else "val_ids has no character after its first",
        ),
    ),
    "heldout": _gpt_weights(
        term(GRADER_GPT, GPT_SIZES, lambda case: _graded(case, GPT_SIZES, graded_sizes())),
        term(PARITY_IDS, "ids", _tokens("ids", 4, 32)),
        term(WINDOWS, "windows", _tokens("windows", 500, 32)),
        term(WINDOWS, "windows", _fits_positions("windows")),
    ),
    "reversal": (
        floats(GRADER_S2S, "w.*"),
        term(S2S_LENGTHS, "w.*", _seq2seq_shapes),
        term(
            GRADER_S2S,
            ("d_model", "n_heads", "n_layers"),
            lambda c: _graded(c, ("d_model", "n_heads", "n_layers"), graded_sizes()["s2s"]),
        ),
        shapes(
            S2S_INPUTS,
            source="batch source_length",
            source_padding="batch source_length",
            parity_source="parity source_length",
            parity_source_padding="parity source_length",
            parity_target_in="parity target_length",
        ),
        integers(S2S_TOKENS, ("source", "parity_source", "parity_target_in"), 0, S2S_VOCAB - 1),
        term(S2S_DIGITS, "source", _digit_rows("source")),
        term(S2S_DIGITS, "parity_source", _digit_rows("parity_source")),
        padding(S2S_DIGITS, "source_padding", "right"),
        padding(S2S_DIGITS, "parity_source_padding", "right"),
        term(S2S_PADDING, ("source_padding", "parity_source_padding"), _source_padding),
        term(S2S_LENGTHS, ("source", "parity_target_in"), _s2s_lengths),
        term(S2S_TEACHER, "parity_target_in", _teacher_input),
    ),
}


def _arrays(**values) -> dict[str, np.ndarray]:
    return {
        k: v.detach().cpu().numpy().copy() if torch.is_tensor(v) else np.asarray(v) for k, v in values.items()
    }


@torch.no_grad()
def causal_case(
    sol: dict, g: Draws, batch: int, heads: int, query: int, past: int, d_head: int, pattern=None
) -> dict:
    total = past + query
    q = g.normal(batch, heads, query, d_head)
    k, v = (g.normal(batch, heads, total, d_head) for _ in range(2))
    attention_mask = padding_mask(batch, total, pattern)
    mask = sol["decoder_mask"](attention_mask, query, past_length=past)
    out, weights = sol["attend"](q, k, v, mask)
    return _arrays(
        q=q,
        k=k,
        v=v,
        attention_mask=attention_mask,
        past_length=int_array(past),
        mask=mask,
        out=out,
        weights=weights,
    )


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
        **_arrays(
            x=x,
            memory=memory,
            x_padding=x_padding,
            memory_padding=memory_padding,
            n_heads=int_array(n_heads),
            y=y,
            cross_weights=cross,
        ),
    }


@torch.no_grad()
def _gpt2_init(model, draws: Draws):
    """GPT-2's initialisation (as transformers' ``_init_weights``: normal weights of std 0.02, the
    residual projections' scaled by 1/sqrt(2 n_layer), zero biases, unit norms) drawn again with
    :class:`Draws`: transformers samples with torch's ``normal_``, whose bits depend on the CPU's
    instruction set, so the expected outputs would move with the machine that built them."""
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            p.zero_()
        elif p.dim() == 1:  # LayerNorm weight
            p.fill_(1.0)
        else:
            std = model.config.initializer_range / (
                1 if not name.endswith("c_proj.weight") else (2 * model.config.n_layer) ** 0.5
            )
            p.copy_(draws.normal(p.shape) * std)
    return model


def _reference(seed: int, **sizes: int):
    model = _gpt2_init(gpt.reference_model(seed=seed, **sizes), Draws(seed))
    weights = {f"w.{k}": v.numpy().copy() for k, v in gpt.course_state_dict(model).items()}
    return model, {**weights, **{k: int_array(v) for k, v in gpt.sizes_of(model).items()}}


@torch.no_grad()
def gpt_case(g: Draws, seed: int, batch: int, seq: int, split: int, pattern=None, **sizes: int) -> dict:
    model, arrays = _reference(seed, **sizes)
    attention_mask = padding_mask(batch, seq, pattern)
    ids = random_ids(g, sizes["vocab_size"], attention_mask)
    logits = model(input_ids=ids, attention_mask=attention_mask).logits
    return {
        **arrays,
        **_arrays(ids=ids, attention_mask=attention_mask, split=int_array(split), logits=logits),
    }


def sampling_case(sol: dict, g: Draws, batch: int, vocab: int, settings: list[tuple]) -> dict:
    logits = g.normal(batch, vocab) * 2.5
    probs = [
        sol["next_token_distribution"](logits, temperature=t, top_k=int(k) or None, top_p=p or None)
        for t, k, p in settings
    ]
    return _arrays(logits=logits, settings=np.array(settings, dtype=np.float64), probs=torch.stack(probs))


@torch.no_grad()
def generate_case(
    sol: dict,
    g: Draws,
    seed: int,
    batch: int,
    prompt_len: int,
    steps: int,
    temperature: float,
    top_k: int,
    top_p: float,
    **sizes: int,
) -> dict:
    model, arrays = _reference(seed, **sizes)
    ours = sol["gpt_from_case"](arrays)
    prompt = g.integers(0, sizes["vocab_size"], (batch, prompt_len))
    counting = sol["CountingModel"](ours)
    greedy = sol["generate"](counting, prompt, steps, temperature=0)
    reference = model.generate(
        prompt, attention_mask=torch.ones_like(prompt), do_sample=False, max_new_tokens=steps, pad_token_id=0
    )
    assert torch.equal(greedy, reference), "the solution's greedy decoding differs from GPT-2's generate()"
    sampled = sol["generate"](
        ours,
        prompt,
        steps,
        temperature=temperature,
        top_k=top_k or None,
        top_p=top_p or None,
        generator=torch.Generator().manual_seed(seed),
    )
    return {
        **arrays,
        **_arrays(
            prompt=prompt,
            max_new_tokens=int_array(steps),
            temperature=np.array(temperature),
            top_k=int_array(top_k),
            top_p=np.array(top_p),
            seed=int_array(seed),
            greedy=greedy,
            lengths=torch.tensor(counting.lengths),
            sampled=sampled,
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
        **_arrays(
            logits=logits,
            ids=ids,
            loss=sol["lm_loss"](logits, ids),
            train_ids=train_ids,
            val_ids=val_ids,
            vocab_size=int_array(vocab),
        ),
        **perplexities,
    }


def graded_sizes() -> dict[str, int]:
    """What the graded run trains, read from the notebook's given (read-only) cells: the autograder's
    branch of ``lm_graded_settings`` and the ``S2S_*`` line of ``train_seq2seq``. The grader's weights
    for the prerequisite must fit the trained models, whose parameters the test loads after them."""
    cells = {
        nbgrader(c).get("grade_id"): c.source
        for c in nbformat.read(source_notebook(ASSIGNMENT), as_version=4).cells
    }
    found = {
        "env": types.SimpleNamespace(under_autograde=lambda: True),
        "print": lambda *args, **kwargs: None,
    }
    exec(cells["lm_graded_settings"], found)
    exec("\n".join(line for line in cells["train_seq2seq"].splitlines() if line.startswith("S2S_")), found)
    return {
        "vocab_size": text.VOCAB_SIZE,
        "n_positions": found["CONTEXT"],
        "d_model": found["D_MODEL"],
        "n_heads": found["N_HEADS"],
        "n_layers": found["N_LAYERS"],
        "s2s": dict(d_model=found["S2S_D_MODEL"], n_heads=found["S2S_HEADS"], n_layers=found["S2S_LAYERS"]),
    }


@torch.no_grad()
def heldout_case(sol: dict, g: Draws, sizes: dict[str, int], length: int = 32, parity: int = 4) -> dict:
    """Every block of ``length + 1`` held-out characters: the window, and the character after it
    (``targets``, in no window); random GPT-2 weights of the graded sizes (all of them random, so
    every part of the architecture shows) and GPT-2's logits for random ids with them."""
    ids = text.encode(HELDOUT.read_text(encoding="ascii"))
    blocks = ids[: len(ids) // (length + 1) * (length + 1)].view(-1, length + 1)
    model = randomize(gpt.reference_model(seed=55, **sizes), g)
    weights = {f"w.{k}": v.numpy().copy() for k, v in gpt.course_state_dict(model).items()}
    case = {**weights, **{k: int_array(v) for k, v in sizes.items()}}
    parity_ids = g.integers(0, sizes["vocab_size"], (parity, length))
    logits = model(input_ids=parity_ids).logits
    ours = sol["gpt_from_case"](case)(parity_ids)[0]
    assert (ours - logits).abs().max() < 1e-5, (
        "the solution's GPT differs from GPT-2 with the grader's weights"
    )
    return {**case, **_arrays(windows=blocks[:, :-1], targets=blocks[:, -1], ids=parity_ids, logits=logits)}


def reversal_case(
    sol: dict,
    g: Draws,
    batch: int = 64,
    width: int = 12,
    parity: int = 8,
    sizes: dict[str, int] | None = None,
) -> dict:
    """Sources drawn with :class:`Draws` (the notebook's own sampler uses torch's generator), in the
    notebook's tokens; what reversing them gives, and where each output digit must look. Then the
    prerequisite: random weights of the given sizes in the solution's ``Seq2Seq``, and its logits
    and cross-attention for the first ``parity`` sources with random answers as long as the grader's."""
    lengths = g.integers(sol["MIN_DIGITS"], sol["MAX_DIGITS"] + 1, (batch,))
    source = torch.full((batch, width), sol["PAD"])
    targets = torch.full((batch, width + 1), sol["PAD"])
    alignment = torch.full((batch, width + 1), -1)
    for row, n in enumerate(lengths.tolist()):
        digits = g.integers(0, 10, (n,)) + sol["FIRST_DIGIT"]
        source[row, :n] = digits
        targets[row, :n], targets[row, n] = digits.flip(0), sol["EOS"]
        alignment[row, :n] = torch.arange(n - 1, -1, -1)  # output digit i copies source digit n - 1 - i
    padding = (source != sol["PAD"]).long()
    sizes = sizes or graded_sizes()["s2s"]
    model = randomize(sol["Seq2Seq"](sol["SEQ2SEQ_VOCAB"], **sizes), g)
    target_in = torch.cat(
        [torch.full((parity, 1), sol["BOS"]), g.integers(0, 10, (parity, width)) + sol["FIRST_DIGIT"]], 1
    )
    with torch.no_grad():
        logits, cross = model(source[:parity], padding[:parity], target_in, torch.ones_like(target_in))
    return {
        **state_arrays(model, "w."),
        **{k: int_array(v) for k, v in sizes.items()},
        **_arrays(
            source=source,
            source_padding=padding,
            targets=targets,
            alignment=alignment,
            parity_source=source[:parity],
            parity_source_padding=padding[:parity],
            parity_target_in=target_in,
            parity_logits=logits,
            parity_cross=torch.stack(list(cross)),
        ),
    }


def build() -> dict:
    sol = solution_namespace(ASSIGNMENT)
    public, hidden = Draws(505), Draws(5_0505)
    sizes = graded_sizes()
    s2s_sizes = sizes.pop("s2s")
    small = dict(vocab_size=61, n_positions=32, d_model=24, n_heads=2, n_layers=2)
    settings = [(1.0, 0, 0.0), (0.7, 0, 0.0), (1.0, 5, 0.0), (1.0, 0, 0.9), (0.0, 0, 0.0), (1.3, 8, 0.8)]
    return {
        ("public", "causal"): pack_cases([causal_case(sol, public, 2, 2, 5, 0, 4, [5, 3])]),
        ("hidden", "causal"): pack_cases(
            [
                causal_case(sol, hidden, 3, 4, 6, 0, 8, [6, 2, [0, 0, 1, 1, 1, 1]]),
                causal_case(sol, hidden, 2, 3, 1, 7, 5, [8, 4]),
                causal_case(sol, hidden, 1, 1, 4, 3, 16),
            ]
        ),
        ("public", "decoder_layer"): pack_cases(
            [decoder_layer_case(sol, public, 16, 2, 2, 5, 6, [5, 3], [4, 6])]
        ),
        ("hidden", "decoder_layer"): pack_cases(
            [
                decoder_layer_case(sol, hidden, 24, 3, 3, 7, 4, [7, 1, 5], [4, 2, 3]),
                decoder_layer_case(sol, hidden, 40, 5, 1, 9, 11),
            ]
        ),
        ("public", "gpt"): pack_cases([gpt_case(public, 1, 2, 10, 6, [10, 7], **small)]),
        ("hidden", "gpt"): pack_cases(
            [
                gpt_case(
                    hidden,
                    2,
                    3,
                    14,
                    9,
                    [14, 11, 5],
                    vocab_size=83,
                    n_positions=40,
                    d_model=36,
                    n_heads=3,
                    n_layers=3,
                ),
                gpt_case(
                    hidden,
                    3,
                    1,
                    23,
                    1,
                    None,
                    vocab_size=50,
                    n_positions=24,
                    d_model=40,
                    n_heads=5,
                    n_layers=1,
                ),
            ]
        ),
        ("public", "sampling"): pack_cases([sampling_case(sol, public, 3, 20, settings)]),
        ("hidden", "sampling"): pack_cases(
            [
                sampling_case(
                    sol,
                    hidden,
                    4,
                    50,
                    [(0.5, 0, 0.0), (2.0, 0, 0.0), (1.0, 3, 0.0), (1.0, 0, 0.5), (0.8, 10, 0.95)],
                ),
                sampling_case(
                    sol, hidden, 2, 7, [(1.0, 0, 0.01), (1.0, 7, 0.0), (0.0, 2, 0.5), (1.0, 1, 0.0)]
                ),
            ]
        ),
        ("hidden", "decoding"): pack_cases(
            [
                generate_case(
                    sol,
                    hidden,
                    4,
                    2,
                    4,
                    20,
                    0.9,
                    12,
                    0.9,
                    vocab_size=71,
                    n_positions=32,
                    d_model=32,
                    n_heads=4,
                    n_layers=2,
                ),
                generate_case(
                    sol,
                    hidden,
                    5,
                    1,
                    1,
                    30,
                    1.2,
                    0,
                    0.8,
                    vocab_size=40,
                    n_positions=48,
                    d_model=24,
                    n_heads=3,
                    n_layers=3,
                ),
            ]
        ),
        ("public", "language_model"): pack_cases([language_model_case(sol, public, 2, 6, 11, 400, 100)]),
        ("hidden", "language_model"): pack_cases(
            [
                language_model_case(sol, hidden, 3, 9, 17, 900, 250),
                language_model_case(sol, hidden, 1, 4, 5, 60, 30),
            ]
        ),
        ("hidden", "heldout"): pack_cases([heldout_case(sol, Draws(5_0506), sizes)]),
        ("hidden", "reversal"): pack_cases([reversal_case(sol, hidden, sizes=s2s_sizes)]),
    }


README_FIGURE = paths.ROOT / "docs" / "figures" / "kv_cache.png"


def save_readme_figure(path: Path | str = README_FIGURE, dpi: int = 72) -> Path:
    """The notebook's KV-cache measurement (its solution's ``generate``, with and without the cache,
    on the notebook's benchmark model) as a README figure: ``python -m staff figure``."""
    import time

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sol = solution_namespace(ASSIGNMENT)
    torch.manual_seed(0)
    bench = sol["GPT"](vocab_size=text.VOCAB_SIZE, n_positions=512, d_model=128, n_heads=4, n_layers=4).eval()
    lengths, seconds = [32, 64, 128, 256, 384, 500], {True: [], False: []}
    for n in lengths:
        outputs = {}
        for use_cache in (True, False):
            best = float("inf")
            for _ in range(3):  # the best of three: a figure of the code's speed, not of the machine's load
                start = time.perf_counter()
                outputs[use_cache] = sol["generate"](
                    bench, torch.zeros(1, 1, dtype=torch.long), n, temperature=0, use_cache=use_cache
                )
                best = min(best, time.perf_counter() - start)
            seconds[use_cache].append(best)
        assert torch.equal(outputs[True], outputs[False]), "the cache changed the generated tokens"
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
    left.plot(lengths, seconds[False], "o-", label="recompute the prefix")
    left.plot(lengths, seconds[True], "o-", label="KV cache")
    left.set(
        title="Greedy generation of n tokens (4 blocks, d_model 128, CPU)",
        xlabel="new tokens n",
        ylabel="seconds",
    )
    left.legend()
    right.plot(lengths, np.array(seconds[False]) / np.array(seconds[True]), "o-", color="tab:green")
    right.set(title="Speed-up of the KV cache", xlabel="new tokens n", ylabel="time without / with")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, metadata={"Software": None})
    plt.close(fig)
    return path
