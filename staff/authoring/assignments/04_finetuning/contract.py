"""What 04_finetuning's released text promises about the inputs its tests feed each exercise (see
:mod:`staff.authoring.contract_kit`): every term quotes the notebook's own words."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from transformers import DistilBertConfig, DistilBertModel

from staff.authoring.contract_kit import (
    Case,
    Verdict,
    floats,
    integers,
    one_of,
    padding,
    shapes,
    term,
    text,
)

from . import recipe as _recipe

CONFIG_FIELDS = _recipe.CONFIG_FIELDS

# ---- the contract: what the release promises about each exercise's inputs ----------------------

#: The released notebook's own words (quoted verbatim, whitespace aside).
_HEAD = "The checks put your head on a small random encoder with the saved weights of `W_hy`"
_W_HY = (
    "a linear layer named **`W_hy`** (`nn.Linear`) from the encoder's hidden size "
    "(`encoder.config.dim`: 384 offline, 768 for DistilBERT) to 1"
)
_ENCODER = 'The small random DistilBertModel saved in a case (weights "encoder.*")'
_CONFIG = "config = DistilBertConfig(**{field: int(case[field]) for field in CONFIG_FIELDS})"
_SHAPE = "The encoder turns `input_ids` of shape `(batch, seq)`"
_CLS = "the sentence is represented by the **`[CLS]` vector**, position 0 of the last layer"
_PADDED = (
    "pads the shorter sentences with `[PAD]` (id 0) and returns an `attention_mask` that is 1 on real "
    "tokens and 0 on padding"
)
_BATCH = '"input_ids" and "attention_mask" (batch, seq), "labels" (batch,) of 0/1 integers'
_FIXED = "A stand-in model whose forward returns the same saved logits whatever the input."
_LOGITS = "Logits, shape (batch,)"
_BOW = 'The BagOfWords saved in a case (weights "state.*")'
_BOW_SIZES = 'model = BagOfWords(int(case["vocab_size"]), int(case["dim"]), float(case["dropout"]))'
_EMBEDDING = "self.embedding = nn.Embedding(vocab_size, dim)"
_DROPOUT = "self.p = dropout # dropout probability"
_LOADER = "A DataLoader (no shuffling) over the padded examples saved in a case."
_BATCH_SIZE = 'return DataLoader(rows, batch_size=batch_size or int(case["batch_size"]), shuffle=False)'
_STEP_MODEL = "(`BagOfWords`, in float64, no dropout)"
_ADAMW = (
    'optimizer = torch.optim.AdamW(model_tiny.parameters(), lr=float(case["lr"]), '
    'weight_decay=float(case["weight_decay"]))'
)
_SCHEDULE = 'scheduler = get_linear_schedule_with_warmup(optimizer, int(case["warmup_steps"]), int(case["total_steps"]))'
_CLIP = "the gradients' global norm (all parameters together) is at most `max_grad_norm`"
_STEPS = "The checks run your step several times on a tiny model"
_EVALUATE_MODEL = "The checks run your function on `BagOfWords` with dropout 0.5"
_TOTAL_STEPS = (
    "the number of optimisation steps is `total_steps = epochs * len(train_loader)`, or `max_steps` if that "
    "is given and smaller"
)
_MAX_STEPS = 'max_steps = int(case["max_steps"]) if int(case["max_steps"]) > 0 else None'
_EVAL_EVERY = "evaluate on `val_loader` with your `evaluate` every `eval_every` steps (if it is given)"
_PEAK_LR = "the optimiser is **AdamW** on all the model's parameters with learning rate `lr`"
_WARMUP = "fraction of the steps during which the learning rate rises linearly from 0"
_ANALYSER_MODEL = "The checks use `BagOfWords` (with dropout, left in training mode) as the model."
_SENTENCES = "Sentences saved as UTF-8 bytes, one per line."
_LIST = "accept a list of strings, or a single string"
_THRESHOLD = '`"label"` (`"positive"` if the probability is above `self.threshold`, else `"negative"`)'
_SPECIAL = "adds the special tokens `[CLS]` at the start and `[SEP]` at the end"
_RUN_BATCHES = "on 8 batches of 8 review sentences you never see"
_RUN_TOKENS = "tokenised by the course's tokenizer and each padded on the right to its longest sentence, with labels 0 or 1"
_RUN_UNSEEN = "the trained model's logits on 32 other such sentences"
_RUN_HEAD = "with saved weights of `W_hy`"
_RUN_SEED = "The test seeds torch's random generator right before"
#: The offline encoder's vocabulary (bert-base-uncased's, online too) and hidden size.
VOCAB_SIZE, ENCODER_DIM = 30522, 384


def _scalar(case: Case, key: str) -> float:
    return np.asarray(case[key]).item()


def _within(key: str, low: float, high: float, low_open: bool = False, high_open: bool = False):
    """A finite scalar in [low, high] (either end open; high may be inf); the reason says what it must be."""

    def holds(case: Case) -> Verdict:
        value = np.asarray(case[key])
        if value.ndim or value.dtype.kind not in "iuf":
            return f"{key} is not a number"
        x = float(value)
        inside = (x > low if low_open else x >= low) and (x < high if high_open else x <= high)
        if np.isinf(high):
            wanted = f"{'above' if low_open else 'at least'} {low:g}"
        else:
            wanted = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        return None if np.isfinite(x) and inside else f"{key} is {x:g}, not {wanted}"

    return holds


def _config(case: Case) -> Verdict:
    sizes = {field: int(_scalar(case, field)) for field in CONFIG_FIELDS}
    if sizes["dim"] % sizes["n_heads"]:
        return f"dim {sizes['dim']} does not split into n_heads {sizes['n_heads']} heads (DistilBertConfig)"
    seq = np.shape(case["input_ids"])[-1]
    if seq > sizes["max_position_embeddings"]:
        return f"seq {seq} is longer than max_position_embeddings {sizes['max_position_embeddings']}"
    return None


def _encoder_state(case: Case) -> Verdict:
    """The saved "encoder.*" weights are exactly the state dict of a DistilBertModel of the case's config."""
    config = DistilBertConfig(**{field: int(_scalar(case, field)) for field in CONFIG_FIELDS})
    try:
        with torch.device("meta"):  # shapes only: no weights drawn
            wanted = {k: tuple(v.shape) for k, v in DistilBertModel(config).state_dict().items()}
    except ValueError as error:
        return f"no DistilBertModel has this config ({error})"
    saved = {k.removeprefix("encoder."): np.shape(v) for k, v in case.items() if k.startswith("encoder.")}
    if saved.keys() != wanted.keys():
        return f"the encoder's weights {sorted(saved.keys() ^ wanted.keys())[:3]} are not a DistilBertModel's"
    bad = [k for k in wanted if saved[k] != wanted[k]]
    return f"encoder.{bad[0]} is {saved[bad[0]]}, not {wanted[bad[0]]}" if bad else None


def _w_hy(case: Case) -> Verdict:
    dim = int(_scalar(case, "dim"))
    weight, bias = np.shape(case["W_hy.weight"]), np.shape(case["W_hy.bias"])
    return (
        None
        if (weight, bias) == ((1, dim), (1,))
        else f"W_hy is {weight} and {bias}, not nn.Linear({dim}, 1)"
    )


def _bow_state(case: Case) -> Verdict:
    vocab, dim = int(_scalar(case, "vocab_size")), int(_scalar(case, "dim"))
    wanted = {"state.embedding.weight": (vocab, dim), "state.out.weight": (1, dim), "state.out.bias": (1,)}
    saved = {k: np.shape(v) for k, v in case.items() if k.startswith("state.")}
    return None if saved == wanted else f"the weights {saved} are not BagOfWords({vocab}, {dim})'s {wanted}"


def _pad_ids(ids: str, mask: str) -> Callable[[Case], Verdict]:
    def holds(case: Case) -> Verdict:
        padded = np.asarray(case[ids])[np.asarray(case[mask]) == 0]
        return None if not padded.any() else f"{ids} holds ids other than [PAD] (0) where {mask} is 0"

    return holds


def _examples(ids: str, mask: str, labels: str) -> Callable[[Case], Verdict]:
    """Padded examples as the tokenizer and loader_of give them: ids and mask (batch, seq), padding
    with id 0 (on either side: no exercise on BagOfWords depends on it), every row with a real token,
    ids within the embedding's vocabulary, labels (batch,) 0/1."""
    checks = (
        shapes(_BATCH, **{ids: "batch seq", mask: "batch seq", labels: "batch"}),
        padding(_PADDED, mask, "either"),
        term(_PADDED, (ids, mask), _pad_ids(ids, mask)),
        integers(_EMBEDDING, ids, 0, lambda case: int(_scalar(case, "vocab_size")) - 1),
        integers(_BATCH, labels, 0, 1),
    )

    def holds(case: Case) -> Verdict:
        return next((verdict for check in checks if (verdict := check.holds(case))), None)

    return holds


def _step_batches(case: Case) -> Verdict:
    steps = int(_scalar(case, "steps"))
    names = {k.rpartition("_")[0] for k in case if k.startswith(("input_ids_", "attention_mask_", "labels_"))}
    given = {
        int(k.rpartition("_")[2]) for k in case if k.startswith(("input_ids_", "attention_mask_", "labels_"))
    }
    if names != {"input_ids", "attention_mask", "labels"} or given != set(range(steps)):
        return f"the case has batches {sorted(given)} for {steps} steps"
    for step in range(steps):
        verdict = _examples(f"input_ids_{step}", f"attention_mask_{step}", f"labels_{step}")(case)
        if verdict:
            return f"step {step}: {verdict}"
    return None


def _schedule(case: Case) -> Verdict:
    warmup, total = int(_scalar(case, "warmup_steps")), int(_scalar(case, "total_steps"))
    return None if 0 <= warmup <= total and total >= 1 else f"warmup_steps {warmup} for total_steps {total}"


def _adamw(case: Case) -> Verdict:
    return _within("lr", 0, np.inf, low_open=True)(case) or _within("weight_decay", 0, np.inf)(case)


def _sentences(count: int | None = None) -> Callable[[Case], Verdict]:
    def holds(case: Case) -> Verdict:
        sentences = bytes(np.asarray(case["sentences"])).decode("utf-8", "replace").split("\n")
        if not all(sentence.strip() for sentence in sentences):
            return "an empty sentence"
        if count is not None and len(sentences) != count:
            return f"{len(sentences)} sentences, not {count}"
        return None

    return holds


def _threshold(case: Case) -> Verdict:
    threshold = float(_scalar(case, "threshold"))
    if not 0 < threshold < 1:
        return f"threshold {threshold:g} is not a probability strictly between 0 and 1"
    closest = np.abs(np.asarray(case["probabilities"], dtype=np.float64) - threshold).min()
    # "above" the threshold: a probability within the check's tolerance of it has no label to grade
    return None if closest > 1e-5 else f"a probability {closest:.1g} from threshold {threshold:g}"


def _run_batches(case: Case) -> Verdict:
    """``steps`` batches (input_ids_k, attention_mask_k, labels_k) and the unseen one, each as the
    course's tokenizer gives a batch: ids of its vocabulary, [CLS] (101) first, padded on the right
    with [PAD] (0) to the batch's longest sentence, labels 0/1; 8 batches of 8 and 32 unseen."""
    steps = int(_scalar(case, "steps"))
    given = {
        int(k.rpartition("_")[2]) for k in case if k.startswith(("input_ids_", "attention_mask_", "labels_"))
    }
    if steps != 8 or given != set(range(steps)):
        return f"the case has batches {sorted(given)} for {steps} steps, not 8"
    for name, prefix, suffix, rows in [(f"step {k}", "", f"_{k}", 8) for k in range(steps)] + [
        ("unseen", "unseen_", "", 32)
    ]:
        ids, mask, labels = (
            np.asarray(case[f"{prefix}{key}{suffix}"]) for key in ("input_ids", "attention_mask", "labels")
        )
        if (
            ids.shape != mask.shape
            or ids.ndim != 2
            or labels.shape != (ids.shape[0],)
            or ids.shape[0] != rows
        ):
            return f"{name}: input_ids {ids.shape}, attention_mask {mask.shape}, labels {labels.shape}, not {rows} sentences"
        verdict = padding(_RUN_TOKENS, f"{prefix}attention_mask{suffix}", "right").holds(case)
        if verdict:
            return f"{name}: {verdict}"
        if mask[:, -1].sum() == 0:
            return f"{name}: padded beyond its longest sentence"
        if ids.min() < 0 or ids.max() >= VOCAB_SIZE or (ids[:, 0] != 101).any() or ids[mask == 0].any():
            return f"{name}: ids that the course's tokenizer does not give (vocabulary, [CLS] first, [PAD] 0)"
        if not np.isin(labels, (0, 1)).all():
            return f"{name}: labels other than 0 and 1"
    return None


def _run_head(case: Case) -> Verdict:
    weight, bias = np.shape(case["W_hy.weight"]), np.shape(case["W_hy.bias"])
    wanted = ((1, ENCODER_DIM), (1,))
    return (
        None if (weight, bias) == wanted else f"W_hy is {weight} and {bias}, not nn.Linear({ENCODER_DIM}, 1)"
    )


_bow = (
    floats(_BOW, "state.*"),
    integers(_BOW_SIZES, ("vocab_size", "dim"), 1),
    term(_BOW_SIZES, ("state.*", "vocab_size", "dim"), _bow_state),
)
_loader = (
    term(
        _LOADER, ("input_ids", "attention_mask", "labels"), _examples("input_ids", "attention_mask", "labels")
    ),
    integers(_BATCH_SIZE, "batch_size", 1),
)
CONTRACT = {
    "head": (
        integers(_CONFIG, CONFIG_FIELDS, 1),
        term(_CONFIG, CONFIG_FIELDS, _config),
        floats(_ENCODER, "encoder.*"),
        term(_ENCODER, "encoder.*", _encoder_state),
        floats(_HEAD, "W_hy.*"),
        term(_W_HY, "W_hy.*", _w_hy),
        shapes(_SHAPE, input_ids="batch seq", attention_mask="batch seq"),
        integers(_CONFIG, "input_ids", 0, lambda case: int(_scalar(case, "vocab_size")) - 1),
        # [CLS] at position 0 of every row: real tokens first, padding after them
        padding(_CLS, "attention_mask", "right"),
        term(_PADDED, ("input_ids", "attention_mask"), _pad_ids("input_ids", "attention_mask")),
    ),
    "loss": (
        floats(_FIXED, "logits"),
        shapes(_LOGITS, logits="batch", labels="batch"),
        integers(_BATCH, "labels", 0, 1),
    ),
    "step": (
        one_of(_STEP_MODEL, "dropout", [0.0]),
        *_bow,
        integers(_STEPS, "steps", 1),
        term(_BATCH, ("input_ids_*", "attention_mask_*", "labels_*", "steps"), _step_batches),
        term(_ADAMW, ("lr", "weight_decay"), _adamw),
        term(_SCHEDULE, ("warmup_steps", "total_steps"), _schedule),
        term(_CLIP, "max_grad_norm", _within("max_grad_norm", 0, np.inf, low_open=True)),
    ),
    "evaluate": (
        one_of(_EVALUATE_MODEL, "dropout", [0.5]),
        *_bow,
        *_loader,
    ),
    "train": (
        term(_DROPOUT, "dropout", _within("dropout", 0, 1, high_open=True)),
        *_bow,
        *_loader,
        integers(_TOTAL_STEPS, "epochs", 1),
        integers(_MAX_STEPS, "max_steps", 0),
        integers(_EVAL_EVERY, "eval_every", 0),
        term(_PEAK_LR, "peak_lr", _within("peak_lr", 0, np.inf, low_open=True)),
        term(_WARMUP, "warmup_ratio", _within("warmup_ratio", 0, 1)),
    ),
    "analyser": (
        term(_ANALYSER_MODEL, "dropout", _within("dropout", 0, 1, low_open=True, high_open=True)),
        *_bow,
        text(_SENTENCES, "sentences"),
        term(_LIST, "sentences", _sentences()),
        term(_THRESHOLD, "threshold", _threshold),
        integers(_SPECIAL, "max_length", 2),
    ),
    "training_steps": (
        floats(_RUN_HEAD, "W_hy.*"),
        term(_W_HY, "W_hy.*", _run_head),
        integers(_RUN_BATCHES, "steps", 8, 8),
        integers(_RUN_TOKENS, ("input_ids_*", "attention_mask_*", "labels_*", "unseen_*"), 0, VOCAB_SIZE - 1),
        term(_RUN_BATCHES, ("input_ids_*", "attention_mask_*", "labels_*", "steps"), _run_batches),
        term(_RUN_UNSEEN, "unseen_*", _run_batches),
        term(_PEAK_LR, "peak_lr", _within("peak_lr", 0, np.inf, low_open=True)),
        term(_WARMUP, "warmup_ratio", _within("warmup_ratio", 0, 1)),
        integers(_RUN_SEED, "seed", 0),
    ),
}
