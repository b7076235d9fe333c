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

- ``training_steps`` (hidden only): the loop on the real model, briefly. The notebook's
  ``SentimentClassifier`` on the pretrained encoder's first two layers (of six) with its word embeddings
  frozen (``models.load_encoder(attn_implementation="sdpa", layers=2)``, in eval mode as
  ``from_pretrained`` returns it: the loop is what is graded, and AdamW's update of the 30,522 x 384
  embedding matrix and the other four layers were three quarters of a step's time), with saved weights
  of ``W_hy``; ``train`` for one epoch of ``steps`` saved batches (each padded to its own longest
  sentence, as the notebook's collator does) with ``eval_every=None``, torch's generator seeded with
  ``seed`` right before (dropout's masks), and the ``unseen`` batch as the validation loader. The
  sentences are the 128 review sentences written for the course that never ship
  (``staff/authoring/heldout/sentiment.tsv``): 64 to train on, 32 others (``unseen_*``) for the logits.
  Outputs: each step's loss, the trained model's logits on the unseen batch (eval mode), and
  ``progress``: ``W_hy`` (weight, then bias, flattened) where training starts and where it ends, a
  prerequisite judged outside the kernel as for ``train``. Every loader has a generator of its own, so
  iterating one draws nothing from torch's global generator: the only draws after the seed are
  dropout's, in the order of the forward passes.

Hidden cases differ from the public ones in every size and setting.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader
from transformers import DistilBertConfig, DistilBertModel, get_linear_schedule_with_warmup

from course import data, env, models
from course.fixtures import pack_cases
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
    # The real encoder's first two layers in float32: 8 steps of this recipe under ATEN_CPU_CAPABILITY=
    # default, avx2 and avx512, with 1 and 2 threads, fused and unfused AdamW, differed by at most 1.2e-7
    # in a loss and 1e-7 in a logit; the smallest mistake measured (no gradient clipping) moves a loss by
    # 7.3e-4 from step 3 and the logits by 1.9e-3.
    "training_steps/train_loss": (1e-5, 0.0),
    "training_steps/logits": (1e-4, 0.0),
}
#: The expected outputs in each fixture (key patterns): a grading kernel never sees them, the judge
#: compares with them (staff/grading/execution/sandbox.py, judge.py). Everything else is an input.
OUTPUTS = {
    "head": ("logits", "probabilities"),
    "loss": ("loss", "grad"),
    "step": ("losses", "lrs", "step[0-9]*"),
    "evaluate": ("probabilities", "confusion", "accuracy", "loss"),
    "train": ("lr", "val_step", "train_loss", "val_accuracy", "final.*", "progress"),
    "analyser": ("probabilities", "positive"),
    "training_steps": ("train_loss", "logits", "progress"),
}
CONFIG_FIELDS = ("vocab_size", "max_position_embeddings", "dim", "n_layers", "n_heads", "hidden_dim")


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


# ---- 7. the real run -------------------------------------------------------------------------

#: Labelled sentences no student ever sees, for the hidden test's run on the real model.
HELDOUT = Path(__file__).resolve().parents[2] / "heldout" / "sentiment.tsv"


def _tokenised(tokenizer, sentences: list[str], labels: np.ndarray) -> dict[str, np.ndarray]:
    """One batch, padded on the right to its longest sentence (the notebook's collator does the same)."""
    encoded = tokenizer(
        sentences,
        padding=True,
        truncation=True,
        max_length=64,
        return_token_type_ids=False,
        return_tensors="np",
    )
    return {
        "input_ids": encoded["input_ids"].astype(np.int64),
        "attention_mask": encoded["attention_mask"].astype(np.int64),
        "labels": labels.astype(np.int64),
    }


def _one_per_step(batches: list[dict]) -> DataLoader:
    """A loader of saved batches, one per item, with its own generator (so iterating it draws nothing
    from torch's global generator, which the seed leaves to dropout): as the notebook's test builds it."""
    return DataLoader(
        [{key: torch.tensor(value) for key, value in batch.items()} for batch in batches],
        batch_size=None,
        generator=torch.Generator(),
    )


def run_case(
    sol: dict,
    tokenizer,
    draws: Draws,
    steps: int,
    batch_size: int,
    unseen: int,
    lr: float,
    warmup_ratio: float,
    seed: int,
) -> dict:
    heldout = data.load_sst2_tsv(HELDOUT)
    sentences, labels = list(heldout["sentence"]), np.asarray(heldout["label"])
    order = draws.rng.permutation(len(sentences))
    batches = [
        _tokenised(tokenizer, [sentences[i] for i in rows], labels[rows])
        for rows in order[: steps * batch_size].reshape(steps, batch_size)
    ]
    rows = order[steps * batch_size : steps * batch_size + unseen]
    held = _tokenised(tokenizer, [sentences[i] for i in rows], labels[rows])
    encoder = models.load_encoder(attn_implementation="sdpa", layers=2)  # as the notebook's test builds it
    encoder.embeddings.word_embeddings.requires_grad_(False)
    model = sol["SentimentClassifier"](encoder)
    with torch.no_grad():
        model.W_hy.weight.copy_(draws.normal(1, encoder.config.dim) * 0.05)
        model.W_hy.bias.copy_(draws.normal(1) * 0.1)
    case = {
        "W_hy.weight": model.W_hy.weight.detach().numpy().copy(),
        "W_hy.bias": model.W_hy.bias.detach().numpy().copy(),
        "steps": int_array(steps),
        **{f"{key}_{step}": value for step, batch in enumerate(batches) for key, value in batch.items()},
        **{f"unseen_{key}": value for key, value in held.items()},
        "peak_lr": float_array(lr),
        "warmup_ratio": float_array(warmup_ratio),
        "seed": int_array(seed),
    }
    start = torch.cat([model.W_hy.weight.detach().reshape(-1), model.W_hy.bias.detach()]).double()
    model.eval()  # as from_pretrained returns a model, and as the test hands it over
    env.seed_everything(seed)
    history = sol["train"](
        model,
        _one_per_step(batches),
        _one_per_step([held]),
        epochs=1,
        lr=lr,
        warmup_ratio=warmup_ratio,
        eval_every=None,
    )
    assert len(history["train_loss"]) == steps and history["val_step"] == [steps], history["val_step"]
    model.eval()
    with torch.no_grad():
        logits = model(torch.tensor(held["input_ids"]), torch.tensor(held["attention_mask"]))
    end = torch.cat([model.W_hy.weight.detach().reshape(-1), model.W_hy.bias.detach()]).double()
    return {
        **case,
        "train_loss": np.array(history["train_loss"]),
        "logits": logits.numpy().astype(np.float32),
        "progress": np.stack([start.numpy(), end.numpy()]),
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
    # Last, with a generator of its own: the cases above keep their values.
    run_hidden = run_case(
        sol, tokenizer, Draws(4_2026), steps=8, batch_size=8, unseen=32, lr=1e-4, warmup_ratio=0.25, seed=4
    )
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
        ("hidden", "training_steps"): pack_cases([run_hidden]),
    }
