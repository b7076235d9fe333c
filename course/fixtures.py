"""Saved tensors the checks compare against: write, checksum, load, verify, rebuild.

Layout (``fixtures/``)::

    public/<assignment>/<name>.safetensors   ship to students (visible checks)
    public/MANIFEST.json                     SHA-256 of every public file
    hidden/<assignment>/<name>.safetensors   autograder only (hidden tests)
    hidden/MANIFEST.json                     kept apart so no hidden name reaches students

safetensors rather than ``.npz``: it writes the same bytes for the same values (``np.savez``
stamps zip entries with the time), so the manifest only changes when a value does.

A fixture file holds one or more *cases*; keys are ``"<case>.<array>"`` and :func:`load_cases`
regroups them. ``python -m course.fixtures build`` regenerates everything from the recipes in
``course/recipes/``; ``verify`` checks files against the manifests.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
from safetensors.numpy import load_file, save_file

from course import paths

MANIFEST = "MANIFEST.json"
#: assignment -> module in course.recipes whose ``build()`` returns its fixtures.
RECIPES = {
    "01_attention": "course.recipes.attention",
    "02_distilbert": "course.recipes.distilbert",
    "03_visualising_attention": "course.recipes.visualising",
    "04_finetuning": "course.recipes.finetuning",
}

Arrays = Mapping[str, np.ndarray]


class FixtureError(RuntimeError):
    """A fixture is missing or does not match its manifest; the message says how to fix it."""


def fixture_file(assignment: str, name: str, hidden: bool = False) -> Path:
    return paths.visibility_dir(hidden) / assignment / f"{name}.safetensors"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def load_fixture(assignment: str, name: str, hidden: bool = False) -> dict[str, np.ndarray]:
    """Load one fixture file after checking it against its manifest."""
    path = fixture_file(assignment, name, hidden)
    root = paths.visibility_dir(hidden)
    if not path.is_file():
        raise FixtureError(
            f"fixture {path} is missing. Instructors: run `make fixtures`. "
            f"Students: make sure the course folder (with fixtures/public) is next to the notebook "
            f"or set COURSE_FIXTURES to its fixtures/ folder."
        )
    manifest = _read_manifest(root)
    expected = manifest.get(_relative(path, root))
    if expected is not None and sha256(path) != expected["sha256"]:
        raise FixtureError(
            f"fixture {path} does not match {root / MANIFEST} (changed or corrupted). "
            f"Run `make fixtures` to rebuild it, or restore it from git."
        )
    return load_file(str(path))


def load_cases(assignment: str, name: str, hidden: bool = False) -> list[dict[str, np.ndarray]]:
    """A fixture's cases, in order, each a dict of arrays (keys without the case prefix)."""
    grouped: dict[int, dict[str, np.ndarray]] = {}
    for key, value in load_fixture(assignment, name, hidden).items():
        case, _, array = key.partition(".")
        grouped.setdefault(int(case), {})[array] = value
    return [grouped[i] for i in sorted(grouped)]


def pack_cases(cases: Iterable[Arrays]) -> dict[str, np.ndarray]:
    """Inverse of :func:`load_cases`."""
    return {f"{i}.{k}": v for i, case in enumerate(cases) for k, v in case.items()}


def _read_manifest(root: Path) -> dict[str, dict]:
    path = root / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else {}


def write_manifest(root: Path) -> dict[str, dict]:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST)
    manifest = {_relative(p, root): {"sha256": sha256(p), "bytes": p.stat().st_size} for p in files}
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def write_fixtures(assignment: str, fixtures: Mapping[tuple[str, str], Arrays], out: Path) -> None:
    """Write ``{(visibility, name): arrays}`` under ``out/<visibility>/<assignment>/``."""
    for (visibility, name), arrays in fixtures.items():
        if visibility not in ("public", "hidden"):
            raise ValueError(f"visibility must be 'public' or 'hidden', got {visibility!r}")
        folder = out / visibility / assignment
        folder.mkdir(parents=True, exist_ok=True)
        save_file({k: np.require(v, requirements="C") for k, v in arrays.items()},
                  str(folder / f"{name}.safetensors"))


def build(out: Path, assignments: Iterable[str] | None = None) -> None:
    """Regenerate fixtures into ``out`` (atomically per assignment) and rewrite the manifests.

    Each assignment is built in a temporary folder first, so a failing recipe leaves the
    previous fixtures in place rather than half-written.
    """
    for assignment in assignments or RECIPES:
        recipe = importlib.import_module(RECIPES[assignment])
        with tempfile.TemporaryDirectory(dir=out.parent if out.parent.exists() else None) as tmp:
            staged = Path(tmp)
            write_fixtures(assignment, recipe.build(), staged)
            for visibility in ("public", "hidden"):
                target = out / visibility / assignment
                if target.exists():
                    shutil.rmtree(target)
                if (staged / visibility / assignment).exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(staged / visibility / assignment), target)
        print(f"fixtures: built {assignment}")
    for visibility in ("public", "hidden"):
        (out / visibility).mkdir(parents=True, exist_ok=True)
        write_manifest(out / visibility)


def verify_tree(folder: Path) -> list[str]:
    """Problems found comparing one visibility folder with its manifest (empty: all good)."""
    problems = []
    manifest = _read_manifest(folder)
    if not manifest:
        problems.append(f"{folder / MANIFEST} is missing or empty")
    on_disk = {_relative(p, folder) for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST}
    for rel in sorted(set(manifest) - on_disk):
        problems.append(f"{folder.name}/{rel} is in the manifest but missing")
    for rel in sorted(on_disk - set(manifest)):
        problems.append(f"{folder.name}/{rel} is not in the manifest")
    for rel in sorted(set(manifest) & on_disk):
        if sha256(folder / rel) != manifest[rel]["sha256"]:
            problems.append(f"{folder.name}/{rel} does not match its SHA-256 in the manifest")
    return problems


def verify(root: Path) -> list[str]:
    """Problems found in both the public and the hidden fixtures under ``root``."""
    return verify_tree(root / "public") + verify_tree(root / "hidden")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.fixtures", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="regenerate fixtures deterministically and rewrite manifests")
    b.add_argument("assignments", nargs="*", help="default: all")
    b.add_argument("--out", type=Path, default=None, help="default: the course's fixtures/")
    v = sub.add_parser("verify", help="check every fixture against its manifest")
    v.add_argument("--root", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.command == "build":
        build(args.out or paths.fixtures_dir(), args.assignments or None)
        return 0
    problems = verify(args.root or paths.fixtures_dir())
    for problem in problems:
        print(f"fixtures: {problem}", file=sys.stderr)
    print("fixtures: manifest OK" if not problems else "fixtures: run `make fixtures` to rebuild")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
