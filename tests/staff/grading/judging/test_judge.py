"""The judge, fed what a hostile kernel could leave in its records folder (no kernel needed)."""

from __future__ import annotations

import os
import re

import nbformat
import numpy as np
import pytest
from safetensors.numpy import save_file

from course import record
from course.settings import ROOT
from staff import course_dir
from staff.grading.execution import cells
from staff.grading.execution.records import BadRecords, Record, read_records
from staff.grading.judging import cell_checks, judge

SPEC = {
    "kind": "close",
    "label": "softmax(x)",
    "ref": "hidden/01_attention/softmax:0.expected",
    "index": [],
    "atol": 1e-8,
    "rtol": 1e-5,
}


def expected(key="0.expected"):
    return judge.Fixtures(ROOT / "fixtures").value(f"hidden/01_attention/softmax:{key}", [])


def withheld(key="0.expected"):
    value = expected(key)
    return record.Withheld(f"hidden/01_attention/softmax:{key}", value.shape, value.dtype.str)


def test_a_correct_record_passes_and_a_wrong_one_fails_with_the_checks_message(records):
    record.write("close", "softmax(x)", expected(), withheld(), atol=1e-8, rtol=1e-5)
    fixtures = judge.Fixtures(ROOT / "fixtures")
    assert judge.verdict([SPEC], read_records(records), fixtures).reason is None
    for path in records.iterdir():
        path.unlink()
    record.write("close", "softmax(x)", expected() + 1e-3, withheld(), atol=1e-8, rtol=1e-5)
    reason = judge.verdict([SPEC], read_records(records), fixtures).reason
    size = expected().size
    assert (
        reason.startswith(
            f"softmax(x): {size} of {size} values out of tolerance; the first at index (0, 0); "
        )
        and "times the tolerance (atol=1e-08, rtol=1e-05)" in reason
    )


def test_the_tolerance_and_the_fixture_are_the_instructors_not_the_records(records):
    fixtures = judge.Fixtures(ROOT / "fixtures")
    record.write(
        "close", "softmax(x)", expected() + 1e-3, withheld(), atol=1.0, rtol=1.0
    )  # a loose tolerance
    assert "out of tolerance" in judge.verdict([SPEC], read_records(records), fixtures).reason
    for path in records.iterdir():
        path.unlink()
    record.write("close", "softmax(x)", expected("1.expected"), withheld("1.expected"))  # an easier case
    assert "did not make this check" in judge.verdict([SPEC], read_records(records), fixtures).reason


def test_missing_and_extra_checks_fail(records):
    fixtures = judge.Fixtures(ROOT / "fixtures")
    assert "nothing was recorded" in judge.verdict([SPEC], [], fixtures).reason
    record.write("close", "softmax(x)", expected(), withheld(), atol=1e-8, rtol=1e-5)
    record.write("close", "softmax(x)", expected(), withheld(), atol=1e-8, rtol=1e-5)
    assert "recorded 2 checks" in judge.verdict([SPEC], read_records(records), fixtures).reason


def test_links_oversized_and_malformed_records_are_refused(records):
    os.symlink(
        ROOT / "fixtures" / "hidden" / "01_attention" / "softmax.safetensors",
        records / "000000-1.safetensors",
    )
    with pytest.raises(BadRecords, match="not a regular file"):
        read_records(records)
    (records / "000000-1.safetensors").unlink()
    (records / "000001-1.safetensors").write_bytes(b"\x00" * 16)
    with pytest.raises(BadRecords, match="not a valid record"):
        read_records(records)
    (records / "000001-1.safetensors").unlink()
    save_file({"got": np.zeros(3)}, str(records / "000002-1.safetensors"), metadata={"kind": "exec"})
    with pytest.raises(BadRecords, match="unknown kind"):
        read_records(records)
    (records / "000002-1.safetensors").unlink()
    big = records / "000003-1.safetensors"
    big.write_bytes(b"\x00" * (record.MAX_RECORD_BYTES + 2**17))
    with pytest.raises(BadRecords, match="larger than"):
        read_records(records)


def test_withheld_values_cannot_be_read_in_the_kernel():
    value = withheld()
    assert value[1:, :2].shape == expected()[1:, :2].shape
    with pytest.raises(TypeError, match="not in this kernel"):
        np.asarray(value)


@pytest.mark.parametrize("assignment", course_dir.assignments())
def test_every_graded_test_cell_pays_only_for_a_withheld_value(assignment):
    """No visible check carries points, no cell is decided in the kernel, and every graded test cell
    compares with at least one hidden fixture value that the grading kernel never has."""
    from staff.authoring import assignments

    source = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
    specs = cell_checks.load_checks(assignment, ROOT / "fixtures", source)  # raises when out of date
    graded = {c.metadata["nbgrader"]["grade_id"]: c for c in source.cells if cells.graded_test(c)}
    assert graded and set(specs) == set(graded)
    assert cell_checks.unpaid_cells(specs) == []
    for grade_id, cell in graded.items():
        assert "### BEGIN HIDDEN TESTS" in cell.source, f"{grade_id}: a graded cell that is not hidden"
        assert not cell.metadata.get("course", {}).get("in_kernel"), grade_id
    outputs = getattr(assignments.recipe(assignment), "OUTPUTS", {})
    for spec in (s for cell_specs in specs.values() for s in cell_specs if judge.withheld(s)):
        where, _, key = spec["ref"].partition(":")
        name = where.split("/")[-1]
        assert any(
            __import__("fnmatch").fnmatch(key.partition(".")[2] or key, p) for p in outputs.get(name, ())
        ), (
            f"{spec['ref']} is compared as withheld but is not in the recipe's OUTPUTS (the kernel would have it)"
        )


def test_a_cell_without_records_or_without_a_withheld_value_fails(records):
    fixtures = judge.Fixtures(ROOT / "fixtures")
    assert "nothing was recorded while this test cell ran" in judge.verdict([SPEC], [], fixtures).reason
    public = {**SPEC, "ref": "public/01_attention/softmax:0.expected"}
    record.write("close", "softmax(x)", expected(), withheld(), atol=1e-8, rtol=1e-5)
    assert "no withheld value" in judge.verdict([public], read_records(records), fixtures).reason


def test_perplexity_is_the_judges_own_on_its_own_targets_and_limit(records):
    """Assignment 5's trained model: the kernel records log-probabilities; the judge computes the
    perplexity with the withheld targets and the limit of the instructor's run."""
    fixtures = judge.Fixtures(ROOT / "fixtures")
    ref = "hidden/05_decoder/decoding:0.sampled"  # withheld token ids, as the characters a model is scored on
    targets = fixtures.value(ref, [])
    spec = {
        "kind": "perplexity",
        "label": "held-out perplexity",
        "ref": ref,
        "index": [],
        "limit": 11.0,
        "atol": 1e-3,
    }
    target = record.Withheld(ref, targets.shape, targets.dtype.str)

    def verdict_of(log_probs, **numbers):
        for path in records.glob("*"):
            path.unlink()
        record.write(
            "perplexity",
            "held-out perplexity",
            log_probs.astype(np.float32),
            target,
            **{"limit": 11.0, "atol": 1e-3, **numbers},
        )
        return judge.verdict([spec], read_records(records), fixtures).reason

    good = np.full((*targets.shape, 96), np.log(0.1 / 95), dtype=np.float64)  # 0.9 on the right character
    np.put_along_axis(good, targets[..., None].astype(np.int64), np.log(0.9), axis=-1)
    assert verdict_of(good) is None
    uniform = np.full((*targets.shape, 96), -np.log(96))
    assert "perplexity 96.000" in verdict_of(uniform) and "at most 11" in verdict_of(uniform, limit=1e9)
    assert "not log-probabilities" in verdict_of(np.zeros((*targets.shape, 96)))  # all ones: sums to 96
    shifted = np.roll(good, 1, axis=1)  # confident about the wrong characters
    assert re.search(
        rf"held-out perplexity: perplexity [0-9.]+ on {targets.size} tokens; it must be at most 11$",
        verdict_of(shifted),
    )


def test_the_report_lists_no_test_cell_whose_points_a_kernel_could_influence():
    from staff.grading.results import report

    assert report.trust_notes() == ""


def test_grading_stops_before_anyone_without_a_record_of_the_checks(tmp_path):
    """Every point is paid by the judge: with no judge file (or one older than the notebook's
    code), nobody is graded, and the message says how to fix it."""
    with pytest.raises(cell_checks.ChecksUnavailable, match="make fixtures"):
        cell_checks.load_checks("01_attention", tmp_path)
    source = nbformat.read(course_dir.source_notebook("01_attention"), as_version=4)
    source.cells[-1].source += "\n"
    if source.cells[-1].cell_type != "code":
        source.cells.append(nbformat.v4.new_code_cell("pass"))
    with pytest.raises(cell_checks.ChecksUnavailable, match="out of date"):
        cell_checks.load_checks("01_attention", ROOT / "fixtures", source)


def _specs(n, weights=None):
    """``n`` checks of the softmax fixture's cases (withheld expected outputs), with their weights."""
    return [
        {
            **SPEC,
            "label": f"case {i}",
            "ref": f"hidden/01_attention/softmax:{i}.expected",
            **({"weight": weights[i]} if weights and weights[i] != 1 else {}),
        }
        for i in range(n)
    ]


def test_a_cells_points_split_over_its_checks_by_weight_with_a_reason_for_each_failure(records):
    """Three of four right earn three quarters; a declared weight moves the split; a reason names the
    case and the kind of failure and quotes no expected value."""
    fixtures = judge.Fixtures(ROOT / "fixtures")
    for i in range(4):
        value = expected(f"{i}.expected")
        wrong = value + 0.25 if i == 2 else value
        record.write(
            "close",
            f"case {i}",
            wrong,
            withheld(f"{i}.expected"),
            atol=1e-8,
            rtol=1e-5,
            **({"weight": 2.0} if i == 2 else {}),
        )
    got = read_records(records)
    assert got[2].spec()["weight"] == 2.0 and "weight" not in got[0].spec()
    verdict = judge.verdict(_specs(4), got, fixtures)
    assert verdict.fraction == 0.75 and [c.reason is None for c in verdict.checks] == [
        True,
        True,
        False,
        True,
    ]
    assert judge.verdict(_specs(4, [1, 1, 2, 1]), got, fixtures).fraction == 3 / 5  # the instructor's weights
    reason = verdict.checks[2].reason
    assert (
        reason.startswith("case 2: ")
        and "values out of tolerance" in reason
        and "times the tolerance" in reason
    )
    shown = {f"{v:.6g}" for v in expected("2.expected").ravel()} | {
        f"{v:.4g}" for v in expected("2.expected").ravel()
    }
    assert not [v for v in shown if v in reason], "a reason quotes an expected value"


def test_a_cell_that_stops_keeps_what_it_checked_and_extra_records_fail_the_cell(records):
    fixtures = judge.Fixtures(ROOT / "fixtures")
    for i in range(2):
        record.write(
            "close", f"case {i}", expected(f"{i}.expected"), withheld(f"{i}.expected"), atol=1e-8, rtol=1e-5
        )
    verdict = judge.verdict(_specs(4), read_records(records), fixtures)
    assert verdict.fraction == 0.5
    assert (
        verdict.checks[3].reason == "case 3: not recorded (the cell stopped after 2 of 4 checks, at an error)"
    )
    assert judge.verdict(_specs(1), read_records(records), fixtures).fraction == 0
    condition = {"kind": "shape", "label": "y shape", "ref": None, "index": []}
    record.write("shape", "y shape", np.asarray([2, 3]), np.asarray([3, 2]))
    failed = judge.verdict([*_specs(2), condition], read_records(records), fixtures)
    assert failed.fraction == 0.5 and not failed.checks[2].paid  # a failed condition costs, never pays


def test_the_judges_output_is_the_only_one_marked_as_its_own(records):
    """A kernel can print an output with the judge's mark: annotate removes it before adding its own."""
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    from staff.grading.judging import points

    cell = new_code_cell(
        "checks()",
        metadata={
            "nbgrader": {"grade": True, "grade_id": "t", "points": 4, "solution": False, "locked": True}
        },
    )
    forged = new_output(
        "display_data",
        data={"text/plain": "Judged outside the kernel: 4 of 4 points"},
        metadata={points.MARK: {"fraction": 1.0, "lines": ["✓ everything"]}},
    )
    cell.outputs = [forged]
    nb = new_notebook(cells=[cell])
    record.write("close", "case 0", expected(), withheld(), atol=1e-8, rtol=1e-5)
    verdict = judge.verdict(_specs(2), read_records(records), judge.Fixtures(ROOT / "fixtures"))
    points.annotate(nb, {"t": verdict})
    judged = points.judged_output(cell)
    assert len(cell.outputs) == 1 and judged["metadata"][points.MARK]["fraction"] == 0.5
    assert judged["data"]["text/plain"].startswith(
        "Judged outside the kernel: 2 of 4 points, 1 of 2 checks passed."
    )
    assert judged["metadata"][points.MARK]["lines"] == [
        "✓ case 0",
        "✗ case 1: not recorded (the cell stopped after 1 of 2 checks, at an error)",
    ]


def _notebook(*cells):
    """A notebook of (kind, source) cells: "answer" (solution), "test" (graded hidden test), "code"."""
    made = []
    for index, (kind, source) in enumerate(cells):
        meta = {
            "answer": {"solution": True, "grade": False, "grade_id": f"answer{index}"},
            "test": {"solution": False, "grade": True, "points": 1, "grade_id": f"test{index}"},
            "code": {},
        }[kind]
        made.append(nbformat.v4.new_code_cell(source, metadata={"nbgrader": meta} if meta else {}))
    return nbformat.v4.new_notebook(cells=made)


def test_make_fixtures_refuses_a_reference_in_the_kernel_before_its_part_was_graded_or_after_its_test():
    scoped = "with references(globals()):\n    "
    honest = _notebook(
        ("answer", "def softmax(x): ..."),
        ("test", "### BEGIN HIDDEN TESTS\ncheck(softmax(1))\n### END HIDDEN TESTS"),
        ("answer", "def apply_attention(x): ..."),
        (
            "test",
            scoped
            + "def reference_softmax(x): ...\n\n    with substituted(globals(), softmax=reference_softmax):"
            "\n        check(apply_attention(1))",
        ),
    )
    assert cell_checks.reference_order_problems(honest) == []
    before_the_call = _notebook(
        ("answer", "def apply_attention(x): ..."),
        ("test", scoped + "def reference_attention(x): ...\n\n    check(apply_attention(1))"),
    )
    assert (
        "defines reference_attention (a reference of apply_attention) before"
        in cell_checks.reference_order_problems(before_the_call)[0]
    )
    a_cell_too_early = _notebook(
        ("answer", "def softmax(x): ..."),
        ("code", "x = 1"),
        ("test", scoped + "class ReferenceSoftmax: ...\n\n    check(1)"),
        ("answer", "class Softmax: ..."),
        ("test", "check(Softmax())"),
    )
    assert (
        "ReferenceSoftmax (a reference of Softmax)"
        in cell_checks.reference_order_problems(a_cell_too_early)[0]
    )
    outliving = _notebook(
        ("answer", "def softmax(x): ..."),
        ("test", "check(softmax(1))\n\ndef reference_softmax(x): ..."),
    )
    assert (
        "defines reference_softmax outside `with references(globals()):`"
        in (cell_checks.reference_order_problems(outliving)[0])
    )


@pytest.mark.parametrize("assignment", course_dir.assignments())
def test_every_reference_in_the_course_lives_only_inside_its_test(assignment):
    nb = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
    assert cell_checks.reference_order_problems(nb) == []


def _spec_record(label, got, expected, kind="close"):
    return Record(kind, label, None, [], {"atol": 0.0, "rtol": 0.0}, np.asarray(got), np.asarray(expected))


def test_a_condition_is_judged_against_the_instructors_value_not_the_records_own():
    spec = cell_checks._spec(
        _spec_record("causal_mask(3)", np.tril(np.ones((3, 3))), np.tril(np.ones((3, 3))))
    )
    paid = dict(SPEC, label="softmax(x)")
    fixtures = judge.Fixtures(ROOT / "fixtures")
    good = Record("close", "softmax(x)", SPEC["ref"], [], {"atol": 1e-8, "rtol": 1e-5}, expected(), None)
    forged = _spec_record("causal_mask(3)", np.zeros((3, 3)), np.zeros((3, 3)))  # "passes" by its own word
    verdict = judge.verdict([spec, paid], [forged, good], fixtures)
    assert verdict.checks[0].reason is not None and verdict.fraction == 0.0 and verdict.foreign is None


def test_records_the_cells_checks_did_not_make_fail_the_cell_and_say_so():
    fixtures = judge.Fixtures(ROOT / "fixtures")
    good = Record("close", "softmax(x)", SPEC["ref"], [], {"atol": 1e-8, "rtol": 1e-5}, expected(), None)
    other = Record("close", "something else", SPEC["ref"], [], {"atol": 1e-8, "rtol": 1e-5}, expected(), None)
    verdict = judge.verdict([SPEC, SPEC], [other, good], fixtures)
    assert (
        verdict.fraction == 0.0 and "check 1 of 2" in verdict.foreign and "something else" in verdict.problem
    )
    verdict = judge.verdict([SPEC], [good, good], fixtures)
    assert verdict.fraction == 0.0 and "recorded 2 checks, its tests make 1" in verdict.foreign
    assert judge.verdict([SPEC, SPEC], [good], fixtures).foreign is None  # stopped at an error: not foreign
