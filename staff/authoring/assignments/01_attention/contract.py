"""What 01_attention's released text promises about the inputs its tests feed each exercise (see
:mod:`staff.authoring.contract_kit`): every term quotes the notebook's own words."""

from __future__ import annotations

import numpy as np

from staff.authoring.contract_kit import Case, Term, Verdict, floats, shapes, term, text


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
#: What each exercise's released text promises about the inputs its tests feed it (staff.authoring.contract_kit).
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
