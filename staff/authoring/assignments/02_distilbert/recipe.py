"""Fixtures for 02_distilbert: the offline classifier head, small random modules, predictions, fused attention.

Public (shipped to students):

- ``classifier_head``: the sentiment head (``pre_classifier`` + ``classifier``) that
  :func:`course.models.load_classifier` puts on the offline encoder. It is **fitted, not random**:
  trained on the frozen encoder's ``[CLS]`` vectors of ``data/sentiment/train.tsv`` (512 sentences;
  AdamW, lr 3e-4, weight decay 0.01, 60 full-batch steps in float64 from seed 0; a few seconds on a
  CPU, most of it the encoder's forward pass). Measured: 71.1 % (91/128) accuracy on
  ``validation.tsv`` and 87.9 % on the training sentences, through the float32 model. Modest on purpose:
  all-MiniLM-L6-v2 was trained for mean-pooled sentence embeddings, not a ``[CLS]`` classifier, and
  its encoder stays frozen (assignment 4 fine-tunes it). :data:`HEAD_VALIDATION_ACCURACY` is
  asserted here and in ``tests/assignments/test_02_distilbert.py``. Fitting amplifies float
  rounding (Adam's steps on near-zero gradients), so the head is *trained*, not computed
  (:data:`TRAINED`): ``make fixtures-check`` refits it and checks its accuracy, and derives every
  other fixture from the committed head.
- ``embeddings``, ``block`` (case 0 without padding, case 1 padded), ``model``: small random
  configurations with their weights (``state.<name>`` keys, the notebook's layout), inputs and
  the reference solution's outputs; ``sdpa``: random ``q``, ``k``, ``v`` and a padding mask, and
  the context of exercise 5 (PyTorch's fused attention).

Hidden (autograder only): the same modules on other sizes (dim, heads, layers, labels, batch,
sequence length) and padding patterns (right, left, holes), so code that hard-codes a view such
as ``view(1, -1, 12, 64)`` or ignores the padding mask fails them; the pretrained model's
predictions for unseen sentences. Every expected value comes from the notebook's own solution
(:func:`staff.authoring.reference.solution_namespace`), run in float32 on the CPU. Each exercise is
graded on its own: the hidden tests of exercises 3 and 4 run the student's new code with reference
parts in place of the student's earlier ones (PyTorch's multi-head attention, transformers'
embeddings and model), so the expected outputs of those cases are the same with either.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import load_file, save_file
from transformers import DistilBertConfig

from course import data, models
from course.fixtures import pack_cases
from staff.authoring.reference import solution_namespace
from staff.authoring.tensors import Draws, padding_mask, random_ids, randomize, state_arrays, text_bytes

ASSIGNMENT = "02_distilbert"
#: The tolerances (atol, rtol) the notebook's tests compare these fixtures with (staff.authoring.fixtures).
#: The model's hidden states pass through six float32 layers: PyTorch's portable and AVX2 kernels
#: leave them up to 1.31e-6 apart (13 % of the grading tolerance, measured on one machine), so a
#: rebuild on another CPU may move them by a fifth of it, still 5x inside what grades a student.
TOLERANCES = {
    "*": (1e-5, 1e-5),
    "model/logits": (1e-5, 0.0),
    "model/hidden_states": (1e-5, 1e-5, 0.2),
    "predictions": (1e-4, 0.0),
}
#: Fixtures that are trained rather than computed (see the module docstring); :func:`train` makes them.
TRAINED = ("classifier_head",)
#: The expected outputs in each fixture (key patterns): a grading kernel never sees them, the judge
#: compares with them (staff/grading/execution/sandbox.py, judge.py). Everything else is an input.
OUTPUTS = {
    "embeddings": ("expected",),
    "block": ("output", "weights"),
    "block_padded": ("output", "weights"),
    "model": ("logits", "hidden_states", "attentions"),
    "predictions": ("probs", "label"),
    "sdpa": ("context",),
}

#: Validation accuracy of the fitted head (offline model, float32), quoted in the notebook.
HEAD_VALIDATION_ACCURACY = 91 / 128
HEAD_STEPS, HEAD_LR, HEAD_WEIGHT_DECAY, HEAD_SEED = 60, 3e-4, 0.01, 0

#: The sizes stored with every small case (the notebook's ``config_from`` reads the same fields).
CONFIG_FIELDS = (
    "vocab_size",
    "max_position_embeddings",
    "dim",
    "n_layers",
    "n_heads",
    "hidden_dim",
    "num_labels",
)


PREDICTION_SENTENCES = [
    "Terrible acting and a script that makes no sense.",
    "A delightful surprise from start to finish.",
    "It was fine, I guess, but I would not watch it again.",
]


def read_sentiment(split: str) -> tuple[list[str], torch.Tensor]:
    """The course's offline sentiment data (``data/sentiment/<split>.tsv``): sentences and 0/1 labels."""
    dataset = data.load_sentiment(data.SENTIMENT_DIR)[split]
    return list(dataset["sentence"]), torch.tensor(dataset["label"])


def _batches(tokenizer, sentences: list[str], size: int = 64):
    """Padded batches of sentences sorted by length (less padding), with the original indices."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    for start in range(0, len(order), size):
        chunk = order[start : start + size]
        yield chunk, tokenizer([sentences[i] for i in chunk], padding=True, return_tensors="pt")


@torch.no_grad()
def cls_features(encoder, tokenizer, sentences: list[str]) -> torch.Tensor:
    """The last layer's ``[CLS]`` vector of each sentence, (n, dim), in the sentences' order."""
    out = torch.empty(len(sentences), encoder.config.dim)
    for chunk, batch in _batches(tokenizer, sentences):
        out[chunk] = encoder(**batch).last_hidden_state[:, 0].float()
    return out


@torch.no_grad()
def accuracy(classifier, tokenizer, sentences: list[str], labels: torch.Tensor) -> float:
    """Accuracy of a DistilBertForSequenceClassification on sentences (eval mode, float32)."""
    predicted = torch.empty(len(sentences), dtype=torch.long)
    for chunk, batch in _batches(tokenizer, sentences):
        predicted[chunk] = classifier(**batch).logits.argmax(dim=-1)
    return (predicted == labels).double().mean().item()


def fit_head(classifier, tokenizer) -> torch.Tensor:
    """Fit ``classifier``'s head in place on the frozen encoder's [CLS] vectors of train.tsv, and
    return those vectors (float32, the sentences' order).

    Deterministic: the features are computed once, then a float64 copy of the head is trained
    full-batch (no shuffling) from a fixed seed and cast back to float32.
    """
    sentences, labels = read_sentiment("train")
    cls = cls_features(classifier.distilbert, tokenizer, sentences)
    features = cls.double()
    dim, n_labels = classifier.config.dim, classifier.config.num_labels
    torch.manual_seed(HEAD_SEED)
    pre, out = torch.nn.Linear(dim, dim).double(), torch.nn.Linear(dim, n_labels).double()
    optimizer = torch.optim.AdamW(
        [*pre.parameters(), *out.parameters()], lr=HEAD_LR, weight_decay=HEAD_WEIGHT_DECAY
    )
    for _ in range(HEAD_STEPS):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(out(torch.relu(pre(features))), labels)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        for target, source in ((classifier.pre_classifier, pre), (classifier.classifier, out)):
            target.weight.copy_(source.weight.float())
            target.bias.copy_(source.bias.float())
    return cls


@torch.no_grad()
def head_accuracy(classifier, cls: torch.Tensor, labels: torch.Tensor) -> float:
    """:func:`accuracy` from the [CLS] vectors :func:`cls_features` computed: the classifier's own
    head on them (eval mode: dropout is the identity), the same logits without the encoder again."""
    logits = classifier.classifier(torch.relu(classifier.pre_classifier(cls)))
    return (logits.argmax(dim=-1) == labels).double().mean().item()


def build_head() -> dict[str, np.ndarray]:
    """The fitted head as arrays (the format of :func:`course.models.save_classifier_head`)."""
    torch.manual_seed(HEAD_SEED)
    classifier, tokenizer = models.load_classifier(), models.load_tokenizer()
    cls = fit_head(classifier, tokenizer)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "classifier_head.safetensors"
        models.save_classifier_head(classifier, path)
        loaded = models.load_classifier(path)  # the model students get, exactly
        head = load_file(str(path))
    validation = accuracy(loaded, tokenizer, *read_sentiment("validation"))
    # the encoder's pass over train.tsv is fit_head's: the loaded head on the same vectors
    train = head_accuracy(loaded, cls, read_sentiment("train")[1])
    print(f"fixtures: classifier head: validation accuracy {validation:.4f}, train accuracy {train:.4f}")
    if validation < HEAD_VALIDATION_ACCURACY:
        raise RuntimeError(
            f"the fitted head reaches {validation:.4f} validation accuracy, below the "
            f"{HEAD_VALIDATION_ACCURACY:.4f} quoted in the notebook and the tests"
        )
    return head


# ---- exercise 4's renaming, the instructor's copy -----------------------------------------------

# transformers' per-layer nesting -> the notebook's flat layer (one AttentionBlock holds all its parts).
_FLAT_LAYER = re.compile(r"^transformer\.layer\.(\d+)\.(?:attention\.|ffn\.)?")


def course_layout(model) -> dict[str, torch.Tensor]:
    """A ``DistilBertForSequenceClassification``'s weights (copies) under the notebook's names:
    ``distilbert.transformer.layer.{i}.attention.q_lin.weight`` -> ``layers.{i}.q_lin.weight``,
    ``...ffn.lin1...`` -> ``layers.{i}.lin1...``, the embeddings and the head unchanged but for the
    ``distilbert.`` prefix. This is exercise 4's answer, written apart from the solution's
    ``course_name`` so the tests can check one against the other; it stays on the instructor's side
    (``course/`` ships to students from the day assignment 2 opens, and the hidden test writes its own)."""
    return {
        _FLAT_LAYER.sub(r"layers.\1.", key.removeprefix("distilbert."), count=1): value.detach().clone()
        for key, value in model.state_dict().items()
    }


# ---- small random modules -------------------------------------------------------------------


def _config(**sizes: int) -> DistilBertConfig:
    return DistilBertConfig(**sizes)


def _config_arrays(config: DistilBertConfig) -> dict[str, np.ndarray]:
    return {field: np.array(getattr(config, field), dtype=np.int64) for field in CONFIG_FIELDS}


@torch.no_grad()
def embeddings_case(sol: dict, draws: Draws, batch: int, seq: int, **sizes: int) -> dict:
    config = _config(**sizes)
    module = randomize(sol["Embeddings"](config), draws)
    input_ids = draws.integers(0, config.vocab_size, (batch, seq))
    return {
        **_config_arrays(config),
        **state_arrays(module),
        "input_ids": input_ids.numpy(),
        "expected": module(input_ids).numpy(),
    }


@torch.no_grad()
def block_case(
    sol: dict, draws: Draws, batch: int, seq: int, padding=None, shared: tuple | None = None, **sizes: int
) -> dict:
    """A random layer (or ``shared``: a (config, layer) pair used by several cases) on random inputs."""
    config, module = shared or (_config(**sizes), None)
    module = module or randomize(sol["AttentionBlock"](config), draws)
    x = draws.normal(batch, seq, config.dim)
    mask = padding_mask(batch, seq, padding)
    output, weights = module(x, mask)
    return {
        **_config_arrays(config),
        **state_arrays(module),
        "x": x.numpy(),
        "attention_mask": mask.numpy(),
        "output": output.numpy(),
        "weights": weights.numpy(),
    }


def _outputs(logits, hidden_states, attentions) -> dict[str, np.ndarray]:
    return {
        "logits": logits.numpy(),
        "hidden_states": torch.stack(hidden_states).numpy(),
        "attentions": torch.stack(attentions).numpy(),
    }


@torch.no_grad()
def model_case(
    sol: dict, draws: Draws, batch: int, seq: int, padding=None, pass_mask: bool = True, **sizes: int
) -> dict:
    config = _config(**sizes)
    module = randomize(sol["DistilBertClassifier"](config), draws)
    mask = padding_mask(batch, seq, padding)
    input_ids = random_ids(draws, config.vocab_size, mask, config.pad_token_id)
    outputs = module(input_ids, mask) if pass_mask else module(input_ids)
    return {
        **_config_arrays(config),
        **state_arrays(module),
        "input_ids": input_ids.numpy(),
        "attention_mask": mask.numpy(),
        "pass_mask": np.array(int(pass_mask)),
        **_outputs(*outputs),
    }


@torch.no_grad()
def sdpa_case(
    sol: dict, draws: Draws, batch: int, n_heads: int, seq: int, head_dim: int, padding=None
) -> dict:
    q, k, v = (draws.normal(batch, n_heads, seq, head_dim) for _ in range(3))
    mask = padding_mask(batch, seq, padding)
    return {
        "q": q.numpy(),
        "k": k.numpy(),
        "v": v.numpy(),
        "attention_mask": mask.numpy(),
        "context": sol["sdpa_attention"](q, k, v, mask).numpy(),
    }


# ---- the pretrained model -------------------------------------------------------------------


@torch.no_grad()
def pretrained_fixtures(sol: dict, head: dict[str, np.ndarray]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "classifier_head.safetensors"
        save_file(head, str(path))
        hf_model = models.load_classifier(path)
    tokenizer = models.load_tokenizer()
    model = sol["load_pretrained"](hf_model)
    predictions = []
    for sentence in PREDICTION_SENTENCES:
        probs, label = sol["predict"](model, tokenizer, sentence)
        predictions.append(
            {
                "sentence": text_bytes(sentence),
                "probs": probs.cpu().numpy(),
                "label": np.array(int(probs.argmax())),
            }
        )
    return {("hidden", "predictions"): pack_cases(predictions)}


def train() -> dict:
    """The trained fixtures alone (:data:`TRAINED`)."""
    return {("public", "classifier_head"): build_head()}


def build(trained: dict | None = None) -> dict:
    """Every fixture; ``trained`` (as :func:`train` returns it) is used instead of training anew."""
    sol = solution_namespace(ASSIGNMENT)
    assert tuple(sol["CONFIG_FIELDS"]) == CONFIG_FIELDS, "the notebook's config_from reads other fields"
    head = (trained or train())[("public", "classifier_head")]
    public, hidden = Draws(2024), Draws(6_1989)
    small = dict(dim=16, n_heads=4, hidden_dim=24)

    config = _config(**small)
    shared = (config, randomize(sol["AttentionBlock"](config), public))
    public_block = [
        block_case(sol, public, 2, 5, shared=shared),
        block_case(sol, public, 3, 6, padding=[6, 4, 2], shared=shared),
    ]

    return {
        ("public", "classifier_head"): head,
        ("public", "embeddings"): pack_cases(
            [embeddings_case(sol, public, 2, 7, vocab_size=50, dim=16, max_position_embeddings=24)]
        ),
        ("public", "block"): pack_cases(public_block),
        ("public", "model"): pack_cases(
            [
                model_case(
                    sol,
                    public,
                    2,
                    6,
                    vocab_size=50,
                    max_position_embeddings=24,
                    n_layers=2,
                    num_labels=3,
                    **small,
                )
            ]
        ),
        ("hidden", "embeddings"): pack_cases(
            [
                embeddings_case(sol, hidden, 1, 12, vocab_size=31, dim=8, max_position_embeddings=12),
                embeddings_case(sol, hidden, 5, 9, vocab_size=100, dim=40, max_position_embeddings=64),
                embeddings_case(sol, hidden, 3, 1, vocab_size=20, dim=6, max_position_embeddings=10),
            ]
        ),
        ("hidden", "block"): pack_cases(
            [
                block_case(sol, hidden, 1, 9, dim=24, n_heads=3, hidden_dim=40),
                block_case(sol, hidden, 4, 3, dim=12, n_heads=6, hidden_dim=16),
                block_case(sol, hidden, 2, 11, dim=32, n_heads=1, hidden_dim=8),
                block_case(sol, hidden, 3, 1, dim=20, n_heads=2, hidden_dim=36),
            ]
        ),
        ("hidden", "block_padded"): pack_cases(
            [
                block_case(sol, hidden, 4, 7, padding=[7, 5, 1, 3], dim=24, n_heads=3, hidden_dim=40),
                block_case(
                    sol,
                    hidden,
                    3,
                    6,
                    padding=[[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1]],
                    dim=12,
                    n_heads=6,
                    hidden_dim=16,
                ),
                block_case(
                    sol,
                    hidden,
                    2,
                    8,
                    padding=[[1, 1, 0, 1, 0, 1, 1, 0], [1, 0, 0, 0, 0, 0, 0, 1]],
                    dim=10,
                    n_heads=5,
                    hidden_dim=12,
                ),
            ]
        ),
        ("hidden", "model"): pack_cases(
            [
                model_case(
                    sol,
                    hidden,
                    3,
                    8,
                    padding=[8, 2, 5],
                    vocab_size=40,
                    dim=12,
                    n_layers=1,
                    n_heads=3,
                    hidden_dim=20,
                    max_position_embeddings=16,
                    num_labels=2,
                ),
                model_case(
                    sol,
                    hidden,
                    4,
                    10,
                    padding=[10, 3, 7, 1],
                    vocab_size=60,
                    dim=24,
                    n_layers=3,
                    n_heads=2,
                    hidden_dim=32,
                    max_position_embeddings=20,
                    num_labels=5,
                ),
                model_case(
                    sol,
                    hidden,
                    2,
                    5,
                    pass_mask=False,
                    vocab_size=30,
                    dim=8,
                    n_layers=2,
                    n_heads=4,
                    hidden_dim=16,
                    max_position_embeddings=12,
                    num_labels=3,
                ),
            ]
        ),
        **pretrained_fixtures(sol, head),
        # Last, so the generators give every fixture above the values it had before exercise 5 existed.
        ("public", "sdpa"): pack_cases([sdpa_case(sol, public, 3, 2, 5, 4, padding=[5, 3, 1])]),
        ("hidden", "sdpa"): pack_cases(
            [
                sdpa_case(sol, hidden, 4, 3, 7, 8, padding=[7, 5, 1, 3]),
                sdpa_case(
                    sol,
                    hidden,
                    3,
                    6,
                    6,
                    2,
                    padding=[[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1]],
                ),
                sdpa_case(
                    sol, hidden, 2, 1, 8, 16, padding=[[1, 1, 0, 1, 0, 1, 1, 0], [1, 0, 0, 0, 0, 0, 0, 1]]
                ),
                sdpa_case(sol, hidden, 1, 4, 3, 5),
            ]
        ),
    }
