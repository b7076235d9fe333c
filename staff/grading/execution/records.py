"""The test cells' records as the kernel leaves them (``course.record`` writes them under grading;
:class:`cells.CellRecords` takes each graded cell's away): read here, bounded and validated, for the
judge (:mod:`staff.grading.judging.judge`). Reading compares nothing: no expected value is involved,
so the worker may read them too."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import load as load_safetensors

from course import checks
from course.record import MAX_RECORD_BYTES
from staff.grading.execution.cells import INDEX

#: Limits on what a kernel may hand over: more is a failed cell, never a crash of the grader.
MAX_RECORDS, MAX_TOTAL_BYTES = 20_000, 512 * 2**20
NUMERIC = {
    np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64")
}


@dataclass
class Record:
    kind: str
    label: str
    ref: str | None
    index: list
    tolerance: dict[str, float]
    got: np.ndarray | None
    expected: np.ndarray | None

    def spec(self) -> dict:
        """What the instructor's run says this check is (the trusted part of a record)."""
        return {
            "kind": self.kind,
            "label": self.label,
            "ref": self.ref,
            "index": self.index,
            **self.tolerance,
        }


class BadRecords(ValueError):
    """The kernel's records are malformed, oversized or not regular files: its cells fail."""


def _read_one(path: Path) -> Record:
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):  # a symlink could point at a file the kernel cannot see
        raise BadRecords(f"{path.name} is not a regular file")
    if info.st_size > MAX_RECORD_BYTES + 65536:
        raise BadRecords(f"{path.name} is larger than {MAX_RECORD_BYTES >> 20} MB")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_RECORD_BYTES + 65537)
    try:  # safetensors: 8 bytes of header length, a JSON header (metadata inside), the arrays
        header = json.loads(data[8 : 8 + int.from_bytes(data[:8], "little")])
        meta = {str(k): str(v) for k, v in (header.get("__metadata__") or {}).items()}
        arrays = load_safetensors(data)
    except Exception as error:
        raise BadRecords(f"{path.name} is not a valid record ({type(error).__name__})") from None
    if set(arrays) - {"got", "expected"} or any(a.dtype not in NUMERIC for a in arrays.values()):
        raise BadRecords(f"{path.name} holds unexpected arrays")
    kind = meta.get("kind", "")
    if kind not in checks.KINDS:
        raise BadRecords(f"{path.name} has an unknown kind {kind[:20]!r}")
    try:
        tolerance = {k: float(meta[k]) for k in ("atol", "rtol", "limit", "minimum", "weight") if k in meta}
        index = json.loads(meta.get("index", "[]"))
    except (ValueError, TypeError):
        raise BadRecords(f"{path.name} has malformed metadata") from None
    return Record(
        kind,
        meta.get("label", "")[:300],
        meta.get("ref"),
        index,
        tolerance,
        arrays.get("got"),
        arrays.get("expected"),
    )


def read_records(folder: Path) -> list[Record]:
    """Every record in ``folder``, in the order the kernel wrote them."""
    if not folder.is_dir():
        return []
    paths = sorted(p for p in folder.iterdir() if p.name.endswith(".safetensors"))
    if len(paths) > MAX_RECORDS:
        raise BadRecords(f"{len(paths)} records (at most {MAX_RECORDS})")
    if sum(os.lstat(p).st_size for p in paths) > MAX_TOTAL_BYTES:
        raise BadRecords(f"records larger than {MAX_TOTAL_BYTES >> 20} MB in all")
    return [_read_one(p) for p in paths]


def read_cells(taken: Path) -> tuple[dict[str, list[Record]], dict[str, str]]:
    """``({grade id: [Record, ...]}, {grade id: shell hooks the guard found changed})`` from the
    folder the runner took each graded test cell's records into (:class:`cells.CellRecords`)."""
    index = json.loads((taken / INDEX).read_text()) if (taken / INDEX).is_file() else {}
    if index.get("overflow"):
        raise BadRecords(
            f"test cell {str(index['overflow'][0])[:80]} left more records than the grader takes"
        )
    cells = {
        str(grade_id): read_records(taken / str(name))
        for grade_id, name in index.get("cells", {}).items()
        if str(name).isdigit()
    }
    return cells, {str(k): str(v)[:300] for k, v in index.get("guard", {}).items()}
