"""GPT-2 from ``transformers``: the reference that assignment 5's decoder is checked against.

The checks need a model the student did not write that computes the same function: GPT-2
(``GPT2LMHeadModel``) on a small configuration with random weights, built here offline (no
download), and its weights renamed into the parameter names of the notebook's own ``GPT`` class
(:func:`course_state_dict`). GPT-2 stores its linear layers as ``Conv1D`` with the weight
transposed relative to ``nn.Linear`` (``(in, out)``), so those are transposed on the way.

Online (``COURSE_ONLINE=1``, Colab) :func:`load_hub_model` fetches real pretrained weights
(``distilgpt2``), which load into the same class.
"""
from __future__ import annotations

import torch
from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerBase

from course.env import is_online

HUB_MODEL = "distilgpt2"
#: (the notebook's name, GPT-2's name, whether GPT-2 stores it as a transposed Conv1D) per block.
_BLOCK = (("ln_1", "ln_1", False), ("qkv", "attn.c_attn", True), ("proj", "attn.c_proj", True),
          ("ln_2", "ln_2", False), ("fc", "mlp.c_fc", True), ("fc_out", "mlp.c_proj", True))


def small_config(vocab_size: int = 97, n_positions: int = 64, d_model: int = 48, n_heads: int = 4,
                 n_layers: int = 2) -> GPT2Config:
    """A GPT-2 configuration of the given sizes: no dropout, eager attention, no end-of-text token
    (so ``generate()`` never stops early: greedy decoding runs for exactly the tokens asked)."""
    return GPT2Config(vocab_size=vocab_size, n_positions=n_positions, n_embd=d_model, n_head=n_heads,
                      n_layer=n_layers, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                      bos_token_id=None, eos_token_id=None, attn_implementation="eager")


def reference_model(seed: int = 0, **sizes: int) -> GPT2LMHeadModel:
    """``GPT2LMHeadModel`` of :func:`small_config` (``sizes``) with GPT-2's random initialisation
    from ``seed``, in eval mode."""
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        return GPT2LMHeadModel(small_config(**sizes)).eval()
    finally:
        torch.random.set_rng_state(generator_state)  # building a reference leaves the caller's seed alone


def sizes_of(model: GPT2LMHeadModel) -> dict[str, int]:
    """The notebook's ``GPT(...)`` arguments for a GPT-2 model."""
    c = model.config
    return dict(vocab_size=c.vocab_size, n_positions=c.n_positions, d_model=c.n_embd, n_heads=c.n_head,
                n_layers=c.n_layer)


def course_state_dict(model: GPT2LMHeadModel) -> dict[str, torch.Tensor]:
    """GPT-2's weights under the notebook's ``GPT`` parameter names (``wte``, ``wpe``,
    ``blocks.<i>.{ln_1,qkv,proj,ln_2,fc,fc_out}``, ``ln_f``); the output head is tied to ``wte``."""
    theirs = model.state_dict()
    ours = {"wte.weight": theirs["transformer.wte.weight"], "wpe.weight": theirs["transformer.wpe.weight"],
            "ln_f.weight": theirs["transformer.ln_f.weight"], "ln_f.bias": theirs["transformer.ln_f.bias"]}
    for i in range(model.config.n_layer):
        for name, gpt2_name, transposed in _BLOCK:
            weight = theirs[f"transformer.h.{i}.{gpt2_name}.weight"]
            ours[f"blocks.{i}.{name}.weight"] = weight.T.contiguous() if transposed else weight
            ours[f"blocks.{i}.{name}.bias"] = theirs[f"transformer.h.{i}.{gpt2_name}.bias"]
    return {key: value.detach().clone() for key, value in ours.items()}


def load_hub_model(name: str = HUB_MODEL) -> tuple[GPT2LMHeadModel, PreTrainedTokenizerBase]:
    """Pretrained GPT-2 weights and tokenizer from the hub (``COURSE_ONLINE=1`` only)."""
    if not is_online():
        raise RuntimeError(f"{name} comes from the Hugging Face hub: set COURSE_ONLINE=1 (the default on Colab) "
                           "and run with internet access")
    model = GPT2LMHeadModel.from_pretrained(name, attn_implementation="eager").eval()
    return model, AutoTokenizer.from_pretrained(name)
