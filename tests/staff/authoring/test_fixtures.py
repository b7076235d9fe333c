"""Fixtures rebuild to the committed values within a share of their grading tolerance (never bit
for bit: float results differ across CPUs and BLAS kernels), the check rewrites nothing, and the
comparison itself tells rounding from a difference that could change a grade."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from course import paths
from staff import fixture_format
from staff.authoring import assignments, fixtures

pytestmark = pytest.mark.notebooks  # rebuilding runs the solutions and loads the pretrained model


def _tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()


@pytest.mark.parametrize("assignment", assignments.assignments())
def test_committed_fixtures_agree_with_a_fresh_build(assignment):
    before = _tree_hash(paths.fixtures_dir())
    assert fixtures.check(paths.fixtures_dir(), [assignment]) == []
    assert _tree_hash(paths.fixtures_dir()) == before, "the check must never rewrite committed fixtures"


#: Other CPUs, as far as one machine can play them: PyTorch's portable kernels on one thread, and
#: its AVX2 kernels on two (the native ones, whatever this CPU has, are the test above).
OTHER_KERNELS = [
    {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1"},
    {"ATEN_CPU_CAPABILITY": "avx2", "OMP_NUM_THREADS": "2"},
]


@pytest.mark.parametrize("kernels", OTHER_KERNELS, ids=lambda k: "-".join(k.values()))
def test_committed_fixtures_hold_on_other_cpu_kernels(kernels):
    """`make fixtures-check` as a maintainer runs it on a new machine: every value within its share
    of the grading tolerance, and the spread it reports per assignment."""
    done = subprocess.run(
        [sys.executable, "-m", "staff", "fixtures-check"],
        cwd=paths.ROOT,
        env={**os.environ, **kernels},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    reported = [
        line
        for line in done.stdout.splitlines()
        if "of their grading tolerance" in line or "as committed" in line
    ]
    assert len(reported) == len(assignments.assignments()), done.stdout
    tightest = [line for line in done.stdout.splitlines() if line.startswith("fixtures-check: tightest: ")]
    assert len(tightest) == 10 and all("the check allows" in line for line in tightest), done.stdout
    print("\n".join(reported + tightest))


def test_the_spread_ranks_values_by_the_share_their_check_allows():
    """A value that moved 15% of a tolerance whose check allows a quarter is further from failing
    than one that moved 8% where a tenth is allowed: ranked by the share of what each check allows."""
    spread = fixtures.Spread()
    spread.add("a", 0.15, "loose", fixtures.Tolerance(1e-4, 0.0, 0.25))
    spread.add("a", 0.08, "tight", fixtures.Tolerance(1e-6, 1e-5))
    spread.add("b", 0.0, "still", fixtures.Tolerance(1e-6, 1e-5))
    assert [label for label, _, _ in spread.tightest(2)] == ["tight", "loose"]
    assert spread.worst == {"a": (0.15, "loose"), "b": (0.0, "still")}


def _float_arrays(root: Path):
    """(assignment, name, path, arrays) of every fixture file whose values the check compares."""
    for assignment in assignments.assignments():
        trained = getattr(assignments.recipe(assignment), "TRAINED", ())
        for path in sorted(root.glob(f"*/{assignment}/*.safetensors")):
            if path.stem not in trained:
                yield assignment, path.stem, path, load_file(str(path))


def _perturbed_copy(tmp_path: Path, perturb) -> Path:
    copy = tmp_path / "fixtures"
    shutil.copytree(paths.fixtures_dir(), copy)
    for assignment, name, path, arrays in _float_arrays(copy):
        save_file(
            {
                key: np.asarray(perturb(assignment, name, key, value), dtype=value.dtype)
                if np.issubdtype(value.dtype, np.floating)
                else value
                for key, value in arrays.items()
            },
            str(path),
        )
    return copy


def test_rounding_passes_and_a_grading_size_difference_fails(tmp_path):
    rng = np.random.default_rng(0)

    def rounding(assignment, name, key, value):  # +-2 units in the last place of the array's dtype
        return value + rng.choice([-2, 2], size=value.shape).astype(value.dtype) * np.spacing(value)

    def grading_size(assignment, name, key, value):  # one entry moved by its whole grading tolerance
        if not value.size:
            return value
        tolerance = fixtures.grading_tolerance(assignment, name, key)
        moved = value.astype(np.float64).copy()
        flat = moved.reshape(-1)
        flat[0] += 1.01 * (tolerance.atol + tolerance.rtol * abs(flat[0]))
        return moved.astype(value.dtype)

    every = assignments.assignments()
    committed = paths.fixtures_dir()
    assert fixtures.compare_trees(_perturbed_copy(tmp_path / "rounding", rounding), committed, every) == []

    problems = fixtures.compare_trees(_perturbed_copy(tmp_path / "grading", grading_size), committed, every)
    expected = {
        f"{path.parent.parent.name}/{assignment}/{path.name}:{key}"
        for assignment, _, path, arrays in _float_arrays(committed)
        for key, value in arrays.items()
        if np.issubdtype(value.dtype, np.floating) and value.size
    }
    assert {p.split(": ")[0] for p in problems} == expected


def test_integers_shapes_and_files_must_match_exactly(tmp_path):
    committed = paths.fixtures_dir()
    copy = tmp_path / "fixtures"
    shutil.copytree(committed, copy)
    ids = copy / "hidden" / "03_visualising_attention" / "padded_batch.safetensors"
    arrays = load_file(str(ids))
    arrays["input_ids"] = arrays["input_ids"].copy()
    arrays["input_ids"][0, 1] += 1
    save_file(arrays, str(ids))
    (copy / "public" / "01_attention" / "softmax.safetensors").unlink()
    problems = fixtures.compare_trees(copy, committed, ["01_attention", "03_visualising_attention"])
    assert any("padded_batch.safetensors:input_ids: 1 of" in p for p in problems), problems
    assert any(p.startswith("public/01_attention: files") for p in problems), problems


def test_the_expected_outputs_grading_withholds_are_the_recipes(tmp_path):
    """Grading reads which arrays are expected outputs from fixtures/judge/outputs.json (no recipe,
    no torch imported); a recipe whose OUTPUTS changed without `make fixtures` would let a kernel
    see an expected value, so the committed file must say exactly what the recipes say."""
    committed = fixture_format.read_outputs(paths.fixtures_dir())
    fresh = fixture_format.read_outputs(fixtures.write_outputs(tmp_path).parent.parent)
    assert committed == fresh and set(committed) == set(assignments.assignments())
    with pytest.raises(FileNotFoundError, match="make fixtures"):
        fixture_format.read_outputs(tmp_path / "nowhere")
