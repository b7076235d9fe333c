"""Fixtures for 01_attention: public examples for the visible checks, and hidden cases whose
shapes differ from every public one (other seq, d_model, d_qkv, head counts), so code that
hard-codes the visible sizes, or returns the public expected output, fails them."""
from __future__ import annotations

import numpy as np

from course.fixtures import pack_cases
from staff.authoring.reference import solution_namespace

ASSIGNMENT = "01_attention"
#: The tolerances (atol, rtol) the notebook's tests compare these fixtures with (staff.authoring.fixtures).
TOLERANCES = {"*": (1e-6, 1e-5), "softmax": (1e-8, 1e-5), "positional_encoding": (1e-8, 1e-5)}
#: The expected outputs in each fixture (key patterns): a grading kernel never sees them, the judge
#: compares with them (staff/grading/sandbox.py, judge.py). Everything else is an input.
OUTPUTS = {"softmax": ("expected",), "positional_encoding": ("expected",),
           "self_attention": ("y", "weights", "causal_weights"), "multihead": ("y", "weights"),
           "masked": ("y", "weights", "y_single", "weights_single")}


def _weights(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape) / np.sqrt(shape[-2])


def _attention_case(sol: dict, rng: np.random.Generator, seq: int, d_model: int, d_qkv: int) -> dict:
    x = rng.standard_normal((seq, d_model))
    W_q, W_k, W_v = (_weights(rng, d_model, d_qkv) for _ in range(3))
    W_o = _weights(rng, d_qkv, d_model)
    y, weights = sol["apply_self_attention"](x, W_q, W_k, W_v, W_o)
    _, causal = sol["apply_self_attention"](x, W_q, W_k, W_v, W_o, mask=sol["causal_mask"](seq))
    return dict(x=x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, y=y, weights=weights, causal_weights=causal)


def _multihead_case(sol: dict, rng: np.random.Generator, seq: int, d_model: int, n_heads: int,
                    d_qkv: int, masked: bool = False) -> dict:
    x = rng.standard_normal((seq, d_model))
    W_q, W_k, W_v = (_weights(rng, n_heads, d_model, d_qkv) for _ in range(3))
    W_o = _weights(rng, n_heads * d_qkv, d_model)
    mask = sol["causal_mask"](seq) if masked else None
    y, weights = sol["apply_multihead_attention"](x, W_q, W_k, W_v, W_o, mask=mask)
    case = dict(x=x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, y=y, weights=weights)
    if masked:  # head 0's projections as a single-head problem with its own output matrix
        case["W_o_single"] = _weights(rng, d_qkv, d_model)
        case["y_single"], case["weights_single"] = sol["apply_self_attention"](
            x, W_q[0], W_k[0], W_v[0], case["W_o_single"], mask=mask)
    return case


def build() -> dict:
    sol = solution_namespace(ASSIGNMENT)
    softmax, pe = sol["softmax"], sol["positional_encoding"]
    public, hidden = np.random.default_rng(2024), np.random.default_rng(6_1989)

    x = public.standard_normal((3, 5)) * 3
    softmax_hidden = []
    for shape, axis, scale in [((4, 7), -1, 5.0), ((6, 3), 0, 2.0), ((2, 3, 9), 1, 1.0),
                               ((5, 8), -1, 1e4), ((3, 6), -1, -1e4)]:
        xs = hidden.standard_normal(shape) * abs(scale) + (scale if abs(scale) > 100 else 0.0)
        softmax_hidden.append(dict(x=xs, axis=np.array(axis), expected=softmax(xs, axis=axis)))

    return {
        ("public", "softmax"): pack_cases([dict(x=x, expected=softmax(x))]),
        ("hidden", "softmax"): pack_cases(softmax_hidden),
        ("public", "self_attention"): pack_cases([_attention_case(sol, public, 5, 8, 4)]),
        ("hidden", "self_attention"): pack_cases([
            _attention_case(sol, hidden, 7, 12, 6), _attention_case(sol, hidden, 3, 6, 10),
            _attention_case(sol, hidden, 11, 16, 3)]),
        ("public", "multihead"): pack_cases([_multihead_case(sol, public, 5, 8, 2, 4)]),
        ("hidden", "multihead"): pack_cases([
            _multihead_case(sol, hidden, 6, 10, 3, 5), _multihead_case(sol, hidden, 9, 12, 4, 2),
            _multihead_case(sol, hidden, 4, 6, 1, 7)]),
        ("public", "positional_encoding"): pack_cases([dict(expected=pe(10, 16))]),
        ("hidden", "positional_encoding"): pack_cases([
            dict(expected=pe(50, 64)), dict(expected=pe(7, 6)), dict(expected=pe(3, 10))]),
        ("hidden", "masked"): pack_cases([
            _multihead_case(sol, hidden, 7, 12, 3, 4, masked=True),
            _multihead_case(sol, hidden, 5, 9, 2, 6, masked=True)]),
    }
