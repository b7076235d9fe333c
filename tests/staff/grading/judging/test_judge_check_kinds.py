"""A check kind is one entry in course.checks.KINDS: a toy kind added there, and nowhere else, is
recorded by its check, read back by the records' reader, paid by the judge against a withheld value,
and protected by the integrity scan (tests the seams of the four places that used to list kinds)."""

from __future__ import annotations

import numpy as np
import pytest

from course import checks, record
from course.settings import ROOT
from staff.grading.execution.records import BadRecords, read_records
from staff.grading.integrity import static_scan
from staff.grading.judging import judge

REF = "hidden/01_attention/softmax:0.expected"  # any withheld fixture value


def check_same_signs(name, value, expected):
    """The toy kind's check: records under its kind, compares here when the expected value is known."""
    got = checks.check_type(name, value)
    record.write("same_signs", name, got, expected)
    if not isinstance(expected, record.Withheld):
        compare_same_signs(name, got, expected, {})


def compare_same_signs(label, got, want, spec):
    if not np.array_equal(np.sign(got), np.sign(want)):
        raise AssertionError(f"{label}: {int((np.sign(got) != np.sign(want)).sum())} signs differ")


@pytest.fixture
def toy_kind(monkeypatch):
    monkeypatch.setitem(
        checks.KINDS, "same_signs", checks.Kind((check_same_signs,), compare_same_signs, pays=True)
    )


def _withheld():
    value = judge.Fixtures(ROOT / "fixtures").value(REF, [])
    return value, record.Withheld(REF, value.shape, value.dtype.str)


def test_a_new_kind_is_recorded_read_judged_and_paid(records, toy_kind):
    value, hidden = _withheld()
    spec = {"kind": "same_signs", "label": "signs", "ref": REF, "index": []}
    assert judge.withheld(spec), "it pays against a withheld value"
    fixtures = judge.Fixtures(ROOT / "fixtures")
    check_same_signs("signs", value * 3, hidden)
    assert judge.verdict([spec], read_records(records), fixtures).reason is None
    for path in records.iterdir():
        path.unlink()
    check_same_signs("signs", -value, hidden)
    assert judge.verdict([spec], read_records(records), fixtures).reason.startswith("signs: ")


def test_without_its_entry_the_kind_is_refused(records):
    value, hidden = _withheld()
    record.write("same_signs", "signs", value, hidden)
    with pytest.raises(BadRecords, match="unknown kind 'same_signs'"):
        read_records(records)


def test_its_check_is_protected_from_redefinition(toy_kind):
    source = "def check_same_signs(name, value, expected):\n    pass\n"
    assert any("check_same_signs" in flag for flag in static_scan.scan_source(source))
    assert "check_perplexity" in static_scan.comparisons() and "check_progress" in static_scan.comparisons()
