"""Fixtures for 05_decoder. Expected outputs come from the notebook's own solution
(:func:`staff.authoring.reference.solution_namespace`) or, where the exercise is to match them, from
PyTorch's and Hugging Face's own implementations; all on the CPU in float32.

- ``causal``: q, k, v ``(batch, heads, query, key/d_head)``, a padding mask and a past length; the
  mask, weights and outputs. Hidden cases: other sizes, left and right padding, past lengths.
- ``gpt``: a random GPT-2 (``transformers``' ``GPT2LMHeadModel``, weights under the notebook's
  names ``w.*``), a padded batch and a cache split point; GPT-2's own logits.
- ``sampling``: logits and rows of (temperature, top_k, top_p) with 0 for "off"; probabilities.
- ``decoding``: a random GPT-2 and prompts; greedy tokens (equal to ``GPT2LMHeadModel.generate``,
  asserted here), the tokens given to the model per call with the cache, and seeded samples.
- ``heldout`` (hidden only): exercise 2's training, step by step. Random weights (``w.*``, all of
  them random, so every part of the architecture shows) of a small GPT (``LM_SIZES``) and GPT-2's
  logits for 4 random sequences with them (``logits``: the prerequisite, the answers must come from
  the model's parameters); then the optimisation of the hidden test (``LM_TRAINING``: AdamW, warm-up
  and cosine decay, clipping; the next-token cross-entropy) from those weights, in float64
  (:func:`staff.authoring.tensors.train_steps`), on ``batches`` ``(steps, batch, 64)`` of random
  windows of the dictionary entries no student gets (``staff/authoring/heldout/``): every step's
  loss (``losses``) and the trained model's log-probabilities (``log_probs``) of every next character
  of the 8 ``windows`` of 64 characters that end that text (in no batch).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from course import gpt, paths, text
from course.fixtures import pack_cases
from staff.authoring.reference import solution_namespace
from staff.authoring.tensors import Draws, arrays, int_array, padding_mask, random_ids, randomize, train_steps

ASSIGNMENT = "05_decoder"
HELDOUT = Path(__file__).resolve().parents[2] / "heldout" / "devils_dictionary_w-z.txt"
#: The tolerances (atol, rtol) the notebook's tests compare these fixtures with (staff.authoring.fixtures).
# The training of ``heldout`` runs in float64 and agrees to 5e-15 (measured across
# ATEN_CPU_CAPABILITY=default/avx2/avx512, 1 and 2 threads, and the correct samples' implementations).
# Its tolerances sit far above that and below what one untrained parameter tensor changes (measured,
# one bias or LayerNorm scale left out of the optimiser: losses 1.5e-3, log-probabilities 1.3e-2), and
# admit what the parity gate admits (exact GELU for GPT-2's tanh one moves the losses by 1.3e-4 and the
# log-probabilities by 1e-3).
TOLERANCES = {
    "*": (1e-6, 1e-5),
    "gpt": (1e-5, 1e-5),
    "heldout/logits": (5e-3, 5e-3),  # the prerequisites: parity with the grader's weights, in float32
    "heldout/losses": (5e-4, 0.0),
    "heldout/log_probs": (4e-3, 0.0),
}
#: The expected outputs in each fixture (key patterns): a grading kernel never sees them, the judge
#: compares with them (staff/grading/execution/sandbox.py, judge.py). Everything else is an input.
OUTPUTS = {
    "causal": ("mask", "out", "weights"),
    "gpt": ("logits",),
    "sampling": ("probs",),
    "decoding": ("greedy", "lengths", "sampled"),
    "heldout": ("logits", "losses", "log_probs"),
}
GPT_SIZES = ("vocab_size", "n_positions", "d_model", "n_heads", "n_layers")
#: Exercise 2's graded training: the GPT the grader trains, and its optimisation for a few steps (the
#: AdamW, schedule and clipping of assignment 6's given loop, at the learning rate of a small model).
LM_SIZES = dict(vocab_size=text.VOCAB_SIZE, n_positions=64, d_model=64, n_heads=4, n_layers=2)
LM_TRAINING = dict(steps=8, batch=32, learning_rate=5e-3, weight_decay=0.01, warmup_steps=2)
EVAL_WINDOWS = 8


@torch.no_grad()
def causal_case(
    sol: dict, g: Draws, batch: int, heads: int, query: int, past: int, d_head: int, pattern=None
) -> dict:
    total = past + query
    q = g.normal(batch, heads, query, d_head)
    k, v = (g.normal(batch, heads, total, d_head) for _ in range(2))
    attention_mask = padding_mask(batch, total, pattern)
    mask = sol["decoder_mask"](attention_mask, query, past_length=past)
    out, weights = sol["attend"](q, k, v, mask)
    return arrays(
        q=q,
        k=k,
        v=v,
        attention_mask=attention_mask,
        past_length=int_array(past),
        mask=mask,
        out=out,
        weights=weights,
    )


@torch.no_grad()
def _gpt2_init(model, draws: Draws):
    """GPT-2's initialisation (as transformers' ``_init_weights``: normal weights of std 0.02, the
    residual projections' scaled by 1/sqrt(2 n_layer), zero biases, unit norms) drawn again with
    :class:`Draws`: transformers samples with torch's ``normal_``, whose bits depend on the CPU's
    instruction set, so the expected outputs would move with the machine that built them."""
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            p.zero_()
        elif p.dim() == 1:  # LayerNorm weight
            p.fill_(1.0)
        else:
            std = model.config.initializer_range / (
                1 if not name.endswith("c_proj.weight") else (2 * model.config.n_layer) ** 0.5
            )
            p.copy_(draws.normal(p.shape) * std)
    return model


def _reference(seed: int, **sizes: int):
    model = _gpt2_init(gpt.reference_model(seed=seed, **sizes), Draws(seed))
    weights = {f"w.{k}": v.numpy().copy() for k, v in gpt.course_state_dict(model).items()}
    return model, {**weights, **{k: int_array(v) for k, v in gpt.sizes_of(model).items()}}


@torch.no_grad()
def gpt_case(g: Draws, seed: int, batch: int, seq: int, split: int, pattern=None, **sizes: int) -> dict:
    model, weights = _reference(seed, **sizes)
    attention_mask = padding_mask(batch, seq, pattern)
    ids = random_ids(g, sizes["vocab_size"], attention_mask)
    logits = model(input_ids=ids, attention_mask=attention_mask).logits
    return {
        **weights,
        **arrays(ids=ids, attention_mask=attention_mask, split=int_array(split), logits=logits),
    }


def sampling_case(sol: dict, g: Draws, batch: int, vocab: int, settings: list[tuple]) -> dict:
    logits = g.normal(batch, vocab) * 2.5
    probs = [
        sol["next_token_distribution"](logits, temperature=t, top_k=int(k) or None, top_p=p or None)
        for t, k, p in settings
    ]
    return arrays(logits=logits, settings=np.array(settings, dtype=np.float64), probs=torch.stack(probs))


@torch.no_grad()
def generate_case(
    sol: dict,
    g: Draws,
    seed: int,
    batch: int,
    prompt_len: int,
    steps: int,
    temperature: float,
    top_k: int,
    top_p: float,
    **sizes: int,
) -> dict:
    model, weights = _reference(seed, **sizes)
    ours = sol["gpt_from_case"](weights)
    prompt = g.integers(0, sizes["vocab_size"], (batch, prompt_len))
    counting = sol["CountingModel"](ours)
    greedy = sol["generate"](counting, prompt, steps, temperature=0)
    reference = model.generate(
        prompt, attention_mask=torch.ones_like(prompt), do_sample=False, max_new_tokens=steps, pad_token_id=0
    )
    assert torch.equal(greedy, reference), "the solution's greedy decoding differs from GPT-2's generate()"
    sampled = sol["generate"](
        ours,
        prompt,
        steps,
        temperature=temperature,
        top_k=top_k or None,
        top_p=top_p or None,
        generator=torch.Generator().manual_seed(seed),
    )
    return {
        **weights,
        **arrays(
            prompt=prompt,
            max_new_tokens=int_array(steps),
            temperature=np.array(temperature),
            top_k=int_array(top_k),
            top_p=np.array(top_p),
            seed=int_array(seed),
            greedy=greedy,
            lengths=torch.tensor(counting.lengths),
            sampled=sampled,
        ),
    }


def next_token_loss(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """The language-model loss of the hidden test: the mean cross-entropy of ids[:, t + 1] from position t."""
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def heldout_case(sol: dict, g: Draws, parity: int = 4, parity_length: int = 32) -> dict:
    """Random GPT-2 weights of ``LM_SIZES`` (all of them random, so every part of the architecture
    shows) and GPT-2's logits for random ids with them; then the solution's GPT trained from those
    weights on random windows of the held-out text, and its log-probabilities on the windows that end
    the text (in no batch)."""
    ids = text.encode(HELDOUT.read_text(encoding="ascii"))
    model = randomize(gpt.reference_model(seed=55, **LM_SIZES), g)
    weights = {f"w.{k}": v.numpy().copy() for k, v in gpt.course_state_dict(model).items()}
    case = {**weights, **{k: int_array(v) for k, v in LM_SIZES.items()}}
    parity_ids = g.integers(0, LM_SIZES["vocab_size"], (parity, parity_length))
    with torch.no_grad():
        logits = model(input_ids=parity_ids).logits
    ours = sol["gpt_from_case"](case)
    with torch.no_grad():
        assert (ours(parity_ids)[0] - logits).abs().max() < 1e-5, (
            "the solution's GPT differs from GPT-2 with the grader's weights"
        )
    context, settings = LM_SIZES["n_positions"], LM_TRAINING
    split = len(ids) - EVAL_WINDOWS * context
    starts = g.integers(0, split - context + 1, (settings["steps"], settings["batch"]))
    batches = ids[starts[..., None] + torch.arange(context)]
    windows = ids[split:].view(EVAL_WINDOWS, context)
    losses, trained = train_steps(
        ours,
        batches,
        lambda m, batch: next_token_loss(m(batch)[0], batch),
        settings["learning_rate"],
        settings["warmup_steps"],
        settings["weight_decay"],
    )
    with torch.no_grad():
        log_probs = trained(windows)[0].log_softmax(dim=-1)
    return {
        **case,
        **arrays(
            ids=parity_ids,
            logits=logits,
            batches=batches,
            learning_rate=np.array(settings["learning_rate"]),
            weight_decay=np.array(settings["weight_decay"]),
            warmup_steps=int_array(settings["warmup_steps"]),
            losses=losses,
            windows=windows,
            log_probs=log_probs,
        ),
    }


def build() -> dict:
    sol = solution_namespace(ASSIGNMENT)
    public, hidden = Draws(505), Draws(5_0505)
    small = dict(vocab_size=61, n_positions=32, d_model=24, n_heads=2, n_layers=2)
    settings = [(1.0, 0, 0.0), (0.7, 0, 0.0), (1.0, 5, 0.0), (1.0, 0, 0.9), (0.0, 0, 0.0), (1.3, 8, 0.8)]
    return {
        ("public", "causal"): pack_cases([causal_case(sol, public, 2, 2, 5, 0, 4, [5, 3])]),
        ("hidden", "causal"): pack_cases(
            [
                causal_case(sol, hidden, 3, 4, 6, 0, 8, [6, 2, [0, 0, 1, 1, 1, 1]]),
                causal_case(sol, hidden, 2, 3, 1, 7, 5, [8, 4]),
                causal_case(sol, hidden, 1, 1, 4, 3, 16),
            ]
        ),
        ("public", "gpt"): pack_cases([gpt_case(public, 1, 2, 10, 6, [10, 7], **small)]),
        ("hidden", "gpt"): pack_cases(
            [
                gpt_case(
                    hidden,
                    2,
                    3,
                    14,
                    9,
                    [14, 11, 5],
                    vocab_size=83,
                    n_positions=40,
                    d_model=36,
                    n_heads=3,
                    n_layers=3,
                ),
                gpt_case(
                    hidden,
                    3,
                    1,
                    23,
                    1,
                    None,
                    vocab_size=50,
                    n_positions=24,
                    d_model=40,
                    n_heads=5,
                    n_layers=1,
                ),
            ]
        ),
        ("public", "sampling"): pack_cases([sampling_case(sol, public, 3, 20, settings)]),
        ("hidden", "sampling"): pack_cases(
            [
                sampling_case(
                    sol,
                    hidden,
                    4,
                    50,
                    [(0.5, 0, 0.0), (2.0, 0, 0.0), (1.0, 3, 0.0), (1.0, 0, 0.5), (0.8, 10, 0.95)],
                ),
                sampling_case(
                    sol, hidden, 2, 7, [(1.0, 0, 0.01), (1.0, 7, 0.0), (0.0, 2, 0.5), (1.0, 1, 0.0)]
                ),
            ]
        ),
        ("hidden", "decoding"): pack_cases(
            [
                generate_case(
                    sol,
                    hidden,
                    4,
                    2,
                    4,
                    20,
                    0.9,
                    12,
                    0.9,
                    vocab_size=71,
                    n_positions=32,
                    d_model=32,
                    n_heads=4,
                    n_layers=2,
                ),
                generate_case(
                    sol,
                    hidden,
                    5,
                    1,
                    1,
                    30,
                    1.2,
                    0,
                    0.8,
                    vocab_size=40,
                    n_positions=48,
                    d_model=24,
                    n_heads=3,
                    n_layers=3,
                ),
            ]
        ),
        ("hidden", "heldout"): pack_cases([heldout_case(sol, Draws(5_0506))]),
    }


README_FIGURE = paths.ROOT / "docs" / "figures" / "kv_cache.png"


def save_readme_figure(path: Path | str = README_FIGURE, dpi: int = 72) -> Path:
    """The notebook's KV-cache measurement (its solution's ``generate``, with and without the cache,
    on the notebook's benchmark model) as a README figure: ``python -m staff figure``."""
    import time

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sol = solution_namespace(ASSIGNMENT)
    torch.manual_seed(0)
    bench = sol["GPT"](vocab_size=text.VOCAB_SIZE, n_positions=512, d_model=128, n_heads=4, n_layers=4).eval()
    lengths, seconds = [32, 64, 128, 256, 384, 500], {True: [], False: []}
    for n in lengths:
        outputs = {}
        for use_cache in (True, False):
            best = float("inf")
            for _ in range(3):  # the best of three: a figure of the code's speed, not of the machine's load
                start = time.perf_counter()
                outputs[use_cache] = sol["generate"](
                    bench, torch.zeros(1, 1, dtype=torch.long), n, temperature=0, use_cache=use_cache
                )
                best = min(best, time.perf_counter() - start)
            seconds[use_cache].append(best)
        assert torch.equal(outputs[True], outputs[False]), "the cache changed the generated tokens"
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
    left.plot(lengths, seconds[False], "o-", label="recompute the prefix")
    left.plot(lengths, seconds[True], "o-", label="KV cache")
    left.set(
        title="Greedy generation of n tokens (4 blocks, d_model 128, CPU)",
        xlabel="new tokens n",
        ylabel="seconds",
    )
    left.legend()
    right.plot(lengths, np.array(seconds[False]) / np.array(seconds[True]), "o-", color="tab:green")
    right.set(title="Speed-up of the KV cache", xlabel="new tokens n", ylabel="time without / with")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, metadata={"Software": None})
    plt.close(fig)
    return path
