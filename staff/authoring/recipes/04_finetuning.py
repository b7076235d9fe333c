"""Fixtures for 04_finetuning: small models and batches whose expected results come from the
notebook's own solution (:func:`staff.authoring.reference.solution_namespace`), computed on the CPU.

Every exercise is tested on a model that is *not* the student's fine-tuned one, so the checks are
exact and fast and one broken exercise does not fail the others:

- ``head``: a small random ``DistilBertModel`` (weights ``encoder.*``, sizes as config fields) and
  the weights of ``W_hy``; padded ``input_ids``/``attention_mask``; the solution's logits and
  probabilities (float32). Hidden cases use other dims, head counts, batches and padding.
- ``loss``: logits and 0/1 labels, the mean binary cross-entropy and its gradient with respect to
  the logits. Hidden cases include |logits| up to 60, where probabilities fed to a loss that
  expects logits, or ``log(sigmoid(z))``, go wrong.
- ``step``: a float64 ``BagOfWords`` (the notebook's stand-in, no dropout), AdamW and linear
  warm-up/decay settings, a few batches, and every parameter after every optimisation step.
  Clipping thresholds are below the gradients' norms, so forgetting to clip shows.
- ``evaluate``: a ``BagOfWords`` with dropout 0.5 (the check leaves it in training mode), padded
  examples, and the solution's accuracy, loss, confusion matrix and probabilities (in eval mode).
- ``train``: the whole loop on a float64 ``BagOfWords`` without shuffling, started in eval mode (as
  ``from_pretrained`` returns a model): per-step learning rates and losses, evaluation steps and
  accuracies, final parameters. One public and one hidden case have dropout, with evaluations
  before the last step, so a loop that never calls ``model.train()`` (or not again after
  ``evaluate``) gets other losses and parameters; the notebook's ``BagOfWords`` draws its masks
  from each batch, so the expected values do not depend on anything else drawing random numbers.
  ``progress``: every parameter, flattened, where training starts and where it ends (a
  prerequisite of the hidden test, judged outside the kernel: the student's loop must take the
  parameters at least half-way there, so a loop that keeps the books and trains nothing earns nothing).
- ``analyser``: a ``BagOfWords`` over the real tokenizer's ids (hashed into a small vocabulary),
  sentences stored as UTF-8 bytes, thresholds and max lengths, expected probabilities and labels.

- ``heldout`` (hidden only): 128 review sentences written for the course that never ship
  (``staff/authoring/heldout/sentiment.tsv``, 64 positive, 64 negative) and their labels. The
  graded run's fine-tuned model predicts them in the kernel; the judge counts the predictions
  against the labels, which the kernel never has (the validation labels it can read would let a
  submission memorise its way to any accuracy there).

Hidden cases differ from the public ones in every size and setting.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from transformers import DistilBertConfig, DistilBertModel, get_linear_schedule_with_warmup

from course import data, models
from course.fixtures import pack_cases
from staff.authoring.contracts import (
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
from staff.authoring.reference import solution_namespace
from staff.authoring.tensors import (
    Draws,
    float_array,
    int_array,
    padding_mask,
    random_ids,
    randomize,
    state_arrays,
    text_bytes,
)

ASSIGNMENT = "04_finetuning"
#: The tolerances (atol, rtol) the notebook's tests compare these fixtures with (staff.authoring.fixtures).
# The tiny models train in float64, but training_step computes the loss in float32 (as mixed
# precision needs): a loss's last bits follow the CPU's kernels (one float32 unit, 3e-8, apart under
# ATEN_CPU_CAPABILITY=default), so losses are compared at float32's resolution, parameters at 1e-8.
TOLERANCES = {
    "*": (1e-5, 1e-5),
    "loss/grad": (1e-6, 1e-5),
    "step": (1e-8, 0.0),
    "step/losses": (1e-6, 0.0),
    "step/lrs": (1e-12, 0.0),
    "evaluate": (1e-6, 1e-5),
    "evaluate/accuracy": (1e-9, 0.0),
    "train": (1e-8, 0.0),
    "train/train_loss": (1e-6, 0.0),
    "train/lr": (1e-12, 0.0),
    "train/val_accuracy": (1e-9, 0.0),
    "train/state": (1e-5, 1e-5),  # float32 starting weights (inputs): float32's own resolution
    "analyser": (1e-6, 1e-5),
}
#: The expected outputs in each fixture (key patterns): a grading kernel never sees them, the judge
#: compares with them (staff/grading/execution/sandbox.py, judge.py). Everything else is an input.
OUTPUTS = {
    "heldout": ("labels",),
    "head": ("logits", "probabilities"),
    "loss": ("loss", "grad"),
    "step": ("losses", "lrs", "step[0-9]*"),
    "evaluate": ("probabilities", "confusion", "accuracy", "loss"),
    "train": ("lr", "val_step", "train_loss", "val_accuracy", "final.*", "progress"),
    "analyser": ("probabilities", "positive"),
}
CONFIG_FIELDS = ("vocab_size", "max_position_embeddings", "dim", "n_layers", "n_heads", "hidden_dim")


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
_CLIP = "rescales them so that their global norm is at most `max_grad_norm`"
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
_HELDOUT = "label 128 review sentences that are in neither split"


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
    "heldout": (
        text(_SENTENCES, "sentences"),
        term(_HELDOUT, "sentences", _sentences(128)),
    ),
}


# ---- 1. the head -----------------------------------------------------------------------------


@torch.no_grad()
def head_case(sol: dict, draws: Draws, lengths: list[int], seq: int, **sizes: int) -> dict:
    config = DistilBertConfig(max_position_embeddings=32, **sizes)
    encoder = randomize(DistilBertModel(config), draws)
    model = sol["SentimentClassifier"](encoder).eval()
    model.W_hy.weight.copy_(draws.normal(1, config.dim) * 2 / config.dim**0.5)
    model.W_hy.bias.copy_(draws.normal(1) * 0.5)
    mask = padding_mask(len(lengths), seq, lengths)
    ids = random_ids(draws, config.vocab_size, mask)
    return {
        **{f: int_array(getattr(config, f)) for f in CONFIG_FIELDS},
        **state_arrays(encoder, "encoder."),
        "W_hy.weight": model.W_hy.weight.numpy().copy(),
        "W_hy.bias": model.W_hy.bias.numpy().copy(),
        "input_ids": ids.numpy(),
        "attention_mask": mask.numpy(),
        "logits": model(ids, mask).numpy(),
        "probabilities": model.predict(ids, mask).numpy(),
    }


# ---- 2. the loss -----------------------------------------------------------------------------


def loss_case(sol: dict, logits: np.ndarray, labels: np.ndarray) -> dict:
    model = sol["FixedLogits"](logits)
    batch = {
        "input_ids": torch.zeros(len(labels), 3, dtype=torch.long),
        "attention_mask": torch.ones(len(labels), 3, dtype=torch.long),
        "labels": torch.as_tensor(labels, dtype=torch.long),
    }
    loss = sol["training_step"](model, batch)
    loss.backward()
    return {
        "logits": model.logits.detach().numpy().copy(),
        "labels": labels.astype(np.int64),
        "loss": loss.detach().numpy(),
        "grad": model.logits.grad.numpy().copy(),
    }


def _loss_cases(sol: dict, rng: np.random.Generator, cases: list[tuple[int, float]]) -> list[dict]:
    out = []
    for batch, scale in cases:
        logits = (rng.standard_normal(batch) * scale).astype(np.float32)
        out.append(loss_case(sol, logits, rng.integers(0, 2, batch)))
    return out


# ---- stand-in models and data ------------------------------------------------------------------


def bag_of_words(
    sol: dict,
    draws: Draws,
    vocab_size: int,
    dim: int,
    dropout: float,
    scale: float = 1.0,
    dtype=torch.float64,
) -> torch.nn.Module:
    model = sol["BagOfWords"](vocab_size, dim, dropout)
    with torch.no_grad():
        model.embedding.weight.copy_(draws.normal(vocab_size, dim) * scale)
        model.out.weight.copy_(draws.normal(1, dim) * scale)
        model.out.bias.copy_(draws.normal(1) * 0.1)
    return model.to(dtype)


def _bow_arrays(model: torch.nn.Module, prefix: str = "state.") -> dict[str, np.ndarray]:
    return {
        "vocab_size": int_array(model.embedding.num_embeddings),
        "dim": int_array(model.embedding.embedding_dim),
        "dropout": float_array(model.p),
        **{k: v.astype(np.float32) for k, v in state_arrays(model, prefix).items()},
    }


def examples(draws: Draws, n: int, seq: int, vocab_size: int) -> dict[str, np.ndarray]:
    """n padded examples (lengths 2..seq, right padding) with random 0/1 labels."""
    lengths = draws.integers(2, seq + 1, (n,)).tolist()
    mask = padding_mask(len(lengths), seq, lengths)
    return {
        "input_ids": random_ids(draws, vocab_size, mask).numpy(),
        "attention_mask": mask.numpy(),
        "labels": draws.integers(0, 2, (n,)).numpy(),
    }


# ---- 3. the optimisation step ------------------------------------------------------------------


def step_case(
    sol: dict,
    draws: Draws,
    steps: int,
    batch: int,
    seq: int,
    lr: float,
    weight_decay: float,
    warmup_steps: int,
    total_steps: int,
    max_grad_norm: float,
) -> dict:
    vocab_size, dim = 12, 5
    model = bag_of_words(sol, draws, vocab_size, dim, 0.0, scale=2.0, dtype=torch.float64)
    case = {
        "vocab_size": int_array(vocab_size),
        "dim": int_array(dim),
        "dropout": float_array(0.0),
        **state_arrays(model, "state."),
        "lr": float_array(lr),
        "weight_decay": float_array(weight_decay),
        "warmup_steps": int_array(warmup_steps),
        "total_steps": int_array(total_steps),
        "max_grad_norm": float_array(max_grad_norm),
        "steps": int_array(steps),
    }
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    scheduler = get_linear_schedule_with_warmup(optimizer, warmup_steps, total_steps)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    losses, lrs = [], []
    for step in range(steps):
        data = examples(draws, batch, seq, vocab_size)
        case.update({f"{key}_{step}": value for key, value in data.items()})
        # The clipping must bite: the gradient's norm before clipping, for the docstring's claim.
        norm = _grad_norm(sol, model, data)
        assert norm > max_grad_norm, (
            f"step fixture: gradient norm {norm:.3g} <= max_grad_norm {max_grad_norm}"
        )
        losses.append(
            sol["optimisation_step"](
                model,
                {k: torch.tensor(v) for k, v in data.items()},
                optimizer,
                scheduler,
                scaler,
                max_grad_norm,
            )
        )
        lrs.append(scheduler.get_last_lr()[0])
        case.update(state_arrays(model, f"step{step + 1}."))
    return {**case, "losses": np.array(losses), "lrs": np.array(lrs)}


def _grad_norm(sol: dict, model: torch.nn.Module, data: dict) -> float:
    model.zero_grad()
    sol["training_step"](model, {k: torch.tensor(v) for k, v in data.items()}).backward()
    norm = torch.sqrt(sum((p.grad**2).sum() for p in model.parameters())).item()
    model.zero_grad()
    return norm


# ---- 4. evaluation -----------------------------------------------------------------------------


def evaluate_case(
    sol: dict,
    draws: Draws,
    n: int,
    seq: int,
    batch_size: int,
    vocab_size: int = 30,
    dim: int = 6,
    bias: float = 0.0,
) -> dict:
    model = bag_of_words(sol, draws, vocab_size, dim, 0.5, scale=1.5, dtype=torch.float32)
    with torch.no_grad():
        model.out.bias.add_(bias)  # unbalanced predictions
    data = examples(draws, n, seq, vocab_size)
    case = {**_bow_arrays(model), **data, "batch_size": int_array(batch_size)}
    loader = sol["loader_of"](case)
    model.train()
    result = sol["evaluate"](model, loader)
    assert not any(training or grad for training, grad in model.calls)
    return {
        **case,
        "accuracy": float_array(result["accuracy"]),
        "loss": float_array(result["loss"]),
        "confusion": result["confusion"].astype(np.int64),
        "probabilities": result["probabilities"].astype(np.float32),
    }


# ---- 5. the training loop ----------------------------------------------------------------------


def train_case(
    sol: dict,
    draws: Draws,
    n: int,
    seq: int,
    batch_size: int,
    epochs: int,
    lr: float,
    warmup_ratio: float,
    max_steps: int | None,
    eval_every: int | None,
    dropout: float = 0.0,
) -> dict:
    vocab_size, dim = 20, 6
    model = bag_of_words(sol, draws, vocab_size, dim, dropout, scale=1.0, dtype=torch.float64)
    data = examples(draws, n, seq, vocab_size)
    case = {
        **_bow_arrays(model),
        **data,
        "batch_size": int_array(batch_size),
        "epochs": int_array(epochs),
        "peak_lr": float_array(lr),
        "warmup_ratio": float_array(warmup_ratio),
        "max_steps": int_array(max_steps or 0),
        "eval_every": int_array(eval_every or 0),
    }
    model.load_state_dict(sol["state_of"](case, "state."))  # float32 round trip
    history = _train(sol, case, model)
    if (
        dropout
    ):  # the case must tell a loop that trains in eval mode (never model.train(), or not after evaluate)
        assert all(training for training, grad in model.calls if grad), "the reference trained in eval mode"
        without = sol["BagOfWords"](vocab_size, dim, 0.0).to(torch.float64)
        without.load_state_dict(sol["state_of"](case, "state."))
        after = history["val_step"][0]  # steps after the first evaluation run in eval mode in such a loop
        assert after < len(history["train_loss"]), "the dropout case needs an evaluation before the last step"
        gap = np.abs(np.subtract(history["train_loss"], _train(sol, case, without)["train_loss"]))[
            after:
        ].max()
        assert gap > 1e-3, f"dropout changes the losses after step {after} by only {gap:.2g}"
    start = torch.cat([v.reshape(-1) for v in sol["state_of"](case, "state.").values()]).double().numpy()
    end = torch.cat([v.detach().reshape(-1) for v in model.state_dict().values()]).double().numpy()
    return {
        **case,
        **state_arrays(model, "final."),
        "progress": np.stack([start, end]),
        "train_loss": np.array(history["train_loss"]),
        "lr": np.array(history["lr"]),
        "val_step": np.array(history["val_step"], dtype=np.int64),
        "val_accuracy": np.array(history["val_accuracy"]),
    }


def _train(sol: dict, case: dict, model: torch.nn.Module) -> dict:
    """The solution's loop on a case, started in eval mode like the check (as from_pretrained returns a model)."""
    max_steps, eval_every = int(case["max_steps"]) or None, int(case["eval_every"]) or None
    return sol["train"](
        model.eval(),
        sol["loader_of"](case),
        sol["loader_of"](case, 4),
        epochs=int(case["epochs"]),
        lr=float(case["peak_lr"]),
        warmup_ratio=float(case["warmup_ratio"]),
        max_steps=max_steps,
        eval_every=eval_every,
    )


# ---- 6. the analyser ---------------------------------------------------------------------------

PUBLIC_SENTENCES = [
    "What a warm, funny and clever film.",
    "Two hours of my life I will never get back.",
    "The cast is great, the script is not.",
    "Fine.",
]
#: Labelled sentences no student ever sees, for the accuracy of the graded fine-tuning run.
HELDOUT = Path(__file__).resolve().parent.parent / "heldout" / "sentiment.tsv"


def heldout_case() -> dict:
    heldout = data.load_sst2_tsv(HELDOUT)
    return {
        "sentences": text_bytes("\n".join(heldout["sentence"])),
        "labels": np.asarray(heldout["label"], dtype=np.int64),
    }


HIDDEN_SENTENCES = [
    [
        "A slow start, then a wonderful, moving second half.",
        "The battery died after a week and support never answered.",
        "Meh.",
    ],
    [
        "I laughed, I cried, I bought the soundtrack on the way home.",
        "Nothing here that you have not seen done better elsewhere, and the pacing is so uneven that even the "
        "best scenes lose their force long before the last act arrives.",
        "Surprisingly decent.",
        "Cold food, rude staff.",
        "An instant favourite.",
    ],
]


def analyser_case(
    sol: dict,
    tokenizer,
    draws: Draws,
    sentences: list[str],
    threshold: float,
    max_length: int,
    vocab_size: int = 257,
    dim: int = 8,
) -> dict:
    model = bag_of_words(sol, draws, vocab_size, dim, 0.3, scale=1.5, dtype=torch.float32)
    model.train()
    table = sol["Analyser"](model, tokenizer, max_length=max_length, threshold=threshold)(sentences)
    assert not any(training or grad for training, grad in model.calls)
    probabilities = table["probability"].to_numpy(dtype=np.float32)
    assert np.abs(probabilities - threshold).min() > 1e-4, "a probability too close to the threshold"
    return {
        **_bow_arrays(model),
        "sentences": text_bytes("\n".join(sentences)),
        "threshold": float_array(threshold),
        "max_length": int_array(max_length),
        "probabilities": probabilities,
        "positive": (probabilities > threshold).astype(np.int64),
    }


def build() -> dict:
    sol = solution_namespace(ASSIGNMENT)
    sol["device"] = "cpu"  # fixtures are computed on the CPU, whatever the machine has
    torch.manual_seed(0)
    public, hidden = Draws(2024), Draws(4_2024)
    rng_public, rng_hidden = np.random.default_rng(2024), np.random.default_rng(4_2024)
    tokenizer = models.load_tokenizer()

    head_public = head_case(
        sol, public, [7, 4, 7], 7, vocab_size=50, dim=16, n_layers=2, n_heads=2, hidden_dim=32
    )
    head_hidden = [
        head_case(
            sol, hidden, [5, 9, 2, 9, 6], 9, vocab_size=60, dim=24, n_layers=3, n_heads=4, hidden_dim=40
        ),
        head_case(sol, hidden, [3, 3], 3, vocab_size=40, dim=12, n_layers=1, n_heads=3, hidden_dim=20),
    ]
    loss_public = _loss_cases(sol, rng_public, [(6, 2.0)])
    loss_hidden = _loss_cases(sol, rng_hidden, [(5, 1.0), (17, 3.0), (8, 30.0)])
    extreme = np.array([60.0, -60.0, 45.0, -45.0, 0.5, -35.0], dtype=np.float32)
    loss_hidden.append(
        loss_case(sol, extreme, np.array([0, 1, 1, 0, 1, 1]))
    )  # confident and wrong, and right

    step_public = step_case(
        sol,
        public,
        steps=2,
        batch=4,
        seq=5,
        lr=0.05,
        weight_decay=0.01,
        warmup_steps=0,
        total_steps=4,
        max_grad_norm=0.2,
    )
    step_hidden = [
        step_case(
            sol,
            hidden,
            steps=4,
            batch=6,
            seq=7,
            lr=0.02,
            weight_decay=0.1,
            warmup_steps=2,
            total_steps=5,
            max_grad_norm=0.1,
        ),
        step_case(
            sol,
            hidden,
            steps=3,
            batch=3,
            seq=4,
            lr=0.1,
            weight_decay=0.0,
            warmup_steps=1,
            total_steps=3,
            max_grad_norm=0.05,
        ),
    ]
    evaluate_public = evaluate_case(sol, public, n=12, seq=6, batch_size=4)
    evaluate_hidden = [
        evaluate_case(sol, hidden, n=23, seq=8, batch_size=5),
        evaluate_case(sol, hidden, n=9, seq=5, batch_size=9, bias=2.5),
    ]
    train_public = train_case(
        sol,
        public,
        n=12,
        seq=5,
        batch_size=4,
        epochs=2,
        lr=0.05,
        warmup_ratio=0.5,
        max_steps=None,
        eval_every=2,
    )
    train_hidden = [
        train_case(
            sol,
            hidden,
            n=10,
            seq=6,
            batch_size=3,
            epochs=3,
            lr=0.03,
            warmup_ratio=0.25,
            max_steps=None,
            eval_every=5,
        ),
        train_case(
            sol,
            hidden,
            n=16,
            seq=4,
            batch_size=4,
            epochs=3,
            lr=0.1,
            warmup_ratio=0.2,
            max_steps=10,
            eval_every=None,
        ),
    ]
    # With dropout: their own generators, so the cases above (and the analyser's after them) keep their values.
    train_public = [
        train_public,
        train_case(
            sol,
            Draws(2025),
            n=12,
            seq=5,
            batch_size=4,
            epochs=2,
            lr=0.05,
            warmup_ratio=0.5,
            max_steps=None,
            eval_every=2,
            dropout=0.5,
        ),
    ]
    train_hidden.append(
        train_case(
            sol,
            Draws(4_2025),
            n=14,
            seq=6,
            batch_size=4,
            epochs=3,
            lr=0.05,
            warmup_ratio=0.2,
            max_steps=9,
            eval_every=3,
            dropout=0.3,
        )
    )
    analyser_public = analyser_case(sol, tokenizer, public, PUBLIC_SENTENCES, 0.5, 64)
    analyser_hidden = [
        analyser_case(sol, tokenizer, hidden, HIDDEN_SENTENCES[0], 0.35, 64),
        analyser_case(sol, tokenizer, hidden, HIDDEN_SENTENCES[1], 0.6, 8),
    ]
    return {
        ("public", "head"): pack_cases([head_public]),
        ("hidden", "head"): pack_cases(head_hidden),
        ("public", "loss"): pack_cases(loss_public),
        ("hidden", "loss"): pack_cases(loss_hidden),
        ("public", "step"): pack_cases([step_public]),
        ("hidden", "step"): pack_cases(step_hidden),
        ("public", "evaluate"): pack_cases([evaluate_public]),
        ("hidden", "evaluate"): pack_cases(evaluate_hidden),
        ("public", "train"): pack_cases(train_public),
        ("hidden", "train"): pack_cases(train_hidden),
        ("public", "analyser"): pack_cases([analyser_public]),
        ("hidden", "analyser"): pack_cases(analyser_hidden),
        ("hidden", "heldout"): pack_cases([heldout_case()]),
    }
