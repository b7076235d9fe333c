"""Every hidden input stays within what its exercise's released text promises (issue 39)."""

from __future__ import annotations

import types

import nbformat
import numpy as np
import pytest

from course import paths
from staff import course_dir
from staff.authoring import assignments, contract_kit, fixtures

RIGHT = "sequences are padded on the right"


@pytest.mark.parametrize("assignment", assignments.assignments())
def test_committed_hidden_cases_keep_the_contract(assignment):
    problems, checked = contract_kit.check_saved(paths.fixtures_dir(), assignment)
    assert not problems, "\n".join(problems)
    assert checked > 0, f"{assignment}: no hidden case was checked"


@pytest.mark.parametrize("assignment", assignments.assignments())
def test_every_promise_is_in_the_released_text(assignment):
    contract = assignments.contract(assignment)
    notebook = nbformat.read(course_dir.release_notebook(assignment), as_version=4)
    assert contract, f"{assignment}: no contract in staff/authoring/assignments/{assignment}/contract.py"
    assert not contract_kit.unpromised(contract, "\n".join(c.source for c in notebook.cells))


def _left_padded_case():
    return {
        "0.attention_mask": np.array([[1, 1, 1, 1, 0, 0], [0, 0, 1, 1, 1, 1]]),
        "0.q": np.zeros((2, 6, 4), np.float32),
        "0.out": np.zeros((2, 6, 4), np.float32),
    }


def test_a_left_padded_row_under_a_right_padding_promise_is_named():
    contract = {
        "causal": (
            contract_kit.padding(RIGHT, "attention_mask", "right"),
            contract_kit.shapes("q is (batch, key, d)", attention_mask="batch key", q="batch key d"),
            contract_kit.floats("q is (batch, key, d)", "q"),
        )
    }
    problems, checked = contract_kit.violations(
        "05_decoder", {("hidden", "causal"): _left_padded_case()}, contract, {"causal": ("out",)}
    )
    assert checked == 1
    assert problems == [
        "05_decoder/causal (hidden case 0): attention_mask row 1 is not padded on the right "
        f"([0, 0, 1, 1, 1, 1]), outside the promise {RIGHT!r}"
    ]
    either = {
        "causal": (contract_kit.padding("either side", "attention_mask", "either"),) + contract["causal"][1:]
    }
    assert (
        contract_kit.violations(
            "05_decoder", {("hidden", "causal"): _left_padded_case()}, either, {"causal": ("out",)}
        )[0]
        == []
    )


def test_an_input_no_promise_bounds_and_a_fixture_without_contract_are_findings():
    case = _left_padded_case()
    bounded = {"causal": (contract_kit.padding("either side", "attention_mask", "either"),)}
    problems, _ = contract_kit.violations(
        "05_decoder", {("hidden", "causal"): case}, bounded, {"causal": ("out",)}
    )
    assert problems == ["05_decoder/causal (hidden case 0): no promise bounds q"]
    problems, _ = contract_kit.violations("05_decoder", {("hidden", "causal"): case}, {}, {})
    assert problems == [
        "05_decoder/causal: hidden cases and no contract (staff/authoring/assignments/05_decoder/contract.py)"
    ]
    # public cases need no contract (the student sees them), but must keep one when stated
    assert contract_kit.violations("05_decoder", {("public", "causal"): case}, {}, {}) == ([], 0)


def test_shapes_name_the_axis_that_disagrees():
    term = contract_kit.shapes(
        "(batch, heads, query, d_head)", q="batch heads query d_head", k="batch heads key d_head"
    )
    assert term.holds({"q": np.zeros((2, 3, 4, 8)), "k": np.zeros((2, 3, 5, 8))}) is None
    assert term.holds({"q": np.zeros((2, 3, 4, 8)), "k": np.zeros((2, 3, 5, 6))}) == "d_head: 6 in k, 8 in q"
    assert term.holds({"q": np.zeros((2, 4, 8)), "k": np.zeros((2, 3, 5, 8))}).startswith("q has 3 axes")


def test_make_fixtures_refuses_a_case_outside_the_contract_and_writes_nothing(tmp_path, monkeypatch):
    recipe = types.SimpleNamespace(
        build=lambda: {("hidden", "causal"): _left_padded_case()},
        OUTPUTS={"causal": ("out",)},
    )
    contract = {
        "causal": (contract_kit.padding(RIGHT, "attention_mask", "right"), contract_kit.floats("q", "q"))
    }
    real, real_contract = assignments.recipe, assignments.contract
    monkeypatch.setattr(assignments, "recipe", lambda a: recipe if a == "99_scratch" else real(a))
    monkeypatch.setattr(
        assignments, "contract", lambda a: contract if a == "99_scratch" else real_contract(a)
    )
    with pytest.raises(
        ValueError, match=r"1 case\(s\) of 99_scratch outside what its release promises"
    ) as raised:
        fixtures.build(tmp_path / "fixtures", ["99_scratch"])
    assert "attention_mask row 1 is not padded on the right" in str(raised.value)
    assert not any((tmp_path / "fixtures").rglob("*.safetensors"))
