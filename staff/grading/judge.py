"""The judge: the points of every graded test cell, decided outside the student's kernel.

A kernel can be changed by the code it runs (how later cells compile, ``sys.modules``, exception
handling, the notebook's own helpers), so what it prints or raises cannot decide a grade. Under
grading every check in a test cell writes a record (:mod:`course.record`); this module, in a
process that never runs student code, reads those records (safetensors only, no pickle, size
limits, no symlinks) and compares them with the trusted fixtures using the same comparison
functions and messages as the visible checks.

What a cell must record comes from the instructor's own solution: :func:`build_checks` runs the
source notebook in the same sandbox and keeps, per test cell, the list of checks it made (kind,
tolerance, which fixture value it compares with). A student's cell passes when it made exactly
those checks, each within its tolerance, against the same fixture values, and did not fail in the
kernel either; its points are then set in nbgrader's gradebook (``auto_score``) so export,
feedback and the formgrader work unchanged. Checks against a value the cell computed itself (a
sentence alone vs in a batch) are judged on the two recorded values; every judged cell also has
at least one check against a fixture the kernel never saw, so no recording trick earns its points.
Test cells that make no check at all are *in-kernel* cells: nbgrader's verdict stands, and the
report lists them.
"""
from __future__ import annotations

import json
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import load as load_safetensors
from safetensors.numpy import load_file

from course import checks
from course.record import MAX_RECORD_BYTES, decode_index

#: Limits on what a kernel may hand over: more is a failed cell, never a crash of the grader.
MAX_RECORDS, MAX_TOTAL_BYTES = 20_000, 512 * 2**20
NUMERIC = {np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64")}
KINDS = {"close", "equal", "rows", "shape", "perplexity", "accuracy"}
_gradebook_lock = threading.Lock()


@dataclass
class Record:
    kind: str
    label: str
    cell: int
    ref: str | None
    index: list
    tolerance: dict[str, float]
    got: np.ndarray | None
    expected: np.ndarray | None

    def spec(self) -> dict:
        """What the instructor's run says this check is (the trusted part of a record)."""
        return {"kind": self.kind, "label": self.label, "ref": self.ref, "index": self.index, **self.tolerance}


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
        header = json.loads(data[8:8 + int.from_bytes(data[:8], "little")])
        meta = {str(k): str(v) for k, v in (header.get("__metadata__") or {}).items()}
        arrays = load_safetensors(data)
    except Exception as error:
        raise BadRecords(f"{path.name} is not a valid record ({type(error).__name__})") from None
    if set(arrays) - {"got", "expected"} or any(a.dtype not in NUMERIC for a in arrays.values()):
        raise BadRecords(f"{path.name} holds unexpected arrays")
    kind = meta.get("kind", "")
    if kind not in KINDS:
        raise BadRecords(f"{path.name} has an unknown kind {kind[:20]!r}")
    try:
        tolerance = {k: float(meta[k]) for k in ("atol", "rtol", "limit", "minimum") if k in meta}
        index = json.loads(meta.get("index", "[]"))
        cell = int(meta.get("cell", "-1"))
    except (ValueError, TypeError):
        raise BadRecords(f"{path.name} has malformed metadata") from None
    return Record(kind, meta.get("label", "")[:300], cell, meta.get("ref"), index, tolerance,
                  arrays.get("got"), arrays.get("expected"))


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


def _graded_tests(nb):
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            yield meta["grade_id"], cell


def by_cell(nb, records: list[Record]) -> dict[str, list[Record]]:
    """Records grouped by the graded test cell that wrote them (through the execution count)."""
    owner = {cell.get("execution_count"): grade_id for grade_id, cell in _graded_tests(nb)
             if isinstance(cell.get("execution_count"), int)}
    grouped: dict[str, list[Record]] = {}
    for rec in records:
        if rec.cell in owner:
            grouped.setdefault(owner[rec.cell], []).append(rec)
    return grouped


class Fixtures:
    """The trusted fixtures (expected outputs included), loaded once per file."""

    def __init__(self, root: Path):
        self.root, self.files = root, {}

    def value(self, ref: str, index: list) -> np.ndarray:
        where, _, key = ref.partition(":")
        if where not in self.files:
            visibility, assignment, name = where.split("/")
            self.files[where] = load_file(str(self.root / visibility / assignment / f"{name}.safetensors"))
        value = self.files[where][key]
        for item in index:
            value = value[decode_index(item)]
        return value


def _compare(spec: dict, rec: Record, fixtures: Fixtures) -> None:
    """Raise AssertionError (with the checks' own message) unless the record passes ``spec``."""
    label = spec["label"]
    if rec.kind != spec["kind"] or rec.ref != spec["ref"] or rec.index != spec["index"]:
        raise AssertionError(f"{label}: the cell did not make this check (found {rec.kind} {rec.label!r})")
    if rec.got is None:
        raise AssertionError(f"{label}: nothing was recorded")
    if spec["ref"]:
        expected = fixtures.value(spec["ref"], spec["index"])
    elif rec.expected is not None or spec["kind"] == "rows":
        expected = rec.expected
    else:
        raise AssertionError(f"{label}: the record has no expected value")
    if spec["kind"] == "close":
        checks.compare_close(label, rec.got, expected, spec["atol"], spec["rtol"])
    elif spec["kind"] == "equal":
        checks.compare_equal(label, rec.got, expected)
    elif spec["kind"] == "perplexity":
        checks.compare_perplexity(label, rec.got, expected, spec["limit"], spec["atol"])
    elif spec["kind"] == "accuracy":
        checks.compare_accuracy(label, rec.got, expected, spec["minimum"])
    elif spec["kind"] == "shape":
        if tuple(rec.got.tolist()) != tuple(np.asarray(expected).tolist()):
            raise AssertionError(f"{label}: expected shape {tuple(expected.tolist())}, got {tuple(rec.got.tolist())}")
    else:
        checks.compare_rows(label, rec.got, spec["atol"])


def verdict(specs: list[dict], records: list[Record], fixtures: Fixtures) -> str | None:
    """None when the cell passes, else the first reason it does not."""
    for i, spec in enumerate(specs):
        if i >= len(records):
            return f"{spec['label']}: not recorded (the cell stopped after {len(records)} of {len(specs)} checks)"
        try:
            _compare(spec, records[i], fixtures)
        except AssertionError as error:
            return str(error)
        except Exception as error:  # a malformed record must fail the cell, not the grader
            return f"{spec['label']}: cannot be compared ({type(error).__name__}: {str(error)[:120]})"
    if len(records) > len(specs):
        return f"the cell recorded {len(records)} checks, the tests make {len(specs)}"
    return None


# ---- the instructor's checks ------------------------------------------------------------------

def checks_file(assignment: str, fixtures_root: Path) -> Path:
    return fixtures_root / "judge" / f"{assignment}.json"


def source_digest(nb) -> str:
    """SHA-256 of a notebook's code (what its test cells check depends on nothing else but fixtures)."""
    import hashlib

    code = "\n\x00".join(c.source for c in nb.cells if c.cell_type == "code")
    return hashlib.sha256(code.encode()).hexdigest()


def load_checks(assignment: str, fixtures_root: Path, source_nb=None) -> dict[str, list[dict]]:
    """The checks each test cell must make; with ``source_nb``, refuse them if that code changed since."""
    path = checks_file(assignment, fixtures_root)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `make fixtures` (it records what each test cell checks)")
    data = json.loads(path.read_text())
    if source_nb is not None and data["source_sha256"] != source_digest(source_nb):
        raise ValueError(f"{path} is out of date: the code of source/{assignment} changed since it was built; "
                         f"run `python -m staff fixtures {assignment}` and commit it")
    return data["cells"]


def specs_from_run(nb, records: list[Record]) -> dict[str, list[dict]]:
    """Per graded test cell of an executed (instructor) notebook, the checks it made."""
    grouped = by_cell(nb, records)
    return {grade_id: [r.spec() for r in grouped.get(grade_id, [])] for grade_id, _ in _graded_tests(nb)}


def judge_notebook(nb, records: list[Record], specs: dict[str, list[dict]], fixtures: Fixtures) -> dict[str, str | None]:
    """{grade_id: None (passed) or the reason} for every judged cell (in-kernel cells are left out)."""
    grouped = by_cell(nb, records)
    result = {}
    for grade_id, cell_specs in specs.items():
        if cell_specs:
            result[grade_id] = verdict(cell_specs, grouped.get(grade_id, []), fixtures)
    return result


def in_kernel_cells(specs: dict[str, list[dict]]) -> list[str]:
    """Cells whose points nbgrader decides in the kernel (declared ``course.in_kernel`` in the source)."""
    return [grade_id for grade_id, cell_specs in specs.items() if not cell_specs]


def kernel_valued_cells(specs: dict[str, list[dict]]) -> list[str]:
    """Judged cells that compare only with values the kernel computed (a visible test against the
    pretrained model run in the notebook): judged outside, but on numbers a kernel could forge."""
    return [grade_id for grade_id, cell_specs in specs.items() if cell_specs and not any(s["ref"] for s in cell_specs)]


def set_scores(db_url: str, student: str, assignment: str, verdicts: dict[str, str | None]) -> dict[str, float]:
    """Write the judge's points into nbgrader's gradebook: a passed cell keeps nbgrader's score
    (so a cell that failed in the kernel stays failed), a failed one gets 0."""
    from nbgrader.api import Gradebook

    scores = {}
    with _gradebook_lock, Gradebook(db_url) as gb:
        for grade_id, reason in verdicts.items():
            grade = gb.find_grade(grade_id, assignment, assignment, student)
            if reason is not None:
                grade.auto_score = 0.0
            scores[grade_id] = float(grade.auto_score or 0.0)
        gb.db.commit()
    return scores


def build_checks(assignment: str, fixtures_root: Path, timeout: int = 900) -> dict[str, list[dict]]:
    """Run the instructor's source notebook in the sandbox and save what each test cell checks
    (``fixtures/judge/<assignment>.json``); fails if the solution itself does not pass."""
    import tempfile

    import nbformat

    from staff import course_dir
    from staff.grading import sandbox

    nb = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
    with tempfile.TemporaryDirectory(prefix="course-checks-") as folder:
        view = sandbox.fixtures_view(Path(folder) / "fixtures", fixtures_root)
        records = read_records(sandbox.execute(nb, Path(folder) / "scratch", view, timeout))
    problems = [f"cell {c.metadata.get('nbgrader', {}).get('grade_id', c.get('id'))}: {o['ename']}: {o['evalue'][:200]}"
                for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    specs = specs_from_run(nb, records)
    verdicts = judge_notebook(nb, records, specs, Fixtures(fixtures_root))
    problems += [f"{grade_id}: the solution fails its own check: {reason}" for grade_id, reason in verdicts.items() if reason]
    in_kernel = {grade_id for grade_id, c in _graded_tests(nb) if c.metadata.get("course", {}).get("in_kernel")}
    hidden = {grade_id for grade_id, c in _graded_tests(nb) if "### BEGIN HIDDEN TESTS" in c.source}
    problems += [f"{grade_id}: hidden tests compare with no withheld fixture value: declare the expected outputs in "
                 f"the recipe's OUTPUTS, or mark the cell `course.in_kernel` (with the reason) in its metadata"
                 for grade_id in sorted(hidden - in_kernel) if not any(s["ref"] for s in specs.get(grade_id, []))]
    for grade_id in in_kernel:  # declared by the instructor (source notebook): nbgrader's verdict stands
        specs[grade_id] = []
    if problems:
        raise AssertionError(f"{assignment}: " + "; ".join(problems))
    path = checks_file(assignment, fixtures_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"source_sha256": source_digest(nbformat.read(course_dir.source_notebook(assignment),
                                                                              as_version=4)),
                                "cells": specs}, indent=1, sort_keys=True) + "\n")
    return specs


def annotate(nb, verdicts: dict[str, str | None]) -> None:
    """Append the judge's verdict to each judged cell's outputs (what the TA and the feedback see)."""
    from nbformat.v4 import new_output

    for grade_id, cell in _graded_tests(nb):
        if grade_id in verdicts:
            reason = verdicts[grade_id]
            text = "Judged outside the kernel: passed.\n" if reason is None else \
                f"Judged outside the kernel: failed. {reason}\n"
            cell.outputs.append(new_output("stream", name="stdout" if reason is None else "stderr", text=text))
