"""Assignment 6's reference solution (run from the source notebook): the encoder-decoder of exercise
3 learns to reverse digits well above the thresholds its visible check and the notebook's text state,
while an untrained one is far below them; and its hidden test, which grades a few training steps
against the solution's, passes the solution to rounding and fails a model that computes the right
values but whose gradients miss its decoder's parameters."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from staff.authoring import assignments
from staff.authoring.reference import solution_namespace
from staff.authoring.tensors import train_steps
from support import source_cell

training = assignments.recipe("06_training_decoders")


@pytest.fixture(scope="module")
def sol():
    return solution_namespace(training.ASSIGNMENT)


def _cell(grade_id: str) -> str:
    return source_cell(training.ASSIGNMENT, grade_id)


def _shares(sol, model):
    """What the visible check counts (the notebook's own claim): greedy tokens right and the best
    decoder layer's alignment on 64 new sequences padded to 12, wider than any training batch."""
    source, padding, target = sol["reversal_batch"](64, torch.Generator().manual_seed(11), width=12)
    decoded, cross = sol["greedy_decode"](model, source, padding, target.shape[1] - 1)
    digits = padding.sum(1, keepdim=True)
    where = torch.arange(decoded.shape[1])[None]
    tokens = (decoded == target[:, 1:])[where <= digits].float().mean().item()
    copies = digits - 1 - where
    aligned = max(
        (layer.mean(1).argmax(-1) == copies)[where < digits].float().mean().item() for layer in cross
    )
    return tokens, aligned


@pytest.mark.parametrize("seed", [0, 3])
def test_reversal_solution_learns_far_above_the_thresholds_and_an_untrained_model_fails(sol, seed):
    """Not one lucky training seed: the given settings with other seeds (model, batches) as well."""
    namespace = {**sol, "device": "cpu"}
    seeded = _cell("train_seq2seq").replace("seed_everything(0)", f"seed_everything({seed})")
    exec(
        seeded.replace(
            "batches = torch.Generator().manual_seed(0)", f"batches = torch.Generator().manual_seed({seed})"
        ),
        namespace,
    )
    tokens, aligned = _shares(sol, namespace["seq2seq"])
    assert tokens >= 0.99 and aligned >= 0.94, (tokens, aligned)  # the visible check needs 0.95 and 0.90
    torch.manual_seed(0)
    tokens, aligned = _shares(sol, sol["Seq2Seq"](sol["SEQ2SEQ_VOCAB"]))
    assert tokens < 0.3 and aligned < 0.5, (tokens, aligned)


def _hidden(name: str) -> dict:
    from safetensors.numpy import load_file

    from course.settings import ROOT

    case = load_file(str(ROOT / "fixtures" / "hidden" / training.ASSIGNMENT / f"{name}.safetensors"))
    return {key.partition(".")[2]: value for key, value in case.items()}


def _s2s_steps(sol, case, seq2seq_class):
    model = seq2seq_class(sol["SEQ2SEQ_VOCAB"], *(int(case[k]) for k in ("d_model", "n_heads", "n_layers")))
    model.load_state_dict({k[2:]: torch.tensor(v) for k, v in case.items() if k.startswith("w.")})
    pad = sol["PAD"]

    def loss_of(m, batch):
        source, target = batch
        answer_in = target[:, :-1]
        logits, _ = m(source, (source != pad).long(), answer_in, (answer_in != pad).long())
        return F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), target[:, 1:].reshape(-1), ignore_index=pad
        )

    batches = list(zip(torch.tensor(case["train_source"]), torch.tensor(case["train_target"])))
    losses, trained = train_steps(
        model, batches, loss_of, float(case["learning_rate"]), int(case["warmup_steps"]), 0.01
    )
    source, answer_in = torch.tensor(case["source"]), torch.tensor(case["target"])[:, :-1]
    with torch.no_grad():
        logits, cross = trained(source, (source != pad).long(), answer_in, (answer_in != pad).long())
    return losses.numpy(), logits.numpy(), torch.stack(list(cross)).numpy()


def _worst(got, expected, name):
    """The largest error as a share of the recipe's tolerance for ``name`` (1: the whole tolerance)."""
    atol, rtol = training.TOLERANCES[name][:2]
    return float((np.abs(got - expected) / (atol + rtol * np.abs(expected))).max())


def test_the_seq2seq_training_test_fails_decoder_weights_read_from_the_state_dict(sol):
    """``state_dict()`` gives detached tensors: the decoder layers compute right and never train."""
    case = _hidden("reversal")
    losses, logits, cross = _s2s_steps(sol, case, sol["Seq2Seq"])
    assert _worst(losses, case["losses"], "reversal/losses") < 1e-6
    assert _worst(logits, case["logits"], "reversal/logits") < 1e-6
    assert _worst(cross, case["cross"], "reversal/cross") < 1e-6
    detached = dict(sol)
    source = _cell("seq2seq").replace("dict(layer.named_parameters())", "layer.state_dict()")
    assert source != _cell("seq2seq")
    exec(source, detached)
    losses, logits, cross = _s2s_steps(detached, case, detached["Seq2Seq"])
    assert (
        min(
            _worst(losses, case["losses"], "reversal/losses"),
            _worst(logits, case["logits"], "reversal/logits"),
            _worst(cross, case["cross"], "reversal/cross"),
        )
        > 3
    )
