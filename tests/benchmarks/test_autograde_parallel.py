"""The benchmark's ceiling: what kernels at once gain, from each notebook's cost alone and together."""

from __future__ import annotations

import pytest

from staff.grading.status import Outcome
from support import benchmark

_ceiling = benchmark("autograde_parallel")._ceiling
_canary_share = benchmark("autograde_parallel")._canary_share


def _run(costs: dict[str, list[float]]) -> list[Outcome]:
    return [
        Outcome(f"s{i}", assignment, "graded", "", cost, phases={"worker": cost})
        for assignment, found in costs.items()
        for i, cost in enumerate(found)
    ]


def test_a_notebook_that_keeps_every_core_busy_alone_gains_little_from_company():
    # 01 is one-threaded (imports, small arrays): two at once cost what one costs alone, 2x.
    # 04 trains on every core alone: at half the cores it takes 1.7 times as long, 2/1.7 = 1.18x.
    alone = _run({"01": [10.0, 10.0], "04": [50.0]})
    together = _run({"01": [10.0, 10.0, 10.0], "04": [85.0]})
    ceiling = _ceiling(alone, together, workers=2)
    assert ceiling["01"] == pytest.approx(2.0)
    assert ceiling["04"] == pytest.approx(2 * 50 / 85)
    # the batch: 3 x 10 + 1 x 50 = 80 s one at a time, (3 x 10 + 85) / 2 = 57.5 s two at a time
    assert ceiling["all"] == pytest.approx(80 / 57.5)


def test_an_assignment_missing_from_either_run_is_left_out():
    ceiling = _ceiling(_run({"01": [10.0]}), _run({"02": [5.0]}), workers=2)
    assert ceiling == {}


def test_the_canary_costs_one_solution_per_assignment_beside_the_batch():
    # 01 costs 10 s a notebook, 05 50 s: the canary is one of each (60 s); 300 submissions in the
    # run's mix (half each) cost 300 x 30 s = 9,000 s.
    share = _canary_share(_run({"01": [10.0, 10.0], "05": [50.0, 50.0]}), submissions=300)
    assert share["mix"] == pytest.approx(60 / 9060)
    assert share["01"] == share["05"] == pytest.approx(1 / 301)
    assert _canary_share([]) == {}
