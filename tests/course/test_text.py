"""Assignment 5's corpus and GPT-2 reference (course/text.py, course/gpt.py)."""

from __future__ import annotations

import pytest
import torch

from course import gpt, text


def test_the_corpus_round_trips_and_splits_ninety_ten():
    train, validation = text.load_corpus()
    assert text.VOCAB_SIZE == 96 and len(train) + len(validation) == len(text.CORPUS.read_text())
    assert len(validation) == pytest.approx(0.1 * (len(train) + len(validation)), abs=1)
    assert text.decode(text.encode("LOVE, n.\n")) == "LOVE, n.\n"
    assert text.decode(train[:40]).strip().startswith("THE DEVIL'S DICTIONARY")
    with pytest.raises(ValueError, match=r"outside the course's vocabulary.*'é'"):
        text.encode("café")


def test_reference_gpt2_is_offline_reproducible_and_leaves_the_seed_alone():
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    first = gpt.reference_model(seed=7, vocab_size=30, n_layers=1)
    assert torch.equal(torch.rand(1), before), "building a reference must not move the caller's generator"
    second = gpt.reference_model(seed=7, vocab_size=30, n_layers=1)
    weights = gpt.course_state_dict(first)
    assert all(torch.equal(weights[k], v) for k, v in gpt.course_state_dict(second).items())
    # GPT-2's Conv1D weights are (in, out): the notebook's nn.Linear layers get them transposed.
    assert weights["blocks.0.qkv.weight"].shape == (3 * 48, 48)
    assert gpt.sizes_of(first) == dict(vocab_size=30, n_positions=64, d_model=48, n_heads=4, n_layers=1)
    assert first.config.eos_token_id is None  # greedy generate() never stops early


def test_the_hub_model_is_refused_offline_with_the_fix(monkeypatch):
    monkeypatch.setenv("COURSE_ONLINE", "0")
    with pytest.raises(RuntimeError, match="COURSE_ONLINE=1"):
        gpt.load_hub_model()
