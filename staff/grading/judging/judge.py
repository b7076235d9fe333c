"""The judge: the points of every graded test cell, decided outside the student's kernel.

A kernel can be changed by the code it runs (how later cells compile, ``sys.modules``, exception
handling, the notebook's own helpers), so what it prints or raises cannot decide a grade. Under
grading every check in a test cell writes a record (:mod:`course.record`); this module, in a
process that never runs student code, reads those records (safetensors only, no pickle, size
limits, no symlinks) and compares them with the trusted fixtures using the same comparison
functions and messages as the visible checks.

What a cell must record comes from the instructor's own solution (:mod:`cell_checks`: per test
cell, the checks its run made: kind, label, tolerance, which fixture value each compares with, and
the instructor's value where the cell computes its own expected value). A student's cell passes
when it made exactly those checks, each within its tolerance, against the same trusted values.
Records that are not those checks (another label, kind or value compared with, or more of them)
were written by code the test called, not by the test: the whole cell fails and the submission is
flagged (``Verdict.foreign``). Its points split over
its checks against withheld values, by each check's ``weight`` (equal unless the check says
otherwise): a cell that gets three of four cases right earns three quarters, and each check's
result comes with a reason that names the case and the kind of failure, never an expected value
(:class:`Verdict`; :mod:`points` writes the points into nbgrader's gradebook and the reasons into
the graded notebook). Checks against a value the cell computed itself (a literal mask, a shape) are
conditions, compared with the instructor's value: they pay nothing, and a failed one costs the cell
as much as a failed check of the same weight. A check the cell never reached (it stopped at an error) fails as
"not recorded"; more records than the instructor's run made fail the whole cell.
Which cell wrote a record is fixed from outside the kernel: the runner opens a records folder
for each graded test cell only while it runs (:mod:`cells`). A cell pays points only when at least
one of its checks compares with a *hidden* fixture value the kernel never had (public fixtures
ship to students; values the kernel computed could be forged); ``make fixtures`` refuses any
graded cell that would not, and any cell declared to be decided in the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from course import checks
from course.record import decode_index
from staff.grading.execution.records import Record


class Fixtures:
    """The trusted fixtures (expected outputs included), loaded once per file."""

    def __init__(self, root: Path):
        self.root, self.files = root, {}

    def value(self, ref: str, index: list) -> np.ndarray:
        where, _, key = ref.partition(":")
        if where not in self.files:
            visibility, assignment, name = where.split("/")
            self.files[where] = load_file(str(self.root / visibility / assignment / f"{name}.safetensors"))
        value = self.files[where][key]
        for item in index:
            value = value[decode_index(item)]
        return value


class Foreign(AssertionError):
    """A record that is not the check the instructor's run made in its place: written by other code."""


def _compare(spec: dict, rec: Record, fixtures: Fixtures) -> None:
    """Raise AssertionError (with the checks' own message) unless the record passes ``spec``."""
    label = spec["label"]
    if (rec.kind, rec.ref, rec.index, rec.label) != (spec["kind"], spec["ref"], spec["index"], label):
        raise Foreign(f"{label}: the cell did not make this check (found {rec.kind} {rec.label[:80]!r})")
    if rec.got is None:
        raise AssertionError(f"{label}: nothing was recorded")
    if spec["ref"]:
        expected = fixtures.value(spec["ref"], spec["index"])
    elif "expected" in spec:  # from the instructor's run: a record's own expected value is the kernel's word
        expected = np.asarray(spec["expected"], dtype=spec["expected_dtype"])
    elif not checks.KINDS[spec["kind"]].expects:
        expected = None
    else:
        raise AssertionError(f"{label}: the judge has no expected value for this check (run `make fixtures`)")
    checks.KINDS[spec["kind"]].judge(label, rec.got, expected, spec)


def withheld(spec: dict) -> bool:
    """A check of values against a hidden fixture value the kernel never had (the only kind that
    pays points: public fixtures ship to students, values the kernel computed could be forged, and
    a shape or a sum of rows could be guessed from the inputs)."""
    kind = checks.KINDS.get(spec["kind"])
    return bool(kind and kind.pays) and str(spec.get("ref") or "").startswith("hidden/")


@dataclass
class Check:
    """One check's result: its label (from the instructor's run), its share of the cell's points
    (``weight``; conditions pay nothing), and None when it passed, else why not."""

    label: str
    weight: float
    paid: bool
    reason: str | None
    gate: bool = False  # a prerequisite (checks.KINDS' gate): failed, the whole cell pays nothing


@dataclass
class Verdict:
    """A judged test cell: each check's result, or ``problem`` when the whole cell fails."""

    checks: list[Check]
    problem: str | None = None
    foreign: str | None = None  # records the cell's own checks did not make: why (for a person)

    @property
    def fraction(self) -> float:
        """The share of the cell's points earned: passed withheld checks' weight, less failed
        conditions' weight, over all withheld checks' weight; nothing when a prerequisite (a gate) failed."""
        paid = sum(c.weight for c in self.checks if c.paid)
        if self.problem or not paid or any(c.gate and c.reason is not None for c in self.checks):
            return 0.0
        earned = sum(c.weight for c in self.checks if c.reason is None and c.paid)
        earned -= sum(c.weight for c in self.checks if c.reason is not None and not c.paid)
        return max(0.0, earned) / paid

    @property
    def reason(self) -> str | None:
        """None at full marks, else the first reason (what the canary and the instructor see)."""
        if self.problem:
            return self.problem
        failed = [c for c in self.checks if c.reason is not None]
        return (
            None
            if not failed
            else failed[0].reason + (f" (and {len(failed) - 1} more)" if len(failed) > 1 else "")
        )


def verdict(specs: list[dict], records: list[Record], fixtures: Fixtures) -> Verdict:
    """Each check of a test cell against the record made in its place (in order)."""
    if not any(withheld(spec) for spec in specs):
        return Verdict(
            [], "this test compares with no withheld value, so it cannot pay points (run `make fixtures`)"
        )
    if len(records) > len(specs):
        why = f"the cell recorded {len(records)} checks, its tests make {len(specs)}"
        return Verdict([], why, foreign=why)
    if not records:
        return Verdict(
            [
                Check(s["label"], float(s.get("weight", 1.0)), withheld(s), f"{s['label']}: not recorded")
                for s in specs
            ],
            f"nothing was recorded while this test cell ran (it makes {len(specs)} checks): it stopped "
            f"before its first check, or its code did not run",
        )
    results = []
    for i, spec in enumerate(specs):
        reason = None
        if i >= len(records):
            reason = f"{spec['label']}: not recorded (the cell stopped after {len(records)} of {len(specs)} checks, at an error)"
        else:
            try:
                _compare(spec, records[i], fixtures)
            except Foreign as error:  # not this cell's checks: none of its records can be trusted
                why = f"check {i + 1} of {len(specs)}: {error}"
                return Verdict(
                    [Check(s["label"], float(s.get("weight", 1.0)), withheld(s), why) for s in specs],
                    f"its records are not the checks its tests make ({why})",
                    foreign=why,
                )
            except AssertionError as error:
                reason = str(error)
            except Exception as error:  # a malformed record must fail the check, not the grader
                reason = f"{spec['label']}: cannot be compared ({type(error).__name__}: {str(error)[:120]})"
        results.append(
            Check(
                spec["label"],
                float(spec.get("weight", 1.0)),
                withheld(spec),
                reason,
                gate=checks.KINDS[spec["kind"]].gate,
            )
        )
    return Verdict(results)


def judge_notebook(
    records: dict[str, list[Record]], specs: dict[str, list[dict]], fixtures: Fixtures
) -> dict[str, Verdict]:
    """{grade_id: :class:`Verdict`} for every graded test cell, from the records the runner took
    from each cell while it ran (``records``: grade id -> records)."""
    return {
        grade_id: verdict(cell_specs, records.get(grade_id, []), fixtures)
        for grade_id, cell_specs in specs.items()
    }
