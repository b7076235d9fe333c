"""What a graded test cell hands to the judge: records of what the student's code returned.

The kernel computes, the grader judges. Under grading (``COURSE_RECORDS`` names a folder, set by
the sandbox) every check in :mod:`course.checks` writes one record: the value the student's code
produced, the tolerance the check uses, and what it is compared with: either a :class:`Withheld`
expected output (a reference into the fixtures, whose values are not in this kernel at all) or,
for checks against a literal or against another of the student's own results, that value too. A
judge outside the kernel (``staff/grading/judging/judge.py``) compares the records with the trusted
fixtures and sets the points; nothing printed or raised here decides a grade.

Records are safetensors files (typed arrays plus string metadata, never pickle), one per check,
numbered in order, each limited in size. Outside grading (a student's own run) nothing is written.
A record does not say which test cell wrote it: the grader opens ``COURSE_RECORDS`` just before
each graded test cell and takes it away right after (``staff/grading/execution/cells.py``), so a record
counts only for the cell during whose run it was written, and between test cells there is no
folder to write to.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

RECORDS_VARIABLE = "COURSE_RECORDS"
#: The judge refuses bigger records; the kernel refuses to write them in the first place.
MAX_RECORD_BYTES = 32 * 2**20
_counter = itertools.count()


class Withheld:
    """An expected output the kernel may not see: its shape, dtype and where the judge finds it.

    ``case["y"].shape`` and ``case["y"][:, :3]`` work (the index travels with the reference);
    anything that needs the values says why they are not here.
    """

    __slots__ = ("ref", "index", "shape", "dtype")

    def __init__(self, ref: str, shape: tuple[int, ...], dtype: str, index: tuple = ()):
        self.ref, self.index, self.shape, self.dtype = ref, tuple(index), tuple(shape), np.dtype(dtype)

    def __getitem__(self, item: Any) -> Withheld:
        items = item if isinstance(item, tuple) else (item,)
        items = tuple(_index_item(i) for i in items)
        shape = np.broadcast_to(np.zeros((), self.dtype), self.shape)[items].shape
        return Withheld(self.ref, shape, self.dtype.str, self.index + (encode_index(items),))

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, *args, **kwargs):
        raise TypeError(
            f"{self.ref} is a hidden expected output: its values are not in this kernel "
            f"(the grader compares them outside). Pass it to a check from course.checks."
        )

    def __repr__(self) -> str:
        return f"<withheld {self.ref} shape={self.shape}>"


def _index_item(item: Any):
    """Integers, slices, and integer or boolean arrays (``want[b][:, real[b]]``), as NumPy takes them."""
    if isinstance(item, slice):
        return slice(*(None if v is None else int(v) for v in (item.start, item.stop, item.step)))
    if isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
        return int(item)
    if hasattr(item, "detach"):  # a torch tensor
        item = item.detach().cpu().numpy()
    array = np.asarray(item)
    if array.dtype == bool or np.issubdtype(array.dtype, np.integer):
        return array.astype(bool) if array.dtype == bool else array.astype(np.int64)
    raise TypeError(
        f"a withheld expected output takes integer, slice and integer or boolean array indices, "
        f"not {type(item).__name__}"
    )


def encode_index(items: tuple) -> list:
    return [
        {"slice": [i.start, i.stop, i.step]}
        if isinstance(i, slice)
        else {"array": i.tolist(), "bool": bool(i.dtype == bool)}
        if isinstance(i, np.ndarray)
        else i
        for i in items
    ]


def decode_index(encoded: list) -> tuple:
    def one(i):
        if isinstance(i, dict) and "slice" in i:
            return slice(*i["slice"])
        if isinstance(i, dict):
            return np.asarray(i["array"], dtype=bool if i.get("bool") else np.int64)
        return int(i)

    return tuple(one(i) for i in encoded)


def folder() -> Path | None:
    value = os.environ.get(RECORDS_VARIABLE)
    return Path(value) if value else None


def write(kind: str, label: str, got: np.ndarray | None, expected: Any = None, **numbers: float) -> None:
    """Append one record (no-op outside grading, and outside a graded test cell under grading)."""
    out = folder()
    if out is None:
        return
    from safetensors.numpy import save_file  # only under grading

    meta = {"kind": kind, "label": str(label)[:300], **{k: repr(float(v)) for k, v in numbers.items()}}
    arrays = {}
    if got is not None:
        arrays["got"] = np.array(got, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    if isinstance(expected, Withheld):
        meta["ref"], meta["index"] = expected.ref, json.dumps(expected.index)
    elif expected is not None:
        arrays["expected"] = np.array(expected, order="C")
    if sum(a.nbytes for a in arrays.values()) > MAX_RECORD_BYTES:
        raise ValueError(f"{label}: the value is too large to record ({MAX_RECORD_BYTES >> 20} MB at most)")
    if not out.is_dir():  # not inside a graded test cell: the grader opens the folder only for those
        return
    path = out / f"{next(_counter):06d}-{os.getpid()}.safetensors"
    save_file(arrays, str(path), metadata=meta)
