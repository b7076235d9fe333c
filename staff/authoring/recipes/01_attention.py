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
from staff.authoring.contracts import Case, Term, Verdict, floats, shapes, term, text
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


def _sized(promise: str, **axes: str) -> Term:
    """``shapes``, and no axis of size 0: every size (``seq``, ``d_model``, ...) is at least 1."""
    named = shapes(promise, **axes)

    def holds(case: Case) -> Verdict:
        if verdict := named.holds(case):
            return verdict
        empty = [key for key in axes if 0 in np.shape(case[key])]
        return f"{empty[0]} has an axis of size 0 {np.shape(case[empty[0]])}" if empty else None

    return Term(promise, named.keys, holds)


def _softmax_axis(case: Case) -> Verdict:
    x, axis = np.asarray(case["x"]), np.asarray(case.get("axis", -1))
    if axis.shape != () or axis.dtype.kind not in "iu":
        return f"axis is {axis.dtype} of shape {axis.shape}, not one integer"
    if x.ndim == 0 or not -x.ndim <= int(axis) < x.ndim:
        return f"axis {int(axis)} is not an axis of x (shape {x.shape})"
    return None if x.shape[int(axis)] else f"x has nothing along axis {int(axis)} (shape {x.shape})"


def _concatenated_heads(case: Case) -> Verdict:
    if np.ndim(case["W_q"]) != 3 or np.ndim(case["W_o"]) != 2:
        return None  # the shapes term names it
    n_heads, _, d_qkv = np.shape(case["W_q"])
    rows = np.shape(case["W_o"])[0]
    return (
        None if rows == n_heads * d_qkv else f"W_o has {rows} rows, not n_heads * d_qkv = {n_heads * d_qkv}"
    )


def _permutation(case: Case) -> Verdict:
    perm, seq = np.asarray(case["perm"]), np.shape(case["x"])[0]
    if perm.dtype.kind not in "iu" or perm.ndim != 1:
        return f"perm is {perm.dtype} of shape {perm.shape}, not integer indices"
    return (
        None
        if sorted(perm.tolist()) == list(range(seq))
        else f"perm {perm.tolist()} is not a permutation of range({seq})"
    )


def _sinusoidal(case: Case) -> Verdict:
    pe = np.asarray(case["pe"])
    if pe.ndim != 2:
        return None  # the shapes term names it
    seq_len, d_model = pe.shape
    angles = np.arange(seq_len)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    wanted = np.zeros((seq_len, d_model))
    wanted[:, 0::2], wanted[:, 1::2] = np.sin(angles), np.cos(angles[:, : d_model // 2])
    gap = float(np.abs(pe - wanted).max())
    return None if gap < 1e-9 else f"pe differs from the sinusoidal encoding by up to {gap:.2g}"


def _even_d_model(case: Case) -> Verdict:
    d_model = np.shape(case["expected"])[-1]
    return None if d_model % 2 == 0 else f"d_model {d_model} is odd: a sine dimension without its cosine"


def _sentence_tokens(case: Case) -> Verdict:
    tokens = bytes(np.asarray(case["tokens"])).decode("utf-8", "replace").split("\n")
    seq = np.shape(case["x"])[0]
    if len(tokens) != seq:
        return f"{len(tokens)} tokens for {seq} token vectors"
    return (
        None
        if tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
        else f"tokens {tokens} do not run [CLS] ... [SEP]"
    )


def _reversed_words(case: Case) -> Verdict:
    reverse, seq = np.asarray(case["reverse"]), np.shape(case["x"])[0]
    wanted = [0, *range(seq - 2, 0, -1), seq - 1]
    if reverse.dtype.kind not in "iu" or reverse.tolist() != wanted:
        return (
            f"reverse is {reverse.tolist()}, not the words reversed with [CLS] and [SEP] in place ({wanted})"
        )
    return None


def _attention_rows(case: Case) -> Verdict:
    for key in ("model_weights", "model_weights_reversed"):
        weights = np.asarray(case[key], dtype=np.float64)
        if weights.min() < 0 or np.abs(weights.sum(-1) - 1).max() > 1e-5:
            return f"a row of {key} is not weights (non-negative, summing to 1)"
    return None


SELF_ATTENTION = "x: (seq, d_model); W_q, W_k, W_v: (d_model, d_qkv); W_o: (d_qkv, d_model);"
MULTIHEAD = "x: (seq, d_model); W_q, W_k, W_v: (n_heads, d_model, d_qkv); W_o: (n_heads * d_qkv, d_model);"
HEADS_CONCATENATED = "one projection $W_o$ of shape `(n_heads * d_qkv, d_model)` maps the result back"
PROJECTIONS = r"$$Q = xW_q,\quad K = xW_k,\quad V = xW_v \qquad\text{each } (\text{seq}, d_{qkv}).$$"
STACKED = "stacked into arrays of shape `(n_heads, d_model, d_qkv)`"
_self_attention_sizes = _sized(
    SELF_ATTENTION,
    x="seq d_model",
    W_q="d_model d_qkv",
    W_k="d_model d_qkv",
    W_v="d_model d_qkv",
    W_o="d_qkv d_model",
)
_multihead_terms = (
    _sized(
        MULTIHEAD,
        x="seq d_model",
        W_q="n_heads d_model d_qkv",
        W_k="n_heads d_model d_qkv",
        W_v="n_heads d_model d_qkv",
        W_o="_ d_model",
    ),
    term(HEADS_CONCATENATED, "W_o", _concatenated_heads),
    floats(STACKED, ("x", "W_q", "W_k", "W_v", "W_o")),
)
#: What each exercise's released text promises about the inputs its tests feed it (staff.authoring.contracts).
CONTRACT = {
    "softmax": (
        term(
            "Write `softmax(x, axis=-1)` that works for arrays of any number of dimensions, normalising along `axis`.",
            ("x", "axis"),
            _softmax_axis,
        ),
        floats(
            "Attention turns a row of arbitrary scores into weights that are positive and sum to one", "x"
        ),
    ),
    "self_attention": (
        _self_attention_sizes,
        floats(PROJECTIONS, ("x", "W_q", "W_k", "W_v", "W_o")),
    ),
    "multihead": _multihead_terms,
    "masked": (
        *_multihead_terms,
        # head 0's projections with W_o_single, through apply_self_attention; the test's masks are causal_mask(seq)
        _sized(SELF_ATTENTION, x="seq d_model", W_q="_ d_model d_qkv", W_o_single="d_qkv d_model"),
        floats(PROJECTIONS, "W_o_single"),
    ),
    "positional_encoding": (
        # no input: the test reads seq_len and d_model off the expected array's shape
        _sized(
            "Write `positional_encoding(seq_len, d_model)` returning an array `(seq_len, d_model)`",
            expected="seq_len d_model",
        ),
        term(
            "Even dimensions get a sine, odd dimensions a cosine of the **same** frequency",
            "expected",
            _even_d_model,
        ),
    ),
    "permutation": (
        _sized(
            "x: (seq, d_model); perm: a permutation of range(seq); W_*: as in apply_self_attention; "
            "pe: None or (seq, d_model), added to whatever token sits at each position.",
            x="seq d_model",
            perm="seq",
            pe="seq d_model",
        ),
        _self_attention_sizes,
        term(
            "`perm` is a permutation of `range(seq)`: row $i$ of the shuffled sentence is token `perm[i]`",
            "perm",
            _permutation,
        ),
        term("and with the sinusoidal encoding of exercise 4", "pe", _sinusoidal),
        floats(PROJECTIONS, ("x", "W_q", "W_k", "W_v", "W_o", "pe")),
    ),
    # public: the notebook draws the students' attention on it
    "sentence": (
        text(
            'The next cell loads the token vectors of *"the quick brown fox jumps over the lazy dog"*',
            "tokens",
        ),
        term(
            "`[CLS]` and `[SEP]` are the special tokens the tokenizer adds at the start and the end.",
            "tokens",
            _sentence_tokens,
        ),
        _sized(
            r"the projections $W_q, W_k, W_v, W_o$ of one of that layer's 12 heads (head 2, $d_{qkv} = 32$)",
            x="seq d_model",
            x_reversed="seq d_model",
            W_q="d_model 32",
            W_k="d_model 32",
            W_v="d_model 32",
            W_o="32 d_model",
            model_weights="seq seq",
            model_weights_reversed="seq seq",
            reverse="seq",
        ),
        term("reverses the words (`[CLS]` and `[SEP]` stay in place)", "reverse", _reversed_words),
        term(
            "row $i$ is the query token, column $j$ the key it attends to", "model_weights*", _attention_rows
        ),
        floats(
            "as they enter the first layer of the course's offline pretrained encoder",
            ("x", "x_reversed", "W_*", "model_weights*"),
        ),
    ),
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
