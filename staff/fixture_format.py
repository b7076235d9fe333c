"""The fixture folder's formats that authoring writes and grading reads: the SHA-256 manifest of a
visibility's files, and which saved arrays are expected outputs (``judge/outputs.json``). Here, not
in :mod:`staff.authoring.fixtures`, so grading never imports authoring (nor its recipes, torch and
transformers with them)."""

from __future__ import annotations

import json
from pathlib import Path

from course.fixtures import MANIFEST, relative, sha256

#: The recipes' ``OUTPUTS`` (which arrays are expected outputs), as data: grading reads this file to
#: withhold them from the kernels, without importing the recipes (and torch, transformers with them).
OUTPUTS_FILE = Path("judge") / "outputs.json"


def write_manifest(root: Path) -> dict[str, dict]:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST)
    manifest = {relative(p, root): {"sha256": sha256(p), "bytes": p.stat().st_size} for p in files}
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def read_outputs(root: Path) -> dict[str, dict[str, list[str]]]:
    """{assignment: {fixture name: key patterns}} of the expected outputs, as ``make fixtures`` wrote them."""
    path = root / OUTPUTS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: run `make fixtures` (it says which saved arrays are expected "
            f"outputs, which grading kernels must never see)"
        )
    return json.loads(path.read_text())
