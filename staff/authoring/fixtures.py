"""Build the saved tensors from the recipes, and check committed ones against a fresh build.

``make fixtures`` (:func:`build`) rewrites ``fixtures/`` from each assignment's recipe (``staff/authoring/assignments/<assignment>/recipe.py``): run it
after changing a recipe or a solution, and commit the result. Nothing an instructor runs routinely
(``make demo``, ``make release``, grading) rebuilds them.

``make fixtures-check`` (:func:`check`) rebuilds into a temporary folder and compares with the
committed files. Floating-point results of the same recipe differ in the last bits across CPUs, BLAS
kernels and thread counts (how far between two x86 CPUs: docs/scaling.md), so floats are compared
within a tenth of the tolerance the tests that read them grade with (each recipe's ``TOLERANCES``):
a difference that could change a grade fails, rounding never does. File lists, keys, shapes, dtypes,
integers and booleans must match exactly.

Some fixtures are *trained* (a recipe's ``TRAINED``, e.g. assignment 2's classifier head): training
amplifies rounding far beyond any tolerance (docs/scaling.md), and what matters is that they still
train to what the notebook states, which the recipe's ``train()`` asserts. ``make fixtures`` keeps
the committed ones (``python -m staff fixtures --retrain`` trains them again); the check retrains
them (their values are not compared) and builds every other fixture from the committed trained ones,
so their expected outputs are compared tightly. A recipe whose training takes minutes (assignment
6's model) states ``verify_trained`` instead: the check measures the committed model on this CPU
against what the notebook states.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

from course.fixtures import Arrays
from staff.authoring import (
    assignments as folders,  # each assignment's folder (``assignments`` names a list here)
)
from staff.authoring import contract_kit
from staff.fixture_format import OUTPUTS_FILE, write_manifest

#: Share of the grading tolerance a regenerated value may move by (see the module docstring); a
#: recipe may state another share for a fixture, with its reason, as a third TOLERANCES element.
CHECK_FRACTION = 0.1
VISIBILITIES = ("public", "hidden")


def write_fixtures(assignment: str, fixtures: Mapping[tuple[str, str], Arrays], out: Path) -> None:
    """Write ``{(visibility, name): arrays}`` under ``out/<visibility>/<assignment>/``."""
    for (visibility, name), arrays in fixtures.items():
        if visibility not in VISIBILITIES:
            raise ValueError(f"visibility must be 'public' or 'hidden', got {visibility!r}")
        folder = out / visibility / assignment
        folder.mkdir(parents=True, exist_ok=True)
        save_file(
            {k: np.require(v, requirements="C") for k, v in arrays.items()},
            str(folder / f"{name}.safetensors"),
        )


def trained_fixtures(assignment: str, root: Path) -> dict[tuple[str, str], dict[str, np.ndarray]] | None:
    """The recipe's trained fixtures as saved under ``root`` (None: the recipe trains nothing)."""
    names = getattr(folders.recipe(assignment), "TRAINED", ())
    if not names:
        return None
    found = {}
    for name in names:
        for visibility in VISIBILITIES:
            path = root / visibility / assignment / f"{name}.safetensors"
            if path.is_file():
                found[(visibility, name)] = load_file(str(path))
    return found


def build(out: Path, assignments: Iterable[str] | None = None, trained_from: Path | None = None) -> None:
    """Regenerate fixtures into ``out`` (atomically per assignment) and rewrite the manifests.

    Each assignment is built in a temporary folder first, so a failing recipe leaves the
    previous fixtures in place rather than half-written. With ``trained_from``, trained fixtures
    are taken from that fixtures folder instead of being trained anew.
    """
    out.mkdir(parents=True, exist_ok=True)
    for assignment in assignments or folders.assignments():
        recipe = folders.recipe(assignment)
        trained = trained_fixtures(assignment, trained_from) if trained_from else None
        with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
            staged = Path(tmp)
            built = recipe.build(trained) if trained else recipe.build()
            checked = contract_kit.refuse(assignment, built)  # before anything is written
            write_fixtures(assignment, built, staged)
            for visibility in VISIBILITIES:
                target = out / visibility / assignment
                if target.exists():
                    shutil.rmtree(target)
                if (staged / visibility / assignment).exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(staged / visibility / assignment), target)
        print(f"fixtures: built {assignment} ({checked} hidden case(s) within what its release promises)")
    for visibility in VISIBILITIES:
        (out / visibility).mkdir(parents=True, exist_ok=True)
        write_manifest(out / visibility)
    write_outputs(out)


def write_outputs(out: Path) -> Path:
    path = out / OUTPUTS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    outputs = {
        a: {name: list(patterns) for name, patterns in getattr(folders.recipe(a), "OUTPUTS", {}).items()}
        for a in folders.assignments()
    }
    path.write_text(json.dumps(outputs, indent=1, sort_keys=True) + "\n")
    return path


@dataclass(frozen=True)
class Tolerance:
    """``|fresh - committed| <= atol + rtol * |committed|`` (NumPy's allclose rule), the grading
    tolerance; the check allows ``share`` of it (a tenth unless the recipe says why not)."""

    atol: float
    rtol: float
    share: float = CHECK_FRACTION

    def for_check(self) -> Tolerance:
        return Tolerance(self.atol * self.share, self.rtol * self.share, 1.0)


def grading_tolerance(assignment: str, name: str, key: str) -> Tolerance:
    """The tolerance the tests grade array ``key`` of fixture ``name`` with, from the recipe's
    ``TOLERANCES``: ``"<name>/<array>"``, else ``"<name>/<first part of the array's name>"`` (e.g.
    ``"step/state"`` for ``state.embedding.weight``), else ``"<name>"``, else ``"*"``. ``key`` may
    carry a case prefix (``"2.weights"``, see :func:`course.fixtures.load_cases`)."""
    case, _, rest = key.partition(".")
    array = rest if case.isdigit() and rest else key
    table = folders.recipe(assignment).TOLERANCES
    for entry in (f"{name}/{array}", f"{name}/{array.split('.')[0]}", name, "*"):
        if entry in table:
            return Tolerance(*table[entry])
    raise KeyError(f"the recipe of {assignment} declares no tolerance for {name}/{array} (TOLERANCES)")


def compare_arrays(
    label: str, fresh: np.ndarray, committed: np.ndarray, tolerance: Tolerance | None
) -> str | None:
    """What differs between two arrays (None: the same, within ``tolerance`` for floats; with
    ``tolerance=None`` only dtype and shape are compared)."""
    if fresh.dtype != committed.dtype or fresh.shape != committed.shape:
        return (
            f"{label}: dtype/shape {fresh.dtype}{fresh.shape} != committed {committed.dtype}{committed.shape}"
        )
    if tolerance is None:
        return None
    if not np.issubdtype(fresh.dtype, np.floating):
        wrong = int(np.count_nonzero(fresh != committed))
        return f"{label}: {wrong} of {fresh.size} entries differ (must be equal)" if wrong else None
    error, b = _abs_error(fresh, committed)
    excess = error - (tolerance.atol + tolerance.rtol * np.abs(b))
    if fresh.size and (np.isnan(excess) | (excess > 0)).any():
        return (
            f"{label}: max abs difference {np.nanmax(error):.3g} > atol={tolerance.atol:g}, "
            f"rtol={tolerance.rtol:g} ({int((excess > 0).sum())} of {fresh.size} values)"
        )
    return None


def share_used(fresh: np.ndarray, committed: np.ndarray, tolerance: Tolerance) -> float:
    """The largest ``|fresh - committed| / (atol + rtol * |committed|)`` (1.0: a whole grading
    tolerance; inf where only one side is finite); 0 for arrays that are not floats."""
    if not np.issubdtype(fresh.dtype, np.floating) or not fresh.size or fresh.shape != committed.shape:
        return 0.0
    error, b = _abs_error(fresh, committed)
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.nan_to_num(error / (tolerance.atol + tolerance.rtol * np.abs(b)), nan=np.inf).max())


def _abs_error(fresh: np.ndarray, committed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``|fresh - committed|`` in float64 (0 where both are NaN or equal, infinities included;
    NaN where only one side is), and ``committed`` in float64."""
    a, b = fresh.astype(np.float64), committed.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return np.where((np.isnan(a) & np.isnan(b)) | (a == b), 0.0, np.abs(a - b)), b


@dataclass
class Spread:
    """How far each compared value moved in a rebuild, as a share of its grading tolerance: per
    assignment the largest and where, and every value's, so ``make fixtures-check`` reports the
    tightest ones on another CPU, kernel or thread count next to the share its check allows."""

    worst: dict[str, tuple[float, str]] = field(default_factory=dict)
    moved: dict[str, tuple[float, Tolerance]] = field(default_factory=dict)

    def add(self, assignment: str, share: float, label: str, tolerance: Tolerance | None = None) -> None:
        if share > self.worst.get(assignment, (-1.0, ""))[0]:
            self.worst[assignment] = (share, label)
        if tolerance is not None:
            self.moved[label] = (share, tolerance)

    def tightest(self, count: int = 10) -> list[tuple[str, float, Tolerance]]:
        """The ``count`` values that used the largest share of what their check allows."""
        ranked = sorted(self.moved.items(), key=lambda item: -item[1][0] / item[1][1].share)
        return [(label, share, tolerance) for label, (share, tolerance) in ranked[:count]]


def compare_trees(
    fresh_root: Path, committed_root: Path, assignments: Iterable[str], spread: Spread | None = None
) -> list[str]:
    """Every difference between a fresh build and the committed fixtures that could change a grade
    (and, into ``spread``, how far the values moved)."""
    problems = []
    for assignment in assignments:
        for visibility in VISIBILITIES:
            fresh_dir, committed_dir = (
                fresh_root / visibility / assignment,
                committed_root / visibility / assignment,
            )
            fresh = sorted(p.name for p in fresh_dir.glob("*.safetensors"))
            committed = sorted(p.name for p in committed_dir.glob("*.safetensors"))
            if fresh != committed:
                problems.append(f"{visibility}/{assignment}: files {fresh} != committed {committed}")
                continue
            for file in fresh:
                a, b = load_file(str(fresh_dir / file)), load_file(str(committed_dir / file))
                name = file.removesuffix(".safetensors")
                problems += compare_files(assignment, name, f"{visibility}/{assignment}/{file}", a, b, spread)
    return problems


def compare_files(
    assignment: str,
    name: str,
    where: str,
    fresh: dict[str, np.ndarray],
    committed: dict[str, np.ndarray],
    spread: Spread | None = None,
) -> list[str]:
    """Differences between two versions of one fixture file (values of trained ones not compared)."""
    if fresh.keys() != committed.keys():
        return [f"{where}: keys {sorted(fresh)} != committed {sorted(committed)}"]
    values = name not in getattr(folders.recipe(assignment), "TRAINED", ())
    problems = []
    for key in sorted(fresh):
        grading = grading_tolerance(assignment, name, key) if values else None
        if grading and spread is not None:
            spread.add(assignment, share_used(fresh[key], committed[key], grading), f"{where}:{key}", grading)
        problem = compare_arrays(
            f"{where}:{key}", fresh[key], committed[key], grading and grading.for_check()
        )
        if problem:
            problems.append(problem)
    return problems


def check(
    committed_root: Path, assignments: Iterable[str] | None = None, spread: Spread | None = None
) -> list[str]:
    """Rebuild into a temporary folder and compare with ``committed_root`` (nothing is rewritten).
    Trained fixtures are retrained (the recipe asserts they train to what the notebook states)
    and compared by keys, dtypes and shapes; the rest is built from the committed trained ones."""
    assignments = list(assignments or folders.assignments())
    problems = []
    for assignment in assignments:
        recipe = folders.recipe(assignment)
        if getattr(recipe, "TRAINED", ()) and hasattr(recipe, "verify_trained"):
            # training takes minutes: the committed model is checked against what the notebook states
            problems += recipe.verify_trained(trained_fixtures(assignment, committed_root))
        elif getattr(recipe, "TRAINED", ()):
            for (visibility, name), arrays in recipe.train().items():
                committed = committed_root / visibility / assignment / f"{name}.safetensors"
                problems += compare_files(
                    assignment,
                    name,
                    f"{visibility}/{assignment}/{name}.safetensors (trained)",
                    arrays,
                    load_file(str(committed)) if committed.is_file() else {},
                )
    with tempfile.TemporaryDirectory(prefix="fixtures-check-") as tmp:
        build(Path(tmp), assignments, trained_from=committed_root)
        return problems + compare_trees(Path(tmp), committed_root, assignments, spread)
