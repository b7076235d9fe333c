"""What a notebook says about itself before it is handed in, read from its cells (never run).

The grader finds its cells by nbgrader's metadata: a deleted test cell, a grade id pasted over or
duplicated, stripped metadata or an edited read-only cell cost points silently or are undone at
grading (read-only cells are replaced by the released ones). So the student's notebook is compared
with the released one, cell by grade id, and each problem is named the way the student sees the
cell: its kind, the exercise heading above it, its position, and what to do. Also read from the
cells: the answers still holding the released stub, and how the visible checks came out in a run
(the saved one, or :mod:`course.fresh_run`'s). Nothing here imports more than the standard library.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

#: What nbgrader's ClearSolutions leaves in an answer (nbgrader_config.py's code_stub and text_stub).
CODE_STUB = "raise NotImplementedError()"
TEXT_STUB = "YOUR ANSWER HERE"
FRESH_COPY = "copy the cell back from a fresh copy of the released notebook"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def meta(cell) -> dict:
    """A cell's nbgrader metadata; anything but an object there (the JSON allows ``null``, a list,
    a string) reads as none."""
    found = cell.get("metadata")
    found = found.get("nbgrader") if isinstance(found, dict) else None
    return found if isinstance(found, dict) else {}


def grade_id(cell) -> str | None:
    found = meta(cell).get("grade_id")
    return found if isinstance(found, str) else None


def is_locked(cell) -> bool:
    """nbgrader's rule: graded tests and locked cells are read-only, answers never."""
    m = meta(cell)
    return bool(m) and not m.get("solution") and bool(m.get("grade") or m.get("locked"))


def checksum(cell) -> str:
    """nbgrader's ``utils.compute_checksum``, which the release stores in each cell's metadata;
    written out because nbgrader is not installed on Colab, and checked against it in the tests."""
    m, digest = meta(cell), hashlib.md5()
    for part in (
        cell["source"],
        cell["cell_type"],
        str(m.get("grade", False)),
        str(m.get("solution", False)),
        str(is_locked(cell)),
        m["grade_id"],
    ):
        digest.update(part.encode("utf-8"))
    if m.get("grade", False):
        digest.update(str(float(m["points"])).encode("utf-8"))
    return digest.hexdigest()


def _checksum_or_none(cell) -> str | None:
    try:
        return checksum(cell)
    except (KeyError, TypeError, ValueError):  # a graded cell whose points were stripped: changed too
        return None


def is_visible_check(cell) -> bool:
    m = meta(cell)
    return (
        cell["cell_type"] == "code"
        and not m.get("grade")
        and not m.get("solution")
        and (str(m.get("grade_id", "")).endswith("_visible") or cell["source"].startswith("# Visible check"))
    )


def _sections(cells) -> list[str]:
    """Each cell's exercise: the last markdown heading at or above it, without its points."""
    found, current = [], "the top of the notebook"
    for cell in cells:
        if cell["cell_type"] == "markdown":
            heading = next((line for line in cell["source"].splitlines() if line.startswith("#")), None)
            if heading:
                current = re.sub(r"\s*\([^)]*points?[^)]*\)\s*$", "", heading.lstrip("#").strip())
        found.append(current)
    return found


def describe(cell, section: str) -> str:
    """A cell as the student sees it (grade ids are in the metadata, which students rarely look at)."""
    m, source = meta(cell), cell["source"]
    if m.get("solution") and cell["cell_type"] == "code":
        names = re.findall(r"^(?:def|class)\s+(\w+)", source, re.M)[:3]  # what the cell defines, top level
        return f"your answer {', '.join(f'`{n}`' for n in names) if names else 'cell'} in “{section}”"
    if m.get("solution"):
        question = re.search(r"\*\*(Question \d+)", source)
        return f"your written answer to {question[1] if question else 'the question'} in “{section}”"
    if m.get("grade"):
        return f"the hidden-test cell of “{section}” (empty in your copy: the tests are added at grading)"
    if is_visible_check(cell):
        return f"the visible check of “{section}”"
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return f"the read-only {cell['cell_type']} cell “{first[:60]}” in “{section}”"


@dataclass
class Audit:
    """What the cells say: ``problems`` with the cells and metadata (each names a cell and a fix),
    ``stubs`` (answers still as released), ``restored`` (edited read-only cells: the grader puts the
    released version back, so they are nothing to fix, but the student's run of them may differ from
    the grader's) and ``notes`` (what could not be compared)."""

    problems: list[str] = field(default_factory=list)
    stubs: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _ids(cell) -> set[str]:
    """The cell's id, and Colab's copy of it in its metadata (Colab moves ids there)."""
    return {i for i in (cell.get("id"), cell.get("metadata", {}).get("id")) if i}


def _same_cell(released, cell) -> bool:
    """A student cell that is this released cell, whatever happened to its metadata."""
    if cell["cell_type"] != released["cell_type"]:
        return False
    if _ids(released) & _ids(cell) or cell["source"].strip() == released["source"].strip():
        return True
    name = re.search(r"^\s*(?:def|class)\s+\w+", released["source"], re.M)
    return bool(meta(released).get("solution") and name and name[0].strip() in cell["source"])


def _restored(index: int, what: str, why: str) -> str:
    return (
        f"cell {index + 1}, {what}, {why}: it is read-only and the grader uses the released version, so "
        f"nothing to fix; if your answers rely on your edit, {FRESH_COPY} and run the notebook again"
    )


def compare(student, released) -> tuple[list[str], list[str]]:
    """The student's nbgrader cells against the released notebook's: the problems, each named, and
    the edited read-only cells (restored at grading)."""
    cells, problems, restored = student["cells"], [], []
    sections, released_sections = _sections(cells), _sections(released["cells"])
    mine: dict[str, list[int]] = {}
    for index, cell in enumerate(cells):
        if grade_id(cell):
            mine.setdefault(grade_id(cell), []).append(index)
    theirs = {grade_id(c): (i, c) for i, c in enumerate(released["cells"]) if grade_id(c)}
    claimed: set[int] = set()
    for gid, (position, ref) in theirs.items():
        what = describe(ref, released_sections[position])
        if gid not in mine:
            match = next(
                (
                    i
                    for i, c in enumerate(cells)
                    if i not in claimed and _same_cell(ref, c) and (not meta(c) or grade_id(c) not in theirs)
                ),
                None,
            )
            if match is None:
                problems.append(
                    f"{what} is missing (deleted; released as cell {position + 1}): {FRESH_COPY}, "
                    f"in the same place" + (", then your answer into it" if meta(ref).get("solution") else "")
                )
            elif meta(cells[match]):
                claimed.add(match)
                problems.append(
                    f"cell {match + 1}, {what}, has grade id `{grade_id(cells[match])}` instead of `{gid}` "
                    f"(renamed, or pasted over another cell): {FRESH_COPY}"
                    + (" and put your answer in it" if meta(ref).get("solution") else "")
                )
            else:
                claimed.add(match)
                problems.append(
                    f"cell {match + 1}, {what}, lost its nbgrader metadata (some editors and copy-paste "
                    f"strip it; the grader then cannot find it): {FRESH_COPY}"
                    + (" and paste your answer into it" if meta(ref).get("solution") else "")
                )
            continue
        for extra in mine[gid][:-1]:
            problems.append(
                f"cell {extra + 1} is a second copy of {what} (same grade id `{gid}` as cell "
                f"{mine[gid][-1] + 1}): the grader keeps only the last one and drops this one; "
                f"keep your work in one of them and delete the other"
            )
        index = mine[gid][-1]
        cell = cells[index]
        flags = ("grade", "solution", "locked", "points")
        if cell["cell_type"] != ref["cell_type"] or any(meta(cell).get(k) != meta(ref).get(k) for k in flags):
            problems.append(
                f"cell {index + 1}, {what}, has changed nbgrader metadata (its type or points): {FRESH_COPY}"
            )
        elif is_locked(ref) and cell["source"].strip() != ref["source"].strip():
            restored.append(
                _restored(index, what, "differs from the release (edited, or from an earlier release)")
            )
    for gid, indices in mine.items():
        for index in indices:
            if gid not in theirs and index not in claimed:
                problems.append(
                    f"cell {index + 1} (in “{sections[index]}”) carries the grade id `{gid}`, which the "
                    f"released notebook does not have: remove its nbgrader metadata (or delete the cell "
                    f"if you copied it from elsewhere)"
                )
    return problems, restored


def self_check(student) -> tuple[list[str], list[str]]:
    """Without a released copy: duplicates, and read-only cells against nbgrader's own checksums
    (the problems, and the edited read-only cells)."""
    cells, problems, restored, seen = student["cells"], [], [], {}
    sections = _sections(cells)
    for index, cell in enumerate(cells):
        gid = grade_id(cell)
        if not gid:
            continue
        what = describe(cell, sections[index])
        if gid in seen:
            problems.append(
                f"cells {seen[gid] + 1} and {index + 1} are both {what} (same grade id `{gid}`): keep "
                f"your work in one of them and delete the other"
            )
        seen[gid] = index
        stored = meta(cell).get("checksum")
        if is_locked(cell) and stored and _checksum_or_none(cell) != stored:
            restored.append(_restored(index, what, "was edited (nbgrader's checksum differs)"))
    return problems, restored


def stubs(student) -> list[str]:
    """Answers still as released: code that raises the stub (its line named: the student deletes
    it once the answer is written), written answers still holding the placeholder."""
    found = []
    sections = _sections(student["cells"])
    for index, cell in enumerate(student["cells"]):
        if not meta(cell).get("solution"):
            continue
        where = f"cell {index + 1}, {describe(cell, sections[index])}"
        if cell["cell_type"] == "code":
            code = [line.split("#", 1)[0].strip() for line in cell["source"].splitlines()]
            if CODE_STUB in code:
                found.append(
                    f"{where}: line {code.index(CODE_STUB) + 1} still raises `{CODE_STUB}`; write "
                    f"your answer and delete that line"
                )
        elif TEXT_STUB in cell["source"]:
            found.append(f"{where}: still says “{TEXT_STUB}”; replace it with your answer")
    return found


def audit(student, released=None) -> Audit:
    result = Audit(stubs=stubs(student))
    if released is not None:
        result.problems, result.restored = compare(student, released)
    else:
        result.problems, result.restored = self_check(student)
        result.notes.append(
            "no released copy of the notebook was found to compare with, so deleted cells and "
            "stripped metadata cannot be seen; read-only cells were checked against nbgrader's "
            "checksums only"
        )
    return result


def visible_checks(nb) -> list[tuple[str, str]]:
    """How each visible check came out in the run whose outputs ``nb`` holds: (label, outcome)
    with outcome ``passed``, ``not run`` or ``failed: <error>`` (the check's own message)."""
    outcomes = []
    sections = _sections(nb["cells"])
    for index, cell in enumerate(nb["cells"]):
        if not is_visible_check(cell):
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            message = _ANSI.sub("", str(errors[0].get("evalue", ""))).strip().splitlines()
            name = errors[0].get("ename", "error")
            said = (
                message[0][:300]
                if message
                else ("an answer it uses is still the released stub" if name == "NotImplementedError" else "")
            )
            outcome = f"failed: {name}: {said}"
        elif cell.get("execution_count") is None and not cell.get("outputs"):
            outcome = "not run"
        else:
            outcome = "passed"
        outcomes.append((f"cell {index + 1}, {describe(cell, sections[index])}", outcome))
    return outcomes
