"""Saved tensors the checks compare against: load them and verify their checksums.

Layout (``fixtures/``)::

    public/<assignment>/<name>.safetensors   ship to students (visible checks)
    public/MANIFEST.json                     SHA-256 of every public file
    hidden/<assignment>/<name>.safetensors   autograder only (hidden tests)
    hidden/MANIFEST.json                     kept apart so no hidden name reaches students

safetensors rather than ``.npz``: it writes the same bytes for the same values (``np.savez``
stamps zip entries with the time), so the manifest only changes when a value does.

A fixture file holds one or more *cases*; keys are ``"<case>.<array>"`` and :func:`load_cases`
regroups them. In a grading sandbox the kernel sees copies without the expected outputs (the
grader's ``staff/grading/execution/sandbox.py``): their metadata lists what was withheld, and those keys
load as :class:`~course.record.Withheld` references the checks record for the judge. Instructors build them with ``python -m staff fixtures`` (``make fixtures``,
:mod:`staff.authoring.fixtures`); this module only reads and verifies.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file

from course import paths
from course.record import Withheld

MANIFEST = "MANIFEST.json"
#: safetensors metadata key of a sandbox copy: ``{key: [shape, dtype]}`` of the withheld arrays.
WITHHELD = "course.withheld"

Arrays = Mapping[str, np.ndarray]


class FixtureError(RuntimeError):
    """A fixture is missing or does not match its manifest; the message says how to fix it."""


def fixture_file(assignment: str, name: str, hidden: bool = False) -> Path:
    return paths.visibility_dir(hidden) / assignment / f"{name}.safetensors"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def load_fixture(assignment: str, name: str, hidden: bool = False) -> dict[str, np.ndarray | Withheld]:
    """Load one fixture file after checking it against its manifest."""
    path = fixture_file(assignment, name, hidden)
    root = paths.visibility_dir(hidden)
    if not path.is_file():
        raise FixtureError(
            f"fixture {path} is missing. Instructors: run `make fixtures`. "
            f"Students: make sure the course folder (with fixtures/public) is next to the notebook "
            f"or set COURSE_FIXTURES to its fixtures/ folder (see course/settings.py)."
        )
    manifest = read_manifest(root)
    expected = manifest.get(relative(path, root))
    if expected is not None and sha256(path) != expected["sha256"]:
        raise FixtureError(
            f"fixture {path} does not match {root / MANIFEST} (changed or corrupted). "
            f"Run `make fixtures` to rebuild it, or restore it from git."
        )
    arrays: dict = load_file(str(path))
    with safe_open(str(path), "np") as handle:
        withheld = json.loads((handle.metadata() or {}).get(WITHHELD, "{}"))
    visibility = "hidden" if hidden else "public"
    for key, (shape, dtype) in withheld.items():
        arrays[key] = Withheld(f"{visibility}/{assignment}/{name}:{key}", shape, dtype)
    return arrays


def load_cases(assignment: str, name: str, hidden: bool = False) -> list[dict[str, np.ndarray | Withheld]]:
    """A fixture's cases, in order, each a dict of arrays (keys without the case prefix)."""
    grouped: dict[int, dict[str, np.ndarray]] = {}
    for key, value in load_fixture(assignment, name, hidden).items():
        case, _, array = key.partition(".")
        grouped.setdefault(int(case), {})[array] = value
    return [grouped[i] for i in sorted(grouped)]


def pack_cases(cases: Iterable[Arrays]) -> dict[str, np.ndarray]:
    """Inverse of :func:`load_cases`."""
    return {f"{i}.{k}": v for i, case in enumerate(cases) for k, v in case.items()}


def read_manifest(root: Path) -> dict[str, dict]:
    path = root / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else {}


def verify_tree(folder: Path) -> list[str]:
    """Problems found comparing one visibility folder with its manifest (empty: all good)."""
    problems = []
    manifest = read_manifest(folder)
    if not manifest:
        problems.append(f"{folder / MANIFEST} is missing or empty")
    on_disk = {relative(p, folder) for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST}
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
