"""Assignment 5's reference solution (run from the source notebook): the generation check names the
part that is wrong when sampling with and without the KV cache disagree (a mask bug spoils the run
without the cache, which used to read as a cache bug); and the hidden test of the GPT's training,
which grades a few training steps against the solution's, passes the solution to rounding and fails
a model that computes the right values but whose gradients miss a parameter, which its visible check
names too."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course import gpt
from course.parts import substituted
from staff.authoring import assignments
from staff.authoring.reference import solution_namespace
from staff.authoring.tensors import train_steps
from support import source_cell

decoder = assignments.recipe("05_decoder")


@pytest.fixture(scope="module")
def sol():
    return solution_namespace(decoder.ASSIGNMENT)


def _cell(grade_id: str) -> str:
    return source_cell(decoder.ASSIGNMENT, grade_id)


def off_by_one_mask(attention_mask, query_length, past_length=0):
    """The mistake of samples/05_decoder/mask_off_by_one.py: every token also sees the next one."""
    total = past_length + query_length
    causal = torch.ones(query_length, total, dtype=torch.bool).tril(past_length + 1)
    return causal[None, None] & attention_mask.bool()[:, None, None, :]


def test_generation_check_blames_the_mask_not_the_cache(sol):
    with substituted(sol, decoder_mask=off_by_one_mask), pytest.raises(AssertionError) as failure:
        exec(_cell("test_generate_visible"), sol)  # the solution's GPT finds decoder_mask in these globals
    message = str(failure.value)
    assert message.startswith("sampled tokens with the cache vs without (same seed):")
    assert "without the cache (the whole text in one call) the max abs error is" in message
    assert "Your model is wrong on the whole text at once, where no cache is involved" in message
    assert "the causal mask: decoder_mask, attend; exercise 1" in message


def test_generation_check_blames_the_cache_when_only_the_cached_path_is_wrong(sol):
    reference = gpt.reference_model(seed=0)
    model = sol["GPT"](**gpt.sizes_of(reference)).eval()
    model.load_state_dict(gpt.course_state_dict(reference))

    class StaleCache(torch.nn.Module):
        """Positions restart at 0 after the prompt: right without a cache, wrong with one."""

        def __init__(self):
            super().__init__()
            self.n_positions = model.n_positions

        def forward(self, ids, attention_mask=None, past=None):
            if past is None:
                return model(ids, attention_mask)
            saved = model.wpe.weight.data.clone()
            model.wpe.weight.data[past[0][0].shape[2]] = saved[0]  # the new token gets position 0's embedding
            try:
                return model(ids, attention_mask, past=past)
            finally:
                model.wpe.weight.data.copy_(saved)

    prompt = torch.randint(0, reference.config.vocab_size, (2, 5), generator=torch.Generator().manual_seed(2))
    setting = dict(temperature=0.8, top_k=20)
    cached = sol["generate"](StaleCache(), prompt, 25, generator=torch.Generator().manual_seed(0), **setting)
    recomputed = sol["generate"](
        model, prompt, 25, generator=torch.Generator().manual_seed(0), use_cache=False, **setting
    )
    assert not torch.equal(cached, recomputed)
    message = gpt.explain_cache_mismatch(StaleCache(), reference, cached, recomputed, prompt.shape[1])
    assert "Only the cached path is wrong" in message, message


def _hidden(name: str) -> dict:
    from safetensors.numpy import load_file

    from course.settings import ROOT

    case = load_file(str(ROOT / "fixtures" / "hidden" / decoder.ASSIGNMENT / f"{name}.safetensors"))
    return {key.partition(".")[2]: value for key, value in case.items()}


def test_the_held_out_windows_scored_are_in_no_training_batch():
    """The LM is trained on windows of the held-out text (which never ships) and scored on the
    windows that end it, which no batch reaches; the scores are the recipe's OUTPUTS."""
    from course import text

    case = _hidden("heldout")
    ids = text.encode(decoder.HELDOUT.read_text(encoding="ascii")).numpy()
    windows, batches = case["windows"], case["batches"]
    assert (windows.reshape(-1) == ids[-windows.size :]).all()
    first_scored, length = len(ids) - windows.size, batches.shape[-1]
    every = np.lib.stride_tricks.sliding_window_view(ids, length)
    for window in batches.reshape(-1, length):
        starts = np.flatnonzero((every == window).all(axis=1))
        assert len(starts) and starts.min() + length <= first_scored
    assert {"losses", "log_probs", "logits"} == set(decoder.OUTPUTS["heldout"])


def _lm_steps(sol, case, gpt_class):
    model = gpt_class(*(int(case[k]) for k in decoder.GPT_SIZES))
    model.load_state_dict({k[2:]: torch.tensor(v) for k, v in case.items() if k.startswith("w.")})
    losses, trained = train_steps(
        model,
        torch.tensor(case["batches"]),
        lambda m, batch: decoder.next_token_loss(m(batch)[0], batch),
        float(case["learning_rate"]),
        int(case["warmup_steps"]),
        float(case["weight_decay"]),
    )
    with torch.no_grad():
        return losses.numpy(), trained(torch.tensor(case["windows"]))[0].log_softmax(-1).numpy()


def _worst(got, expected, name):
    """The largest error as a share of the recipe's tolerance for ``name`` (1: the whole tolerance)."""
    atol, rtol = decoder.TOLERANCES[name][:2]
    return float((np.abs(got - expected) / (atol + rtol * np.abs(expected))).max())


def test_the_training_tests_pass_the_solution_to_rounding_and_fail_a_detached_tied_head(sol):
    """samples/05_decoder/tied_head_detached.py: the right logits, a head that never trains ``wte``."""
    case = _hidden("heldout")
    losses, log_probs = _lm_steps(sol, case, sol["GPT"])
    assert _worst(losses, case["losses"], "heldout/losses") < 1e-6
    assert _worst(log_probs, case["log_probs"], "heldout/log_probs") < 1e-6

    detached = dict(sol)
    source = _cell("gpt_model").replace("@ self.wte.weight.T", "@ self.wte.weight.data.T")
    assert source != _cell("gpt_model")
    exec(source, detached)
    losses, log_probs = _lm_steps(detached, case, detached["GPT"])
    assert _worst(losses, case["losses"], "heldout/losses") > 3
    assert _worst(log_probs, case["log_probs"], "heldout/log_probs") > 3


def test_the_visible_training_check_names_the_detached_head(sol):
    """The same mistake in the visible check: every parameter gets a gradient, and wte's is not GPT-2's."""
    detached = dict(sol)
    exec(_cell("gpt_model").replace("@ self.wte.weight.T", "@ self.wte.weight.data.T"), detached)
    with pytest.raises(AssertionError, match=r"gradient of wte.weight \(vs GPT2LMHeadModel\)"):
        exec(_cell("test_gpt_training_visible"), detached)
    exec(_cell("test_gpt_training_visible"), dict(sol))
