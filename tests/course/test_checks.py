"""The visible checks must say what differs: shape, largest error, where, tolerance."""

import numpy as np
import pytest

from course import checks
from course.checks import check_close, check_equal, check_rows_sum_to_one, check_shape


def test_shape_message_gives_expected_and_actual():
    with pytest.raises(AssertionError, match=r"y: expected shape \(3, 2\), got \(2, 3\)"):
        check_shape("y", np.zeros((2, 3)), (3, 2))


def test_close_reports_max_error_location_and_tolerance():
    got = np.zeros((2, 3))
    want = np.zeros((2, 3))
    want[1, 2] = 0.5
    with pytest.raises(AssertionError) as info:
        check_close("weights", got, want, atol=1e-6)
    message = str(info.value)
    assert "max abs error 0.5" in message
    assert "atol=1e-06" in message
    assert "(1, 2)" in message and "1 of 6" in message


def test_close_passes_within_tolerance_and_rejects_nan_and_none():
    check_close("x", np.ones(3) + 1e-9, np.ones(3), atol=1e-8)
    with pytest.raises(AssertionError, match="NaN"):
        check_close("x", np.array([1.0, np.nan]), np.ones(2))
    with pytest.raises(AssertionError, match="forget to `return`"):
        check_close("x", None, np.ones(2))


def test_close_accepts_torch_tensors_and_ignores_patched_numpy(monkeypatch):
    torch = pytest.importorskip("torch")
    check_close("t", torch.ones(2, dtype=torch.float32), np.ones(2))
    monkeypatch.setattr(np, "abs", lambda x: np.zeros_like(x))  # a student's "fix"
    with pytest.raises(AssertionError):
        check_close("x", np.zeros(2), np.ones(2))


def test_rows_sum_names_the_axes():
    weights = np.full((1, 6, 3, 3), 1 / 3)
    weights[0, 5, 2] = [0.5, 0.2, 0.03]
    with pytest.raises(AssertionError, match="batch 0, head 5, row 2 sums to 0.73"):
        check_rows_sum_to_one("attention", weights, axes=("batch", "head", "row"))
    with pytest.raises(AssertionError, match=">= 0"):
        check_rows_sum_to_one("attention", np.array([[1.5, -0.5]]))


def test_equal_reports_first_difference():
    with pytest.raises(AssertionError, match=r"1 of 4 entries differ; first at index \(1, 0\)"):
        check_equal("mask", np.array([[1, 0], [0, 1]], bool), np.array([[1, 0], [1, 1]], bool))


def test_perplexity_reports_the_value_the_limit_and_bad_distributions():
    targets = np.array([[1, 2, 0]])
    log_probs = np.log(np.full((1, 3, 4), 0.1))
    np.put_along_axis(log_probs, targets[..., None], np.log(0.7), axis=-1)
    checks.check_perplexity("ppl", log_probs, targets, limit=1.5)  # exp(-log 0.7) = 1.43
    with pytest.raises(AssertionError, match=r"ppl: perplexity 1\.429 on 3 tokens; it must be at most 1\.4"):
        checks.check_perplexity("ppl", log_probs, targets, limit=1.4)
    with pytest.raises(
        AssertionError, match=r"not log-probabilities: the probabilities at index \(0, 0\) sum to 4"
    ):
        checks.check_perplexity("ppl", np.zeros((1, 3, 4)), targets, limit=100)
    with pytest.raises(
        AssertionError, match=r"expected log-probabilities of shape \(1, 3, 'vocab'\), got \(1, 2, 4\)"
    ):
        checks.check_perplexity("ppl", log_probs[:, :2], targets, limit=100)
    with pytest.raises(AssertionError, match="outside the vocabulary of 4"):
        checks.check_perplexity("ppl", log_probs, targets + 3, limit=100)


def test_a_withheld_check_with_the_wrong_shape_is_recorded_and_the_cell_goes_on(records):
    """Under grading a hidden case with the wrong shape must not stop the cell before its other
    cases (each earns its own share): the check records it, and the judge says what is wrong."""
    from course import record
    from staff.grading.execution.records import read_records

    want = record.Withheld("hidden/01_attention/softmax:0.expected", (3, 4), "<f8")
    checks.check_close("case 0", np.zeros((4, 3)), want)
    checks.check_close("case 1", np.zeros((3, 4)), want, weight=2)
    got = read_records(records)
    assert [r.label for r in got] == ["case 0", "case 1"] and got[1].spec()["weight"] == 2.0
    with pytest.raises(ValueError, match="positive number"):
        checks.check_close("case 2", np.zeros((3, 4)), want, weight=0)


def test_the_judges_messages_quote_no_expected_value():
    want = np.array([[0.123456, 0.654321]])
    with pytest.raises(AssertionError) as close:
        checks.compare_close("y", want + [[0.0, 0.5]], want, atol=1e-3, rtol=0, reveal=False)
    assert (
        str(close.value)
        == "y: 1 of 2 values out of tolerance; the first at index (0, 1); the largest error is 500 "
        "times the tolerance "
        "(atol=0.001, rtol=0)"
    )
    with pytest.raises(AssertionError) as equal:
        checks.compare_equal("ids", np.array([1, 2, 7]), np.array([1, 2, 3]), reveal=False)
    assert str(equal.value) == "ids: 1 of 3 entries differ; the first at index (2,)"  # where, not what


def _text_reason(got: str, want: str, reveal: bool = False) -> str:
    saved = np.frombuffer(want.encode("utf-8"), dtype=np.uint8)  # as a fixture holds a text
    with pytest.raises(AssertionError) as failed:
        checks.compare_text("answer_text of tokens [15, 27]", got, saved, reveal=reveal)
    return str(failed.value)


def test_a_text_is_judged_in_characters_and_says_where_it_differs_without_quoting_it():
    """Assignment 7's answers were compared as UTF-8 bytes: a wrong answer read "expected shape
    (31,), got (30,)", and a one-character accented answer "expected shape (2,), got (0,)"."""
    want = "the Eiffel Tower, in Paris"
    assert _text_reason(want[:-1], want) == (
        "answer_text of tokens [15, 27]: 1 character(s) short at the end (got 25, expected 26)"
    )
    assert _text_reason(want + ".", want).endswith("1 character(s) too many at the end (got 27, expected 26)")
    assert _text_reason(want[4:], want).endswith("4 character(s) missing at the start (got 22, expected 26)")
    assert _text_reason(" " + want, want).endswith(
        "1 character(s) too many at the start (got 27, expected 26)"
    )
    assert _text_reason("the Eiffel Tower, in Rome", want).endswith(
        "differs from character 22 on (got 25 characters, expected 26)"
    )
    assert _text_reason("", "é").endswith(
        "got an empty text, expected 1 character(s)"
    )  # 2 bytes, 1 character
    for got in (want[:-1], want + ".", "the Eiffel Tower, in Rome", ""):
        assert "Paris" not in _text_reason(got, want)
    assert "expected 'the Eiffel Tower, in Paris'" in _text_reason(
        want[:-1], want, reveal=True
    )  # a visible check
    checks.compare_text("same", want, np.frombuffer(want.encode(), dtype=np.uint8))


def test_a_text_check_records_the_utf8_bytes_and_refuses_what_is_not_a_str(records):
    from staff.grading.execution.records import read_records
    from staff.grading.judging import judge

    checks.check_text("an answer", "café", "café")
    with pytest.raises(AssertionError, match="expected a str, got bytes"):
        checks.check_text("an answer", b"caf\xc3\xa9", "café")
    [got] = read_records(records)
    assert got.kind == "text" and bytes(got.got).decode() == "café"
    spec = {**got.spec(), "ref": "hidden/07_question_answering/texts:0.answer"}
    assert judge.withheld(spec)  # a text compared with a hidden one pays, like any withheld value
