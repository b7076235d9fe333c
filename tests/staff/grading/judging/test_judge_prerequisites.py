"""Prerequisites of a test cell (a trained model's answers come from its parameters, a training loop
trained) and the best of several alternatives: what the judge makes of each, from records alone."""

from __future__ import annotations

import numpy as np

from course import checks, record
from course.settings import ROOT
from staff.grading.execution.records import read_records
from staff.grading.judging import judge, points

FIXTURES = judge.Fixtures(ROOT / "fixtures")
LOGITS = "hidden/05_decoder/heldout:0.logits"
# Withheld token ids (tokens below 96) standing in for the characters scored and the positions copied:
# assignment 5's hidden tests now grade training steps, and no fixture holds either any more.
TARGETS = "hidden/05_decoder/decoding:0.sampled"
ALIGNMENT = "hidden/05_decoder/decoding:1.sampled"
PROGRESS = "hidden/04_finetuning/train:0.progress"


def withheld(ref: str) -> record.Withheld:
    value = FIXTURES.value(ref, [])
    return record.Withheld(ref, value.shape, value.dtype.str)


def one_hot_log_probs(targets: np.ndarray, right: float = 0.9) -> np.ndarray:
    log_probs = np.full((*targets.shape, 96), np.log((1 - right) / 95))
    np.put_along_axis(log_probs, targets[..., None].astype(np.int64), np.log(right), axis=-1)
    return log_probs.astype(np.float32)


def judged(records, specs):
    verdict = judge.verdict(specs, read_records(records), FIXTURES)
    for path in records.iterdir():
        path.unlink()
    return verdict


PARITY = {
    "kind": "parity",
    "label": "logits with the grader's weights",
    "ref": LOGITS,
    "index": [],
    "atol": 1e-4,
    "rtol": 1e-4,
}
PERPLEXITY = {
    "kind": "perplexity",
    "label": "held-out perplexity",
    "ref": TARGETS,
    "index": [],
    "limit": 11.0,
    "atol": 1e-3,
}


def write_cell(logits, log_probs):
    checks.check_parity("logits with the grader's weights", logits, withheld(LOGITS), atol=1e-4, rtol=1e-4)
    checks.check_perplexity("held-out perplexity", log_probs, withheld(TARGETS), limit=11.0)


def test_a_failed_parity_check_costs_the_whole_cell_and_pays_nothing_itself(records):
    logits, targets = FIXTURES.value(LOGITS, []), FIXTURES.value(TARGETS, [])
    write_cell(logits, one_hot_log_probs(targets))
    verdict = judged(records, [PARITY, PERPLEXITY])
    assert verdict.fraction == 1.0 and [c.gate for c in verdict.checks] == [True, False]
    assert [c.paid for c in verdict.checks] == [False, True]
    assert points.lines(verdict)[0].endswith("(checked first, no points of its own)")
    # Perfect answers from a module that does not compute the architecture: nothing at all.
    write_cell(logits + 1e-2, one_hot_log_probs(targets))
    verdict = judged(records, [PARITY, PERPLEXITY])
    assert verdict.fraction == 0.0 and verdict.checks[1].reason is None
    assert (
        "out of tolerance" in verdict.checks[0].reason and "times the tolerance" in verdict.checks[0].reason
    )
    # A cell that stopped before its prerequisite was recorded pays nothing either.
    checks.check_perplexity("held-out perplexity", one_hot_log_probs(targets), withheld(TARGETS), limit=11.0)
    assert judged(records, [PERPLEXITY, PARITY]).fraction == 0.0


def test_the_best_alternative_counts_and_the_labels_stay_the_judges(records):
    labels = FIXTURES.value(ALIGNMENT, [])
    real = labels >= 0
    spec = {
        "kind": "best_accuracy",
        "label": "alignment (best layer)",
        "ref": ALIGNMENT,
        "index": [[{"array": real.tolist(), "bool": True}]],
        "minimum": 0.9,
    }
    wrong = (labels[real] + 1) % 12
    target = withheld(ALIGNMENT)[real]
    checks.check_best_accuracy("alignment (best layer)", np.stack([wrong, labels[real]]), target, minimum=0.9)
    verdict = judged(records, [spec])
    assert verdict.fraction == 1.0 and judge.withheld(spec)
    checks.check_best_accuracy("alignment (best layer)", np.stack([wrong, wrong]), target, minimum=0.9)
    reason = judged(records, [spec]).reason
    assert (
        reason.startswith("alignment (best layer): the best of 2 (0) gets 0.0% (0 of ")
        and "at least 90%" in reason
    )


def test_a_training_loop_that_trains_nothing_fails_its_prerequisite(records):
    start, end = FIXTURES.value(PROGRESS, [])
    rates = "hidden/04_finetuning/train:0.lr"
    books = {"kind": "close", "label": "history['lr']", "ref": rates, "index": [], "atol": 1e-12, "rtol": 0.0}
    spec = {"kind": "progress", "label": "parameters trained", "ref": PROGRESS, "index": [], "limit": 0.5}
    for got, passes in (
        (end, True),
        (start + 0.6 * (end - start), True),
        (start + 0.4 * (end - start), False),
        (start, False),
    ):
        checks.check_close("history['lr']", FIXTURES.value(rates, []), withheld(rates), atol=1e-12, rtol=0.0)
        checks.check_progress("parameters trained", got, withheld(PROGRESS))
        verdict = judged(records, [books, spec])
        assert verdict.checks[0].reason is None and verdict.fraction == (1.0 if passes else 0.0), (
            verdict.reason
        )
        assert verdict.checks[1].gate and not verdict.checks[1].paid
    assert "moved 0% of the way" in verdict.checks[1].reason  # the last: parameters left where they started


def test_in_the_kernel_the_new_checks_compare_public_values_like_the_others():
    checks.check_parity("logits", np.ones(3), np.ones(3))
    checks.check_best_accuracy("best", np.array([[0, 1], [1, 1]]), np.array([1, 1]), minimum=1.0)
    checks.check_progress("moved", np.array([0.9, 0.9]), np.array([[0.0, 0.0], [1.0, 1.0]]))
    for call in (
        lambda: checks.check_parity("logits", np.ones(3), np.zeros(3)),
        lambda: checks.check_best_accuracy("best", np.array([[0, 0]]), np.array([1, 1]), minimum=0.5),
        lambda: checks.check_progress("moved", np.array([0.1, 0.1]), np.array([[0.0, 0.0], [1.0, 1.0]])),
    ):
        try:
            call()
        except AssertionError:
            continue
        raise AssertionError("a failing check passed")
