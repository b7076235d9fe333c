"""Fixtures for 01_attention: public examples for the visible checks, and hidden cases whose
shapes differ from every public one (other seq, d_model, d_qkv, head counts), so code that
hard-codes the visible sizes, or returns the public expected output, fails them.

``sentence`` is real: a short sentence's token vectors entering the course's pretrained encoder
(the offline MiniLM, :mod:`course.models`) and one real head's projections, a previous-token head,
so the notebook draws the students' own attention on something worth reading without importing
torch (an import costs every grading kernel about 1.3 s of CPU)."""

from __future__ import annotations

import numpy as np

from course.fixtures import pack_cases
from staff.authoring.reference import solution_namespace

ASSIGNMENT = "01_attention"
#: The tolerances (atol, rtol) the notebook's tests compare these fixtures with (staff.authoring.fixtures).
TOLERANCES = {
    "*": (1e-6, 1e-5),
    "softmax": (1e-8, 1e-5),
    "positional_encoding": (1e-8, 1e-5),
    # drawn, never graded: float32 values of a float64 model, compared to a share of this
    "sentence": (1e-4, 1e-4),
}
#: The expected outputs in each fixture (key patterns): a grading kernel never sees them, the judge
#: compares with them (staff/grading/execution/sandbox.py, judge.py). Everything else is an input.
OUTPUTS = {
    "softmax": ("expected",),
    "positional_encoding": ("expected",),
    "self_attention": ("y", "weights", "causal_weights"),
    "multihead": ("y", "weights"),
    "masked": ("y", "weights", "y_single", "weights_single"),
    "permutation": ("y_shuffled", "shuffled_y", "y_shuffled_pe", "shuffled_y_pe"),
}


#: The sentence of the notebook's heatmaps, and the head drawn: layer 0's head 2 puts almost all of
#: every token's weight on the token before it (measured on this and three other sentences).
SENTENCE, LAYER, HEAD = "the quick brown fox jumps over the lazy dog", 0, 2


def _weights(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape) / np.sqrt(shape[-2])


def _attention_case(sol: dict, rng: np.random.Generator, seq: int, d_model: int, d_qkv: int) -> dict:
    x = rng.standard_normal((seq, d_model))
    W_q, W_k, W_v = (_weights(rng, d_model, d_qkv) for _ in range(3))
    W_o = _weights(rng, d_qkv, d_model)
    y, weights = sol["apply_self_attention"](x, W_q, W_k, W_v, W_o)
    _, causal = sol["apply_self_attention"](x, W_q, W_k, W_v, W_o, mask=sol["causal_mask"](seq))
    return dict(x=x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, y=y, weights=weights, causal_weights=causal)


def _multihead_case(
    sol: dict,
    rng: np.random.Generator,
    seq: int,
    d_model: int,
    n_heads: int,
    d_qkv: int,
    masked: bool = False,
) -> dict:
    x = rng.standard_normal((seq, d_model))
    W_q, W_k, W_v = (_weights(rng, n_heads, d_model, d_qkv) for _ in range(3))
    W_o = _weights(rng, n_heads * d_qkv, d_model)
    mask = sol["causal_mask"](seq) if masked else None
    y, weights = sol["apply_multihead_attention"](x, W_q, W_k, W_v, W_o, mask=mask)
    case = dict(x=x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, y=y, weights=weights)
    if masked:  # head 0's projections as a single-head problem with its own output matrix
        case["W_o_single"] = _weights(rng, d_qkv, d_model)
        case["y_single"], case["weights_single"] = sol["apply_self_attention"](
            x, W_q[0], W_k[0], W_v[0], case["W_o_single"], mask=mask
        )
    return case


def _permutation_case(
    sol: dict, rng: np.random.Generator, seq: int, d_model: int, d_qkv: int, perm: list[int] | None = None
) -> dict:
    """Inputs of ``shuffle_experiment`` and its outputs without and with a positional encoding.
    The permutations are never their own inverse, so taking rows in the inverse order fails."""
    case = _attention_case(sol, rng, seq, d_model, d_qkv)
    case = {k: case[k] for k in ("x", "W_q", "W_k", "W_v", "W_o")}
    order = np.array(perm if perm is not None else rng.permutation(seq), dtype=np.int64)
    assert (order[order] != np.arange(seq)).any(), "a permutation that is its own inverse hides a wrong order"
    case.update(perm=order, pe=sol["positional_encoding"](seq, d_model))
    args = [case[k] for k in ("x", "perm", "W_q", "W_k", "W_v", "W_o")]
    case["y_shuffled"], case["shuffled_y"] = sol["shuffle_experiment"](*args)
    case["y_shuffled_pe"], case["shuffled_y_pe"] = sol["shuffle_experiment"](*args, pe=case["pe"])
    return case


def _sentence() -> dict:
    """The sentence's token vectors entering layer ``LAYER`` (embeddings with the model's learned
    positions, normalised), those of the same words in reverse order (re-embedded: new positions),
    and head ``HEAD``'s projections as ``(d_model, d_qkv)`` matrices. The biases are left out (the
    notebook's attention has none): they move this head's weights by at most 0.03 here, and the
    model's own weights are saved to show it."""
    import torch  # the instructor's side only: the notebook reads the saved arrays

    from course import models
    from staff.authoring.tensors import text_bytes

    tokenizer, encoder = models.load_tokenizer(), models.load_encoder(dtype=torch.float64)
    ids = tokenizer(SENTENCE, return_tensors="pt")["input_ids"]
    seq = ids.shape[1]
    reverse = np.r_[0, np.arange(seq - 2, 0, -1), seq - 1]  # the words reversed, [CLS] and [SEP] kept
    with torch.no_grad():
        runs = [
            encoder(input_ids=i, output_attentions=True, output_hidden_states=True)
            for i in (ids, ids[:, torch.from_numpy(reverse)])
        ]
    attention = encoder.transformer.layer[LAYER].attention
    d_qkv = encoder.config.dim // encoder.config.n_heads
    rows = slice(HEAD * d_qkv, (HEAD + 1) * d_qkv)
    weight = {
        name: getattr(attention, name).weight.detach().numpy()
        for name in ("q_lin", "k_lin", "v_lin", "out_lin")
    }
    case = dict(
        tokens=text_bytes("\n".join(tokenizer.convert_ids_to_tokens(ids[0]))),
        x=runs[0].hidden_states[LAYER][0].numpy(),
        x_reversed=runs[1].hidden_states[LAYER][0].numpy(),
        reverse=reverse.astype(np.int64),
        W_q=weight["q_lin"][rows].T,
        W_k=weight["k_lin"][rows].T,
        W_v=weight["v_lin"][rows].T,
        W_o=weight["out_lin"][:, rows].T,
        model_weights=runs[0].attentions[LAYER][0, HEAD].numpy(),
        model_weights_reversed=runs[1].attentions[LAYER][0, HEAD].numpy(),
    )
    for x, model in (
        (case["x"], case["model_weights"]),
        (case["x_reversed"], case["model_weights_reversed"]),
    ):
        scores = (x @ case["W_q"]) @ (x @ case["W_k"]).T / np.sqrt(d_qkv)
        ours = np.exp(scores - scores.max(-1, keepdims=True))
        ours /= ours.sum(-1, keepdims=True)
        # what the notebook says of this head: each token after [CLS] puts > 0.95 on the one before it
        assert np.diagonal(ours, -1).min() > 0.95 and np.abs(ours - model).max() < 0.03, (
            "not the head the notebook describes"
        )
    return {k: v.astype(np.float32) if v.dtype == np.float64 else v for k, v in case.items()}


def build() -> dict:
    sol = solution_namespace(ASSIGNMENT)
    softmax, pe = sol["softmax"], sol["positional_encoding"]
    public, hidden = np.random.default_rng(2024), np.random.default_rng(6_1989)

    x = public.standard_normal((3, 5)) * 3
    softmax_hidden = []
    for shape, axis, scale in [
        ((4, 7), -1, 5.0),
        ((6, 3), 0, 2.0),
        ((2, 3, 9), 1, 1.0),
        ((5, 8), -1, 1e4),
        ((3, 6), -1, -1e4),
    ]:
        xs = hidden.standard_normal(shape) * abs(scale) + (scale if abs(scale) > 100 else 0.0)
        softmax_hidden.append(dict(x=xs, axis=np.array(axis), expected=softmax(xs, axis=axis)))

    return {
        ("public", "softmax"): pack_cases([dict(x=x, expected=softmax(x))]),
        ("hidden", "softmax"): pack_cases(softmax_hidden),
        ("public", "self_attention"): pack_cases([_attention_case(sol, public, 5, 8, 4)]),
        ("hidden", "self_attention"): pack_cases(
            [
                _attention_case(sol, hidden, 7, 12, 6),
                _attention_case(sol, hidden, 3, 6, 10),
                _attention_case(sol, hidden, 11, 16, 3),
            ]
        ),
        ("public", "multihead"): pack_cases([_multihead_case(sol, public, 5, 8, 2, 4)]),
        ("hidden", "multihead"): pack_cases(
            [
                _multihead_case(sol, hidden, 6, 10, 3, 5),
                _multihead_case(sol, hidden, 9, 12, 4, 2),
                _multihead_case(sol, hidden, 4, 6, 1, 7),
            ]
        ),
        ("public", "positional_encoding"): pack_cases([dict(expected=pe(10, 16))]),
        ("hidden", "positional_encoding"): pack_cases(
            [dict(expected=pe(50, 64)), dict(expected=pe(7, 6)), dict(expected=pe(3, 10))]
        ),
        ("hidden", "masked"): pack_cases(
            [
                _multihead_case(sol, hidden, 7, 12, 3, 4, masked=True),
                _multihead_case(sol, hidden, 5, 9, 2, 6, masked=True),
            ]
        ),
        # last: drawing from the generators after every older fixture leaves those unchanged
        ("public", "sentence"): pack_cases([_sentence()]),
        ("public", "permutation"): pack_cases(
            [_permutation_case(sol, public, 5, 8, 4, perm=[2, 0, 3, 4, 1])]
        ),
        ("hidden", "permutation"): pack_cases(
            [
                _permutation_case(sol, hidden, 7, 12, 6),
                _permutation_case(sol, hidden, 4, 6, 3, perm=[3, 2, 0, 1]),
                _permutation_case(sol, hidden, 10, 16, 8),
            ]
        ),
    }
