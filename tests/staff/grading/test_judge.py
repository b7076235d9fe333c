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
from staff.grading import judge

SPEC = {"kind": "close", "label": "softmax(x)", "ref": "hidden/01_attention/softmax:0.expected", "index": [],
        "atol": 1e-8, "rtol": 1e-5}


def expected(key="0.expected"):
    return judge.Fixtures(ROOT / "fixtures").value(f"hidden/01_attention/softmax:{key}", [])


def withheld(key="0.expected"):
    value = expected(key)
    return record.Withheld(f"hidden/01_attention/softmax:{key}", value.shape, value.dtype.str)


def test_a_correct_record_passes_and_a_wrong_one_fails_with_the_checks_message(records):
    record.write("close", "softmax(x)", expected(), withheld(), atol=1e-8, rtol=1e-5)
    fixtures = judge.Fixtures(ROOT / "fixtures")
    assert judge.verdict([SPEC], judge.read_records(records), fixtures) is None
    for path in records.iterdir():
        path.unlink()
    record.write("close", "softmax(x)", expected() + 1e-3, withheld(), atol=1e-8, rtol=1e-5)
    reason = judge.verdict([SPEC], judge.read_records(records), fixtures)
    assert reason.startswith("softmax(x): max abs error 0.001") and "atol=1e-08" in reason


def test_the_tolerance_and_the_fixture_are_the_instructors_not_the_records(records):
    fixtures = judge.Fixtures(ROOT / "fixtures")
    record.write("close", "softmax(x)", expected() + 1e-3, withheld(), atol=1.0, rtol=1.0)  # a loose tolerance
    assert "max abs error" in judge.verdict([SPEC], judge.read_records(records), fixtures)
    for path in records.iterdir():
        path.unlink()
    record.write("close", "softmax(x)", expected("1.expected"), withheld("1.expected"))  # an easier case
    assert "did not make this check" in judge.verdict([SPEC], judge.read_records(records), fixtures)


def test_missing_and_extra_checks_fail(records):
    fixtures = judge.Fixtures(ROOT / "fixtures")
    assert "nothing was recorded" in judge.verdict([SPEC], [], fixtures)
    record.write("close", "softmax(x)", expected(), withheld(), atol=1e-8, rtol=1e-5)
    record.write("close", "softmax(x)", expected(), withheld(), atol=1e-8, rtol=1e-5)
    assert "recorded 2 checks" in judge.verdict([SPEC], judge.read_records(records), fixtures)


def test_links_oversized_and_malformed_records_are_refused(records):
    os.symlink(ROOT / "fixtures" / "hidden" / "01_attention" / "softmax.safetensors", records / "000000-1.safetensors")
    with pytest.raises(judge.BadRecords, match="not a regular file"):
        judge.read_records(records)
    (records / "000000-1.safetensors").unlink()
    (records / "000001-1.safetensors").write_bytes(b"\x00" * 16)
    with pytest.raises(judge.BadRecords, match="not a valid record"):
        judge.read_records(records)
    (records / "000001-1.safetensors").unlink()
    save_file({"got": np.zeros(3)}, str(records / "000002-1.safetensors"), metadata={"kind": "exec"})
    with pytest.raises(judge.BadRecords, match="unknown kind"):
        judge.read_records(records)
    (records / "000002-1.safetensors").unlink()
    big = records / "000003-1.safetensors"
    big.write_bytes(b"\x00" * (record.MAX_RECORD_BYTES + 2**17))
    with pytest.raises(judge.BadRecords, match="larger than"):
        judge.read_records(records)


def test_withheld_values_cannot_be_read_in_the_kernel():
    value = withheld()
    assert value[1:, :2].shape == expected()[1:, :2].shape
    with pytest.raises(TypeError, match="not in this kernel"):
        np.asarray(value)


@pytest.mark.parametrize("assignment", course_dir.assignments())
def test_every_graded_test_cell_pays_only_for_a_withheld_value(assignment):
    """No visible check carries points, no cell is decided in the kernel, and every graded test cell
    compares with at least one hidden fixture value that the grading kernel never has."""
    from staff.authoring import recipes

    source = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
    specs = judge.load_checks(assignment, ROOT / "fixtures", source)  # raises when out of date
    graded = {c.metadata["nbgrader"]["grade_id"]: c for c in source.cells if judge.graded_test(c)}
    assert graded and set(specs) == set(graded)
    assert judge.unpaid_cells(specs) == []
    for grade_id, cell in graded.items():
        assert "### BEGIN HIDDEN TESTS" in cell.source, f"{grade_id}: a graded cell that is not hidden"
        assert not cell.metadata.get("course", {}).get("in_kernel"), grade_id
    outputs = getattr(recipes.load(assignment), "OUTPUTS", {})
    for spec in (s for cell_specs in specs.values() for s in cell_specs if judge.withheld(s)):
        where, _, key = spec["ref"].partition(":")
        name = where.split("/")[-1]
        assert any(__import__("fnmatch").fnmatch(key.partition(".")[2] or key, p) for p in outputs.get(name, ())), \
            f"{spec['ref']} is compared as withheld but is not in the recipe's OUTPUTS (the kernel would have it)"


def test_a_cell_without_records_or_without_a_withheld_value_fails(records):
    fixtures = judge.Fixtures(ROOT / "fixtures")
    assert "nothing was recorded while this test cell ran" in judge.verdict([SPEC], [], fixtures)
    public = {**SPEC, "ref": "public/01_attention/softmax:0.expected"}
    record.write("close", "softmax(x)", expected(), withheld(), atol=1e-8, rtol=1e-5)
    assert "no withheld value" in judge.verdict([public], judge.read_records(records), fixtures)


def test_perplexity_is_the_judges_own_on_its_own_targets_and_limit(records):
    """Assignment 5's trained model: the kernel records log-probabilities; the judge computes the
    perplexity with the withheld targets and the limit of the instructor's run."""
    fixtures = judge.Fixtures(ROOT / "fixtures")
    ref = "hidden/05_decoder/heldout:0.targets"
    targets = fixtures.value(ref, [])
    spec = {"kind": "perplexity", "label": "held-out perplexity", "ref": ref, "index": [], "limit": 11.0, "atol": 1e-3}
    target = record.Withheld(ref, targets.shape, targets.dtype.str)

    def verdict_of(log_probs, **numbers):
        for path in records.glob("*"):
            path.unlink()
        record.write("perplexity", "held-out perplexity", log_probs.astype(np.float32), target,
                     **{"limit": 11.0, "atol": 1e-3, **numbers})
        return judge.verdict([spec], judge.read_records(records), fixtures)

    good = np.full((*targets.shape, 96), np.log(0.1 / 95), dtype=np.float64)   # 0.9 on the right character
    np.put_along_axis(good, targets[..., None].astype(np.int64), np.log(0.9), axis=-1)
    assert verdict_of(good) is None
    uniform = np.full((*targets.shape, 96), -np.log(96))
    assert "perplexity 96.000" in verdict_of(uniform) and "at most 11" in verdict_of(uniform, limit=1e9)
    assert "not log-probabilities" in verdict_of(np.zeros((*targets.shape, 96)))   # all ones: sums to 96
    shifted = np.roll(good, 1, axis=1)                          # confident about the wrong characters
    assert re.search(r"held-out perplexity: perplexity [0-9.]+ on 1008 tokens; it must be at most 11$", verdict_of(shifted))


def test_the_report_lists_no_test_cell_whose_points_a_kernel_could_influence():
    from staff.grading import report

    assert report.trust_notes() == ""


def test_grading_stops_before_anyone_without_a_record_of_the_checks(tmp_path):
    """Every point is paid by the judge: with no judge file (or one older than the notebook's
    code), nobody is graded, and the message says how to fix it."""
    with pytest.raises(judge.ChecksUnavailable, match="make fixtures"):
        judge.load_checks("01_attention", tmp_path)
    source = nbformat.read(course_dir.source_notebook("01_attention"), as_version=4)
    source.cells[-1].source += "\n"
    if source.cells[-1].cell_type != "code":
        source.cells.append(nbformat.v4.new_code_cell("pass"))
    with pytest.raises(judge.ChecksUnavailable, match="out of date"):
        judge.load_checks("01_attention", ROOT / "fixtures", source)
