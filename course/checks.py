"""Visible checks with messages that say what differs.

A failing check names the quantity, then the expected and actual shape or the largest
error, where it occurs and the tolerance, so a student at 2 a.m. knows what to look at.
Accepts NumPy arrays, Python numbers and PyTorch tensors (compared on the CPU in float64, so
a check that passes on a GPU passes here too).

Under grading each check also writes a record (:mod:`course.record`) and the judge outside the
kernel decides the points with these same functions; an expected output the kernel may not see
(a :class:`~course.record.Withheld` hidden value) is only recorded here, never compared (not even
its shape: a wrong shape in one case must not stop the test cell before its other cases, each of
which earns its own share of the points). ``weight`` (default 1) is a check's share of its test
cell's points, relative to the cell's other checks against withheld values; the judge reads it
from the instructor's run. The judge's messages (``reveal=False``) say what kind of failure and by
how much relative to the tolerance, never an expected value.

:data:`KINDS` is the one table of check kinds: for each, the checks that record it (what the
integrity scan protects from redefinition), how the judge compares a record with its expected value,
whether it pays points against a withheld value, and whether it is a prerequisite of its cell. The
records' reader, the judge and the scan all read it; a new kind is one entry here (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from course import record
from course.record import Withheld

# Bound at import time: a student's cell that later replaces np.allclose or np.abs does not
# change what these checks compute.
_asarray = np.asarray
_abs = np.abs
_isfinite = np.isfinite
_argmax = np.argmax
_unravel = np.unravel_index
_norm = np.linalg.norm


def to_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):  # torch.Tensor, without importing torch
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        value = value.numpy()
    return _asarray(value)


def check_type(name: str, value: Any) -> np.ndarray:
    if value is None:
        raise AssertionError(f"{name}: got None — did you forget to `return` the result?")
    array = to_numpy(value)
    if array.dtype == object:
        raise AssertionError(f"{name}: expected a numeric array, got {type(value).__name__}")
    return array


def _shape(name: str, value: Any, expected_shape: tuple[int, ...]) -> np.ndarray:
    array = check_type(name, value)
    expected_shape = tuple(int(s) for s in expected_shape)
    if array.shape != expected_shape:
        raise AssertionError(f"{name}: expected shape {expected_shape}, got {array.shape}")
    return array


def compare_shape(name: str, got: Any, expected: Any) -> None:
    """A recorded shape against the expected one (the judge's side of :func:`check_shape`)."""
    got, expected = tuple(to_numpy(got).tolist()), tuple(to_numpy(expected).tolist())
    if got != expected:
        raise AssertionError(f"{name}: expected shape {expected}, got {got}")


def check_shape(name: str, value: Any, expected_shape: tuple[int, ...]) -> np.ndarray:
    array = check_type(name, value)
    record.write(
        "shape",
        name,
        _asarray(array.shape, dtype=np.int64),
        _asarray(tuple(int(s) for s in expected_shape), dtype=np.int64),
    )
    return _shape(name, array, expected_shape)


def _weight(weight: float) -> dict[str, float]:
    """The record's ``weight`` entry (none for the default, so existing records read the same)."""
    if not (0 < float(weight) < float("inf")):
        raise ValueError(f"a check's weight must be a positive number, got {weight!r}")
    return {} if float(weight) == 1.0 else {"weight": float(weight)}


def _record_against(
    kind: str, name: str, value: Any, expected: Any, weight: float = 1.0, **tolerance: float
) -> np.ndarray | None:
    """Record the check; return the expected values, or None when they are withheld here."""
    got = check_type(name, value)
    if isinstance(expected, Withheld):
        record.write(kind, name, got, expected, **tolerance, **_weight(weight))
        return None
    want = to_numpy(expected)
    record.write(kind, name, got, want, **tolerance, **_weight(weight))
    return want


def check_close(
    name: str, value: Any, expected: Any, atol: float = 1e-6, rtol: float = 1e-5, weight: float = 1.0
) -> None:
    """|got - expected| <= atol + rtol * |expected| everywhere (NumPy's allclose rule)."""
    want = _record_against("close", name, value, expected, weight, atol=atol, rtol=rtol)
    if want is None:
        return
    compare_close(name, value, want, atol, rtol)


def compare_close(
    name: str, value: Any, expected: Any, atol: float, rtol: float, reveal: bool = True
) -> None:
    want = to_numpy(expected).astype(np.float64)
    got = _shape(name, value, want.shape).astype(np.float64)
    if not _isfinite(got).all():
        where = tuple(int(i) for i in np.argwhere(~_isfinite(got))[0])
        raise AssertionError(f"{name}: contains NaN or inf (first at index {where})")
    error = _abs(got - want)
    allowed = atol + rtol * _abs(want)
    excess = error - allowed
    if got.size and excess.max() > 0 and not reveal:  # no index or value: a hidden expected output
        with np.errstate(divide="ignore"):
            ratio = float((error / allowed).max()) if allowed.min() > 0 else float("inf")
        rounded = float(f"{ratio:.2g}")  # two significant figures: how far, not where the value is
        times = f"{rounded:,.0f}" if 10 <= rounded < float("inf") else f"{rounded:g}"
        # where, never what: the index of the first value out of tolerance (a row, a token, a head
        # the student can look at), as compare_equal gives for entries
        first = tuple(int(i) for i in np.argwhere(excess > 0)[0])
        at = f"; the first at index {first}" if first else ""
        raise AssertionError(
            f"{name}: {int((excess > 0).sum())} of {got.size} values out of tolerance{at}; the largest "
            f"error is {times} times the tolerance (atol={atol:g}, rtol={rtol:g})"
        )
    if got.size and excess.max() > 0:
        worst = _unravel(int(_argmax(excess)), got.shape)
        at = tuple(int(i) for i in worst)
        raise AssertionError(
            f"{name}: max abs error {error.max():.3g} (tolerance atol={atol:g}, rtol={rtol:g}); "
            f"worst at index {at}: got {got[worst]:.6g}, expected {want[worst]:.6g}; "
            f"{int((excess > 0).sum())} of {got.size} values out of tolerance"
        )


def check_equal(name: str, value: Any, expected: Any, weight: float = 1.0) -> None:
    want = _record_against("equal", name, value, expected, weight)
    if want is None:
        return
    compare_equal(name, value, want)


def _utf8(name: str, value: Any) -> np.ndarray:
    if not isinstance(value, str):
        raise AssertionError(f"{name}: expected a str, got {type(value).__name__}: {value!r:.100}")
    return np.frombuffer(value.encode("utf-8"), dtype=np.uint8)


def _decoded(value: Any) -> str:
    """A text as recorded or saved: UTF-8 bytes (a uint8 array), or already a str."""
    if isinstance(value, str):
        return value
    return bytes(np.asarray(value, dtype=np.uint8).reshape(-1)).decode("utf-8", errors="replace")


def check_text(name: str, value: Any, expected: Any, weight: float = 1.0) -> None:
    """``value`` is the text ``expected`` (a str, or its UTF-8 bytes as saved in a fixture); a
    difference is told in characters: how many, and where (at the start, at the end, or from
    which character on)."""
    got = _utf8(name, value)
    if isinstance(expected, Withheld):
        record.write("text", name, got, expected, **_weight(weight))
        return
    want = _utf8(name, expected) if isinstance(expected, str) else to_numpy(expected).astype(np.uint8)
    record.write("text", name, got, want, **_weight(weight))
    compare_text(name, value, want)


def compare_text(name: str, value: Any, expected: Any, reveal: bool = True) -> None:
    """Raise with where ``value`` and ``expected`` differ, in characters; ``reveal=False`` (the
    judge, against a withheld text) never quotes the expected text, only lengths and positions."""
    got, want = _decoded(value), _decoded(expected)
    if got == want:
        return
    n, m = len(got), len(want)
    if not got:
        where = f"got an empty text, expected {m} character(s)"
    elif want.startswith(got):
        where = f"{m - n} character(s) short at the end (got {n}, expected {m})"
    elif got.startswith(want):
        where = f"{n - m} character(s) too many at the end (got {n}, expected {m})"
    elif want.endswith(got):
        where = f"{m - n} character(s) missing at the start (got {n}, expected {m})"
    elif got.endswith(want):
        where = f"{n - m} character(s) too many at the start (got {n}, expected {m})"
    else:
        first = next(i for i, (a, b) in enumerate(zip(got + "\0", want + "\0", strict=False)) if a != b)
        where = f"differs from character {first + 1} on (got {n} characters, expected {m})"
    shown = f": got {got!r:.120}, expected {want!r:.120}" if reveal else ""
    raise AssertionError(f"{name}: {where}{shown}")


def compare_equal(name: str, value: Any, expected: Any, reveal: bool = True) -> None:
    want = to_numpy(expected)
    got = _shape(name, value, want.shape)
    wrong = got != want
    if not wrong.any():
        return
    at = tuple(int(i) for i in np.argwhere(wrong)[0])
    if not reveal:  # where, never what: the student finds the row (a query, a token) to look at
        raise AssertionError(
            f"{name}: {int(wrong.sum())} of {got.size} entries differ; the first at index {at}"
        )
    raise AssertionError(
        f"{name}: {int(wrong.sum())} of {got.size} entries differ; first at index {at}: "
        f"got {got[at]!r}, expected {want[at]!r}"
    )


def _where(index: tuple[int, ...], axes: tuple[str, ...] | None) -> str:
    """``(0, 5, 2)`` -> ``"batch 0, head 5, row 2"`` when axis names are given."""
    if axes and len(axes) == len(index):
        return ", ".join(f"{axis} {i}" for axis, i in zip(axes, index))
    return f"index {index}"


def check_rows_sum_to_one(
    name: str, weights: Any, atol: float = 1e-5, axes: tuple[str, ...] | None = None
) -> None:
    """Every distribution along the last axis is non-negative and sums to 1 (attention rows).

    ``axes`` names the leading axes for the message, e.g. ``("batch", "head", "row")``.
    """
    record.write("rows", name, check_type(name, weights), atol=atol)
    compare_rows(name, weights, atol, axes)


def compare_rows(name: str, weights: Any, atol: float, axes: tuple[str, ...] | None = None) -> None:
    array = check_type(name, weights).astype(np.float64)
    if not _isfinite(array).all():
        at = tuple(int(i) for i in np.argwhere(~_isfinite(array))[0])
        raise AssertionError(
            f"{name}: contains NaN or inf (first at {_where(at, axes and axes + ('column',))})"
        )
    if (array < -atol).any():
        at = tuple(int(i) for i in np.argwhere(array < -atol)[0])
        raise AssertionError(
            f"{name}: probabilities must be >= 0; "
            f"{_where(at, axes and axes + ('column',))} is {array[at]:.4g}"
        )
    sums = array.sum(axis=-1)
    bad = _abs(sums - 1) > atol
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"{name}: rows must sum to 1 (tolerance {atol:g}); {_where(at, axes)} sums to {sums[at]:.4g}"
        )


def check_perplexity(
    name: str, log_probs: Any, targets: Any, limit: float, atol: float = 1e-3, weight: float = 1.0
) -> None:
    """``log_probs`` ``(..., vocab)`` are log-distributions (each row's probabilities sum to 1 within
    ``atol``) and the perplexity of ``targets`` ``(...)`` under them, exp(-mean log p(target)), is at
    most ``limit``. Under grading the judge recomputes it from the record with its own targets."""
    got = check_type(name, log_probs)
    if isinstance(targets, Withheld):
        record.write("perplexity", name, got, targets, limit=limit, atol=atol, **_weight(weight))
        return
    want = check_type(f"{name} (targets)", targets)
    record.write("perplexity", name, got, want, limit=limit, atol=atol, **_weight(weight))
    compare_perplexity(name, got, want, limit, atol)


def compare_perplexity(name: str, log_probs: Any, targets: Any, limit: float, atol: float) -> None:
    want = to_numpy(targets)
    if not np.issubdtype(want.dtype, np.integer):
        raise AssertionError(f"{name}: the targets must be token ids (integers), got {want.dtype}")
    array = check_type(name, log_probs)
    if array.ndim != want.ndim + 1 or array.shape[:-1] != want.shape:
        raise AssertionError(
            f"{name}: expected log-probabilities of shape {(*want.shape, 'vocab')}, got {array.shape}"
        )
    array = array.astype(np.float64)
    if np.isnan(array).any() or (array == np.inf).any():
        at = tuple(int(i) for i in np.argwhere(np.isnan(array) | (array == np.inf))[0])
        raise AssertionError(f"{name}: contains NaN or +inf (first at index {at})")
    if want.size and (want.min() < 0 or want.max() >= array.shape[-1]):
        raise AssertionError(f"{name}: a target id is outside the vocabulary of {array.shape[-1]}")
    top = array.max(axis=-1, keepdims=True)
    log_total = (top + np.log(np.exp(array - top).sum(axis=-1, keepdims=True)))[..., 0]
    bad = _abs(log_total) > atol
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"{name}: not log-probabilities: the probabilities at index {at} sum to "
            f"{np.exp(log_total[at]):.4g}, not 1 (use log_softmax)"
        )
    picked = np.take_along_axis(array, want[..., None].astype(np.int64), axis=-1)
    perplexity = float(np.exp(-picked.mean()))
    if not perplexity <= limit:
        raise AssertionError(
            f"{name}: perplexity {perplexity:.3f} on {want.size} tokens; it must be at most {limit:g}"
        )


def check_accuracy(name: str, predictions: Any, labels: Any, minimum: float, weight: float = 1.0) -> None:
    """The share of ``predictions`` (integer class ids, ``(n,)``) equal to ``labels`` is at least
    ``minimum``. Under grading ``labels`` are withheld: the kernel records only its predictions and
    the judge counts them against its own labels (the kernel never sees them)."""
    got = check_type(name, predictions)
    if isinstance(labels, Withheld):
        record.write("accuracy", name, got, labels, minimum=minimum, **_weight(weight))
        return
    want = check_type(f"{name} (labels)", labels)
    record.write("accuracy", name, got, want, minimum=minimum, **_weight(weight))
    compare_accuracy(name, got, want, minimum)


def compare_accuracy(name: str, predictions: Any, labels: Any, minimum: float) -> None:
    want = to_numpy(labels)
    got = _shape(name, predictions, want.shape)
    if not np.issubdtype(got.dtype, np.integer):
        raise AssertionError(f"{name}: predictions must be class ids (integers), got {got.dtype}")
    right = int((got == want).sum())
    accuracy = right / max(1, want.size)
    if not accuracy >= minimum:
        raise AssertionError(
            f"{name}: accuracy {accuracy:.1%} ({right} of {want.size}); it must be at least {minimum:.0%}"
        )


def check_best_accuracy(
    name: str, predictions: Any, labels: Any, minimum: float, weight: float = 1.0
) -> None:
    """Like :func:`check_accuracy` for each row of ``predictions`` ``(k, n)`` (k alternatives, e.g. one
    per layer) against ``labels`` ``(n,)``: passes when the best row's share right is at least ``minimum``."""
    got = check_type(name, predictions)
    if isinstance(labels, Withheld):
        record.write("best_accuracy", name, got, labels, minimum=minimum, **_weight(weight))
        return
    want = check_type(f"{name} (labels)", labels)
    record.write("best_accuracy", name, got, want, minimum=minimum, **_weight(weight))
    compare_best_accuracy(name, got, want, minimum)


def compare_best_accuracy(name: str, predictions: Any, labels: Any, minimum: float) -> None:
    want = to_numpy(labels)
    got = check_type(name, predictions)
    if got.ndim != want.ndim + 1 or got.shape[1:] != want.shape or not len(got):
        raise AssertionError(
            f"{name}: expected predictions of shape (alternatives, *{want.shape}), got {got.shape}"
        )
    if not np.issubdtype(got.dtype, np.integer):
        raise AssertionError(f"{name}: predictions must be class ids (integers), got {got.dtype}")
    rights = [int((row == want).sum()) for row in got]
    best = int(_argmax(rights))
    accuracy = rights[best] / max(1, want.size)
    if not accuracy >= minimum:
        raise AssertionError(
            f"{name}: the best of {len(got)} ({best}) gets {accuracy:.1%} ({rights[best]} of {want.size}); "
            f"it must be at least {minimum:.0%}"
        )


def check_parity(name: str, value: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-5) -> None:
    """A prerequisite of its test cell, compared as :func:`check_close`: where a *trained* model is
    graded, the test first loads weights of its own into a fresh module of the student's class and
    compares what that module computes (logits, not only their argmax) with what the course's
    solution computes with those weights. Only then do the answers graded next come from the
    module's parameters; a module that looks them up elsewhere fails here. Pays nothing itself;
    when it fails the judge pays nothing for the whole cell."""
    want = _record_against("parity", name, value, expected, atol=atol, rtol=rtol)
    if want is None:
        return
    compare_close(name, value, want, atol, rtol)


def check_progress(name: str, value: Any, expected: Any, limit: float = 0.5) -> None:
    """A prerequisite of its test cell: parameters ``value`` (all of a model's, flattened) that were
    trained moved from where training started towards where the course's loop ends. ``expected`` is
    ``(2, n)``: the start and the end; the distance left, ``|value - end|``, must be at most ``limit``
    times the whole way, ``|start - end|``. A loop that trains nothing fails it; pays nothing itself,
    and when it fails the judge pays nothing for the whole cell."""
    got = check_type(name, value)
    if isinstance(expected, Withheld):
        record.write("progress", name, got, expected, limit=limit)
        return
    want = check_type(f"{name} (start and end)", expected)
    record.write("progress", name, got, want, limit=limit)
    compare_progress(name, got, want, limit)


def compare_progress(name: str, value: Any, expected: Any, limit: float) -> None:
    start, end = to_numpy(expected).astype(np.float64)
    got = _shape(name, value, start.shape).astype(np.float64)
    if not _isfinite(got).all():
        raise AssertionError(f"{name}: the parameters contain NaN or inf")
    whole, left = float(_norm(start - end)), float(_norm(got - end))
    if not left <= limit * whole:
        moved = 1 - left / whole if whole > 0 else 0.0
        raise AssertionError(
            f"{name}: the parameters moved {max(moved, 0.0):.0%} of the way from where training "
            f"started to where it should end; at least {1 - limit:.0%} is needed "
            f"(a loop that never updates them moves 0 %)"
        )


@dataclass(frozen=True)
class Kind:
    """One kind of check (a record's ``kind``)."""

    #: the checks that record it: the integrity scan flags an answer that redefines them
    checks: tuple[Callable, ...]
    #: the judge's comparison: ``(label, got, expected, spec)`` raises AssertionError when it fails
    #: (``spec``: the check as the instructor's run recorded it: tolerances, limits)
    judge: Callable[[str, Any, Any, dict], None]
    #: against a hidden fixture value, it pays points (a shape or a sum of rows could be guessed)
    pays: bool = False
    #: a prerequisite of its cell: it pays nothing, and when it fails the whole cell pays nothing
    gate: bool = False
    #: the judge needs an expected value for it (a sum of rows is checked against 1)
    expects: bool = True


KINDS: dict[str, Kind] = {
    "close": Kind(
        (check_close,),
        lambda label, got, want, spec: compare_close(
            label, got, want, spec["atol"], spec["rtol"], reveal=False
        ),
        pays=True,
    ),
    "equal": Kind(
        (check_equal,),
        lambda label, got, want, spec: compare_equal(label, got, want, reveal=False),
        pays=True,
    ),
    "text": Kind(
        (check_text,), lambda label, got, want, spec: compare_text(label, got, want, reveal=False), pays=True
    ),
    "perplexity": Kind(
        (check_perplexity,),
        lambda label, got, want, spec: compare_perplexity(label, got, want, spec["limit"], spec["atol"]),
        pays=True,
    ),
    "accuracy": Kind(
        (check_accuracy,),
        lambda label, got, want, spec: compare_accuracy(label, got, want, spec["minimum"]),
        pays=True,
    ),
    "best_accuracy": Kind(
        (check_best_accuracy,),
        lambda label, got, want, spec: compare_best_accuracy(label, got, want, spec["minimum"]),
        pays=True,
    ),
    "parity": Kind(
        (check_parity,),
        lambda label, got, want, spec: compare_close(
            label, got, want, spec["atol"], spec["rtol"], reveal=False
        ),
        gate=True,
    ),
    "progress": Kind(
        (check_progress,),
        lambda label, got, want, spec: compare_progress(label, got, want, spec["limit"]),
        gate=True,
    ),
    "shape": Kind((check_shape,), lambda label, got, want, spec: compare_shape(label, got, want)),
    "rows": Kind(
        (check_rows_sum_to_one,),
        lambda label, got, want, spec: compare_rows(label, got, spec["atol"]),
        expects=False,
    ),
}


class ReadOnlyModule(types.ModuleType):
    """Student code shares the kernel with the tests: ``course.checks.check_close = ...`` must
    not turn a failing test into a pass. (Test cells also re-import the checks they use, so a
    redefinition of the global name does not count either; integrity.py flags both attempts.)
    :mod:`course.figures` is read-only the same way."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self.__name__} is read-only: {name} cannot be replaced")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{self.__name__} is read-only: {name} cannot be deleted")


sys.modules[__name__].__class__ = ReadOnlyModule
