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
_BLOCK = (
    ("ln_1", "ln_1", False),
    ("qkv", "attn.c_attn", True),
    ("proj", "attn.c_proj", True),
    ("ln_2", "ln_2", False),
    ("fc", "mlp.c_fc", True),
    ("fc_out", "mlp.c_proj", True),
)


def small_config(
    vocab_size: int = 97, n_positions: int = 64, d_model: int = 48, n_heads: int = 4, n_layers: int = 2
) -> GPT2Config:
    """A GPT-2 configuration of the given sizes: no dropout, eager attention, no end-of-text token
    (so ``generate()`` never stops early: greedy decoding runs for exactly the tokens asked)."""
    return GPT2Config(
        vocab_size=vocab_size,
        n_positions=n_positions,
        n_embd=d_model,
        n_head=n_heads,
        n_layer=n_layers,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=None,
        eos_token_id=None,
        attn_implementation="eager",
    )


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
    return dict(
        vocab_size=c.vocab_size,
        n_positions=c.n_positions,
        d_model=c.n_embd,
        n_heads=c.n_head,
        n_layers=c.n_layer,
    )


def _renamed(model: GPT2LMHeadModel, theirs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``theirs`` (tensors under GPT-2's parameter names) under the notebook's ``GPT`` names."""
    ours = {
        "wte.weight": theirs["transformer.wte.weight"],
        "wpe.weight": theirs["transformer.wpe.weight"],
        "ln_f.weight": theirs["transformer.ln_f.weight"],
        "ln_f.bias": theirs["transformer.ln_f.bias"],
    }
    for i in range(model.config.n_layer):
        for name, gpt2_name, transposed in _BLOCK:
            weight = theirs[f"transformer.h.{i}.{gpt2_name}.weight"]
            ours[f"blocks.{i}.{name}.weight"] = weight.T.contiguous() if transposed else weight
            ours[f"blocks.{i}.{name}.bias"] = theirs[f"transformer.h.{i}.{gpt2_name}.bias"]
    return {key: value.detach().clone() for key, value in ours.items()}


def course_state_dict(model: GPT2LMHeadModel) -> dict[str, torch.Tensor]:
    """GPT-2's weights under the notebook's ``GPT`` parameter names (``wte``, ``wpe``,
    ``blocks.<i>.{ln_1,qkv,proj,ln_2,fc,fc_out}``, ``ln_f``); the output head is tied to ``wte``."""
    return _renamed(model, model.state_dict())


def course_gradients(model: GPT2LMHeadModel) -> dict[str, torch.Tensor]:
    """The gradients of GPT-2's parameters after a backward pass, under the notebook's names, as
    :func:`course_state_dict` names the weights. GPT-2's head is tied to ``wte``, so ``wte``'s gradient
    is the sum of its use as the input embedding and as the output head."""
    missing = [name for name, p in model.named_parameters() if p.grad is None]
    if missing:
        raise ValueError(f"GPT-2 has no gradient for {missing[0]}: call backward() first")
    return _renamed(model, {name: p.grad for name, p in model.named_parameters()})


def load_hub_model(name: str = HUB_MODEL) -> tuple[GPT2LMHeadModel, PreTrainedTokenizerBase]:
    """Pretrained GPT-2 weights and tokenizer from the hub (``COURSE_ONLINE=1`` only)."""
    if not is_online():
        raise RuntimeError(
            f"{name} comes from the Hugging Face hub: set COURSE_ONLINE=1 (the default on Colab) "
            "and run with internet access"
        )
    model = GPT2LMHeadModel.from_pretrained(name, attn_implementation="eager").eval()
    return model, AutoTokenizer.from_pretrained(name)


@torch.no_grad()
def explain_cache_mismatch(
    model,
    reference: GPT2LMHeadModel,
    cached: torch.Tensor,
    recomputed: torch.Tensor,
    prompt_length: int,
    atol: float = 1e-5,
) -> str:
    """Why ``generate`` gave other tokens with the cache (``cached``) than without (``recomputed``),
    for the same prompt and seed: each run's next-token logits are compared with GPT-2's own
    (correctly masked) logits on the same tokens. The cached run is replayed as generation feeds it
    (the prompt, then one token at a time with ``past``), the other run in one call on the whole
    text. A disagreement between the two runs alone does not say which one is wrong: a mask that
    lets a token see the next one spoils the run without the cache, which then looks like a cache bug."""

    def error(logits, ids):  # the logits that chose each generated token
        want = reference(input_ids=ids).logits[:, prompt_length - 1 : -1]
        return float((logits.float() - want.float()).abs().max())

    whole = error(model(recomputed)[0][:, prompt_length - 1 : -1], recomputed)
    logits, past = model(cached[:, :prompt_length])
    steps = [logits[:, -1:]]
    for t in range(prompt_length, cached.shape[1] - 1):
        logits, past = model(cached[:, t : t + 1], past=past)
        steps.append(logits)
    stepwise = error(torch.cat(steps, dim=1), cached)
    found = (
        f"Against GPT-2's own logits on the same tokens (tolerance {atol:g}): without the cache (the whole "
        f"text in one call) the max abs error is {whole:.3g}; with the cache (the prompt, then one token at "
        f"a time) it is {stepwise:.3g}. "
    )
    if whole > atol:
        return found + (
            "Your model is wrong on the whole text at once, where no cache is involved: a token sees "
            "what it must not (the causal mask: decoder_mask, attend; exercise 1) or the model "
            "computes something else (exercise 2). Their visible checks say where."
        )
    if stepwise > atol:
        return found + (
            "Only the cached path is wrong: the positions of the new token (they start at "
            "past_length), the mask for one query after past_length cached keys, or how the cache "
            "is concatenated and passed on (Block.forward, GPT.forward, generate)."
        )
    return found + (
        "Both paths compute the right logits, so generate picks the tokens differently in the two "
        "runs: check that it feeds exactly the newest token with past=present, and draws with the "
        "generator it was given."
    )
