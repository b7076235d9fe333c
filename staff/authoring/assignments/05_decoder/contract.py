"""What 05_decoder's released text promises about the inputs its tests feed each exercise (see
:mod:`staff.authoring.contract_kit`): every term quotes the notebook's own words."""

from __future__ import annotations

import numpy as np
import torch

from staff.authoring.contract_kit import floats, integers, padding, shapes, term

from . import recipe as _recipe

GPT_SIZES = _recipe.GPT_SIZES
LM_SIZES, LM_TRAINING, S2S_TRAINING = _recipe.LM_SIZES, _recipe.LM_TRAINING, _recipe.S2S_TRAINING
graded_sizes = _recipe.graded_sizes

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
    "It loads weights of its own (random, of a small GPT: 2 blocks, d_model 64, 4 heads, 64 positions) into a "
    "fresh `GPT` of your class"
)
PARITY_IDS = "compares the logits on 4 sequences of 32 random tokens"
LM_STEPS = (
    "for 8 steps of the loop below: AdamW with learning rate 5e-3 and weight decay 0.01, 2 warm-up steps then a "
    "cosine decay to 0 over the 8 steps"
)
LM_BATCHES = "each step on a batch of 32 windows of 64 characters of the entries your copy leaves out"
WINDOWS = "the trained model's log-probabilities of every next character of 8 more such windows"
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
S2S_STEPS = (
    "for 8 steps of the given loop below (AdamW with its learning rate, 2 warm-up steps then a cosine decay to 0 "
    "over the 8 steps"
)
S2S_BATCHES = "each step on a batch of 64 new sequences padded on the right to 10 digits"
S2S_UNSEEN = "on 32 unseen sequences padded to 12 tokens"
S2S_TARGET = "The target is `BOS`, the reversed digits, `EOS`"
S2S_VOCAB, S2S_MAX_LENGTH, PAD, BOS, EOS, FIRST_DIGIT = 13, 16, 0, 1, 2, 3


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


def _tokens(key: str, *shape: int):
    def holds(case) -> str | None:
        value = np.asarray(case[key])
        if value.shape != shape:
            return f"{key} is {value.shape}, not {shape} tokens"
        vocab = _int(case, "vocab_size")
        return (
            None
            if value.min() >= 0 and value.max() < vocab
            else f"{key} holds a token outside the {vocab} symbols"
        )

    return holds


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


def _settings_are(expected: dict):
    def holds(case) -> str | None:
        for key, value in expected.items():
            if not np.isclose(float(np.asarray(case[key])), float(value), rtol=1e-12, atol=0):
                return f"{key} is {np.asarray(case[key]).tolist()}, the text says {value}"
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
        term(GRADER_GPT, GPT_SIZES, lambda case: _graded(case, GPT_SIZES, LM_SIZES)),
        term(PARITY_IDS, "ids", _tokens("ids", 4, 32)),
        term(
            LM_STEPS,
            ("learning_rate", "weight_decay", "warmup_steps"),
            _settings_are({k: LM_TRAINING[k] for k in ("learning_rate", "weight_decay", "warmup_steps")}),
        ),
        term(LM_BATCHES, "batches", _tokens("batches", LM_TRAINING["steps"], LM_TRAINING["batch"], 64)),
        term(LM_BATCHES, "batches", _fits_positions("batches")),
        term(WINDOWS, "windows", _tokens("windows", 8, 64)),
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
            _settings_are(
                {
                    "learning_rate": graded_sizes()["s2s_training"]["learning_rate"],
                    "warmup_steps": S2S_TRAINING["warmup_steps"],
                }
            ),
        ),
    ),
}
