"""benchmarks/finetune_sst2.py end to end, tiny: both loops train, are scored, and compared.

The real benchmark needs SST-2 from ``../shared/data/sst2`` (not shipped with the project); this
test feeds the course's own data instead, which has the same GLUE SST-2 layout, so it runs
anywhere. 64 training sentences at batch 32 (two steps per loop), 64 dev sentences.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from course import paths
from support import benchmark

SCRIPT = paths.ROOT / "benchmarks" / "finetune_sst2.py"


def test_default_data_is_the_shared_sst2_beside_the_repository():
    module = benchmark("finetune_sst2")
    assert module.DEFAULT_DATA == paths.ROOT.parent / "shared" / "data" / "sst2"
    args = module.parse_args([])
    assert args.data == module.DEFAULT_DATA and args.train_examples is None
    assert module.parse_args(["--quick"]).train_examples == module.QUICK_EXAMPLES


@pytest.mark.notebooks  # trains two tiny loops
def test_tiny_run_trains_both_loops_and_compares_them(tmp_path):
    out = tmp_path / "result.json"
    command = [
        sys.executable,
        str(SCRIPT),
        "--data",
        str(paths.DATA / "sentiment"),
        "--train-examples",
        "64",
        "--dev-examples",
        "64",
        "--log-every",
        "1",
        "--json",
        str(out),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=os.environ)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "throughput ratio (plain loop / Trainer, examples/s)" in done.stdout
    assert "plain loop   step     1/2" in done.stdout and "Trainer      step     2/2" in done.stdout
    result = json.loads(out.read_text())
    plain, trainer = result["results"]
    assert (plain["name"], trainer["name"]) == ("plain loop", "Trainer")
    for r in (plain, trainer):
        assert r["steps"] == 2 and r["examples"] == 64
        assert 0.0 <= r["accuracy"] <= 1.0 and r["examples_per_second"] > 0
    assert result["throughput_ratio"] > 0 and result["paired_step_ratio"] > 0
    assert all(len(r["step_seconds"]) == r["steps"] for r in (plain, trainer))
    # Same initial weights, data order, dropout masks and settings: the first losses agree.
    assert abs(plain["final_loss"] - trainer["final_loss"]) < 0.05
