"""What 05_decoder's released text promises about the inputs its tests feed each exercise (see
:mod:`staff.authoring.contract_kit`): every term quotes the notebook's own words."""

from __future__ import annotations

import numpy as np

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

GPT_SIZES = _recipe.GPT_SIZES
LM_SIZES, LM_TRAINING = _recipe.LM_SIZES, _recipe.LM_TRAINING

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
#: Exercise 3.
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
#: Exercise 2, its training (the hidden test of section 2).
GRADER_GPT = (
    "It loads weights of its own (random, of a small GPT: 2 blocks, d_model 64, 4 heads, 64 positions) into a "
    "fresh `GPT` of your class"
)
PARITY_IDS = "compares the logits on 4 sequences of 32 random tokens"
LM_STEPS = (
    "for 8 optimisation steps: AdamW with learning rate 5e-3 and weight decay 0.01, 2 warm-up steps then a "
    "cosine decay to 0 over the 8 steps"
)
LM_BATCHES = "each step on a batch of 32 windows of 64 characters of English text your notebook never sees"
WINDOWS = "the trained model's log-probabilities of every next character of 8 more such windows"


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


def _gpt_shapes(case) -> str | None:
    vocab, positions, d, layers = (
        scalar(case, k) for k in ("vocab_size", "n_positions", "d_model", "n_layers")
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
    return mismatched(case, expected, "w.")


def _fits_positions(key: str, extra=lambda case: 0):
    def holds(case) -> str | None:
        length, limit = np.shape(case[key])[-1] + extra(case), scalar(case, "n_positions")
        return None if length <= limit else f"{key} makes {length} tokens, more than n_positions {limit}"

    return holds


def _cache_split(case) -> str | None:
    split, length = scalar(case, "split"), np.shape(case["ids"])[1]
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


def _tokens(key: str, *shape: int):
    def holds(case) -> str | None:
        value = np.asarray(case[key])
        if value.shape != shape:
            return f"{key} is {value.shape}, not {shape} tokens"
        vocab = scalar(case, "vocab_size")
        return (
            None
            if value.min() >= 0 and value.max() < vocab
            else f"{key} holds a token outside the {vocab} symbols"
        )

    return holds


def _gpt_weights(*more) -> tuple:
    """A GPT's weights (``w.*``) and sizes, as gpt_from_case reads them."""
    return (
        floats(GPT_WEIGHTS, "w.*"),
        term(GPT_LAYERS, ("w.*",), _gpt_shapes),
        integers(GPT_ARGUMENTS, GPT_SIZES, 1),
        term(HEADS_SPLIT, "n_heads", heads_divide(lambda case: scalar(case, "d_model"))),
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
    "gpt": _gpt_weights(
        shapes(GPT_INPUTS, ids="batch length", attention_mask="batch length"),
        integers(TOKEN_EMBEDDING, "ids", 0, lambda case: scalar(case, "vocab_size") - 1),
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
        integers(TOKEN_EMBEDDING, "prompt", 0, lambda case: scalar(case, "vocab_size") - 1),
        integers(NEW_TOKENS, "max_new_tokens", 1),
        term(
            CONTEXT_LIMIT,
            ("prompt", "max_new_tokens"),
            _fits_positions("prompt", lambda c: scalar(c, "max_new_tokens")),
        ),
        floats(TEMPERATURE, "temperature"),
        term(
            TEMPERATURE,
            "temperature",
            lambda case: None if case["temperature"] >= 0 else "the temperature is negative",
        ),
        integers(TOP_K, "top_k", 0, lambda case: scalar(case, "vocab_size")),
        floats(TOP_P, "top_p"),
        term(
            TOP_P,
            "top_p",
            lambda case: None if 0 <= case["top_p"] <= 1 else "top_p is not a probability (0: off)",
        ),
        integers(SEEDED, "seed", 0),
    ),
    "heldout": _gpt_weights(
        term(GRADER_GPT, GPT_SIZES, lambda case: graded(case, GPT_SIZES, LM_SIZES)),
        term(PARITY_IDS, "ids", _tokens("ids", 4, 32)),
        term(
            LM_STEPS,
            ("learning_rate", "weight_decay", "warmup_steps"),
            settings_are({k: LM_TRAINING[k] for k in ("learning_rate", "weight_decay", "warmup_steps")}),
        ),
        term(LM_BATCHES, "batches", _tokens("batches", LM_TRAINING["steps"], LM_TRAINING["batch"], 64)),
        term(LM_BATCHES, "batches", _fits_positions("batches")),
        term(WINDOWS, "windows", _tokens("windows", 8, 64)),
        term(WINDOWS, "windows", _fits_positions("windows")),
    ),
}
