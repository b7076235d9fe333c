"""What each exercise promises about its inputs, and the check that every saved case keeps it.

A hidden test may only feed an exercise inputs its released text promises: a student who builds a
causal mask from sequence lengths, reasonably, under a sentence saying "padded on the right" must
not lose points to a left-padded row. Each assignment states its contract in its folder
(``assignments/05_decoder/contract.py``, beside its recipe ``recipe.py``) as
``CONTRACT = {fixture name: (Term, ...)}``, with the terms this module makes. A term quotes the
release's own words (``promise``: a test finds them, whitespace aside, in the released notebook),
names the inputs it bounds (``keys``: ``fnmatch`` patterns) and checks one case. Every input of every hidden case must be bounded by some
term: an input no promise covers is a finding too.

``make fixtures`` refuses to write an assignment with a case outside its contract
(:func:`refuse`); ``make release``'s check and the tests check the committed files
(:func:`check_saved`). Where a hidden case is worth keeping (left padding in assignment 5), the
release promises it.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from staff.authoring import assignments
from staff.fixture_format import OUTPUTS_FILE

Case = Mapping[str, np.ndarray]
#: None when the case keeps the term, else what breaks it, in the exercise's words.
Verdict = str | None


@dataclass(frozen=True)
class Term:
    promise: str
    keys: tuple[str, ...]
    holds: Callable[[Case], Verdict]

    def bounds(self, key: str) -> bool:
        return any(fnmatch.fnmatchcase(key, pattern) for pattern in self.keys)


def _keys(keys: str | Iterable[str]) -> tuple[str, ...]:
    return (keys,) if isinstance(keys, str) else tuple(keys)


def term(promise: str, keys: str | Iterable[str], holds: Callable[[Case], Verdict]) -> Term:
    """A term checked by ``holds`` (for what no builder below says)."""
    return Term(promise, _keys(keys), holds)


def _matching(case: Case, patterns: tuple[str, ...]) -> list[str]:
    return sorted(k for k in case if any(fnmatch.fnmatchcase(k, p) for p in patterns))


def shapes(promise: str, **axes: str) -> Term:
    """Each input has the named axes, and an axis named alike has one size across the inputs:
    ``shapes("...", q="batch heads query d_head", k="batch heads key d_head")``. A name ``_`` is
    free; a number is a fixed size."""
    wanted = {key: tuple(spec.split()) for key, spec in axes.items()}

    def holds(case: Case) -> Verdict:
        sizes: dict[str, tuple[str, int]] = {}
        for key, names in wanted.items():
            shape = np.shape(case[key])
            if len(shape) != len(names):
                return (
                    f"{key} has {len(shape)} axes {shape}, the text gives {len(names)} ({', '.join(names)})"
                )
            for name, size in zip(names, shape):
                if name.isdigit() and size != int(name):
                    return f"{key}'s axis {name!r} is {size}"
                if name == "_" or name.isdigit():
                    continue
                seen = sizes.setdefault(name, (key, size))
                if seen[1] != size:
                    return f"{name}: {size} in {key}, {seen[1]} in {seen[0]}"
        return None

    return Term(promise, tuple(wanted), holds)


def floats(promise: str, keys: str | Iterable[str]) -> Term:
    """Finite floating-point arrays (random weights, logits, vectors)."""
    patterns = _keys(keys)

    def holds(case: Case) -> Verdict:
        for key in _matching(case, patterns):
            value = np.asarray(case[key])
            if value.dtype.kind != "f":
                return f"{key} is {value.dtype}, not floating point"
            if not np.isfinite(value).all():
                return f"{key} holds {int((~np.isfinite(value)).sum())} value(s) that are not finite"
        return None

    return Term(promise, patterns, holds)


def integers(
    promise: str,
    keys: str | Iterable[str],
    low: int | None = None,
    high: int | Callable[[Case], int] | None = None,
) -> Term:
    """Integer arrays (or scalars) within ``[low, high]``; ``high`` may depend on the case (a vocabulary)."""
    patterns = _keys(keys)

    def holds(case: Case) -> Verdict:
        top = high(case) if callable(high) else high
        for key in _matching(case, patterns):
            value = np.asarray(case[key])
            if value.dtype.kind not in "iub":
                return f"{key} is {value.dtype}, not integers"
            if value.size and low is not None and value.min() < low:
                return f"{key} goes down to {int(value.min())}, below {low}"
            if value.size and top is not None and value.max() > top:
                return f"{key} goes up to {int(value.max())}, above {top}"
        return None

    return Term(promise, patterns, holds)


def booleans(promise: str, keys: str | Iterable[str]) -> Term:
    patterns = _keys(keys)

    def holds(case: Case) -> Verdict:
        for key in _matching(case, patterns):
            if np.asarray(case[key]).dtype != np.bool_:
                return f"{key} is {np.asarray(case[key]).dtype}, not boolean"
        return None

    return Term(promise, patterns, holds)


def padding(promise: str, key: str, side: str, every_row_real: bool = True) -> Term:
    """A 0/1 mask over the last axis (1: a real token): ``side`` is where the padding may be,
    ``"right"`` (ones, then zeros), ``"left"`` or ``"either"`` (ones in one run, at either end);
    ``every_row_real``: no row is all padding."""
    if side not in ("right", "left", "either"):
        raise ValueError(f"side must be 'right', 'left' or 'either', got {side!r}")

    def holds(case: Case) -> Verdict:
        mask = np.asarray(case[key])
        if mask.dtype.kind not in "iub" or not np.isin(mask, (0, 1)).all():
            return f"{key} holds values other than 0 and 1"
        for row, values in enumerate(mask.reshape(-1, mask.shape[-1]).astype(int)):
            where = f"{key} row {row}"
            if every_row_real and not values.any():
                return f"{where} is all padding"
            ones = np.flatnonzero(values)
            run = ones.size == 0 or ones[-1] - ones[0] + 1 == ones.size
            right = not values.any() or (run and ones[0] == 0)
            left = not values.any() or (run and ones[-1] == values.size - 1)
            if side == "right" and not right:
                return f"{where} is not padded on the right ({values.tolist()})"
            if side == "left" and not left:
                return f"{where} is not padded on the left ({values.tolist()})"
            if side == "either" and not (right or left):
                return f"{where} has padding inside the sequence ({values.tolist()})"
        return None

    return Term(promise, (key,), holds)


def text(promise: str, keys: str | Iterable[str], empty: bool = False) -> Term:
    """UTF-8 text saved as bytes (``uint8``); ``empty``: the empty text is promised too."""
    patterns = _keys(keys)

    def holds(case: Case) -> Verdict:
        for key in _matching(case, patterns):
            value = np.asarray(case[key])
            if value.dtype != np.uint8 or value.ndim != 1:
                return f"{key} is not text saved as bytes"
            try:
                bytes(value).decode("utf-8")
            except UnicodeDecodeError:
                return f"{key} is not UTF-8 text"
            if not empty and value.size == 0:
                return f"{key} is empty"
        return None

    return Term(promise, patterns, holds)


def one_of(promise: str, key: str, values: Iterable) -> Term:
    allowed = tuple(values)

    def holds(case: Case) -> Verdict:
        value = np.asarray(case[key]).tolist()
        return None if value in allowed else f"{key} is {value}, not one of {list(allowed)}"

    return Term(promise, (key,), holds)


# --- checking ------------------------------------------------------------------------------------


# --- checks several assignments' contracts share ------------------------------------------------


def scalar(case, key: str) -> int:
    """A case's whole-number input ``key``, as an int."""
    return int(np.asarray(case[key]))


def heads_divide(width_of):
    """n_heads divides the width (split_heads gives each head width // n_heads)."""

    def holds(case) -> str | None:
        heads, width = scalar(case, "n_heads"), width_of(case)
        return (
            None if heads >= 1 and width % heads == 0 else f"d_model {width} is not n_heads {heads} × d_head"
        )

    return holds


def mismatched(found, expected: dict[str, tuple[int, ...]], prefix: str) -> str | None:
    """Which parameter (``prefix`` + name) differs from ``expected``'s names and shapes, in the exercise's words."""
    found = {k[len(prefix) :]: tuple(np.shape(v)) for k, v in found.items() if k.startswith(prefix)}
    if set(found) != set(expected):
        missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
        return f"the parameters differ from the layer's: missing {missing[:3]}, extra {extra[:3]}"
    wrong = [k for k in sorted(expected) if found[k] != expected[k]]
    return f"{prefix}{wrong[0]} is {found[wrong[0]]}, not {expected[wrong[0]]}" if wrong else None


def graded(case, keys, sizes) -> str | None:
    """The first of ``keys`` whose value is not the graded run's ``sizes``."""
    wrong = [k for k in keys if scalar(case, k) != sizes[k]]
    return f"{wrong[0]} is {scalar(case, wrong[0])}, the graded run's is {sizes[wrong[0]]}" if wrong else None


def settings_are(expected: dict):
    """A term's check: each setting is the number the text says (to 1e-12)."""

    def holds(case) -> str | None:
        for key, value in expected.items():
            if not np.isclose(float(np.asarray(case[key])), float(value), rtol=1e-12, atol=0):
                return f"{key} is {np.asarray(case[key]).tolist()}, the text says {value}"
        return None

    return holds


def cases_of(arrays: Mapping[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """A fixture's cases (keys ``"<case>.<array>"``); a fixture saved without cases is one case."""
    grouped: dict[int, dict[str, np.ndarray]] = {}
    for key, value in arrays.items():
        case, dot, array = key.partition(".")
        if not (dot and case.isdigit()):
            return [dict(arrays)]
        grouped.setdefault(int(case), {})[array] = value
    return [grouped[i] for i in sorted(grouped)]


def is_output(key: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(key, p) for p in patterns)


def violations(
    assignment: str,
    fixtures: Mapping[tuple[str, str], Mapping[str, np.ndarray]],
    contract: Mapping[str, tuple[Term, ...]],
    outputs: Mapping[str, Iterable[str]],
) -> tuple[list[str], int]:
    """What breaks the contract in ``{(visibility, name): arrays}``, and how many hidden cases were
    checked. A hidden fixture without a contract, or a hidden input no term bounds, is reported."""
    problems, checked = [], 0
    for (visibility, name), arrays in sorted(fixtures.items()):
        terms = contract.get(name, ())
        if visibility == "hidden" and not terms:
            problems.append(
                f"{assignment}/{name}: hidden cases and no contract (staff/authoring/assignments/{assignment}/contract.py)"
            )
            continue
        for index, case in enumerate(cases_of(arrays)):
            where = f"{assignment}/{name} ({visibility} case {index})"
            inputs = [k for k in case if not is_output(k, outputs.get(name, ()))]
            if visibility == "hidden":
                checked += 1
                loose = [k for k in inputs if not any(t.bounds(k) for t in terms)]
                if loose:
                    problems.append(f"{where}: no promise bounds {', '.join(loose[:5])}")
            for t in terms:
                try:
                    verdict = t.holds(case)
                except KeyError as missing:
                    verdict = f"has no input {missing}"
                if verdict:
                    problems.append(f"{where}: {verdict}, outside the promise {t.promise!r}")
    return problems, checked


def refuse(assignment: str, fixtures: Mapping[tuple[str, str], Mapping[str, np.ndarray]]) -> int:
    """Raise when a built case is outside its exercise's contract (``make fixtures`` then writes
    nothing for the assignment); return the number of hidden cases checked."""
    recipe = assignments.recipe(assignment)
    problems, checked = violations(
        assignment, fixtures, assignments.contract(assignment), getattr(recipe, "OUTPUTS", {})
    )
    if problems:
        raise ValueError(
            f"fixtures: {len(problems)} case(s) of {assignment} outside what its release promises; "
            "change the recipe, or promise the case in the notebook's text and in staff/authoring/assignments/"
            f"{assignment}/contract.py:\n  " + "\n  ".join(problems)
        )
    return checked


def saved(root: Path, assignment: str) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    return {
        (visibility, path.stem): load_file(str(path))
        for visibility in ("public", "hidden")
        for path in sorted((root / visibility / assignment).glob("*.safetensors"))
    }


def check_saved(root: Path, assignment: str) -> tuple[list[str], int]:
    """The committed fixtures of one assignment against its contract."""
    outputs = json.loads((root / OUTPUTS_FILE).read_text()).get(assignment, {})
    return violations(assignment, saved(root, assignment), assignments.contract(assignment), outputs)


def _words(text_: str) -> str:
    return re.sub(r"\s+", " ", text_).strip()


def unpromised(contract: Mapping[str, tuple[Term, ...]], notebook_text: str) -> list[str]:
    """The promises a contract quotes that the released notebook does not say (whitespace aside)."""
    said = _words(notebook_text)
    return sorted({t.promise for terms in contract.values() for t in terms if _words(t.promise) not in said})
