"""Repair a submission from the released notebook before nbgrader grades it.

nbgrader finds its cells by their metadata. When a student deletes a test cell, or an editor
or a copy-paste into a fresh notebook strips the ``nbgrader`` metadata, nbgrader silently gives
those points "needs manual grade", which exports as 0.0 — indistinguishable from a real zero
(nbgrader #1941). Here every nbgrader cell of the released notebook is found in the submission,
by grade id, then cell id, then content, then position (free-text answers); found cells get their metadata back, missing ones are
put back in place (test and other read-only cells are overwritten by nbgrader anyway, so putting
them back changes no answer). Student cells are never altered. A submission's metadata is the
student's to edit, and nbformat takes any JSON under ``nbgrader``: a value that is not an object
(``null``, a list, a string), or an object whose grade id is not a string, is dropped first, so the
cell is found and restored like a stripped one.
"""

from __future__ import annotations

import copy

from nbformat import NotebookNode

from staff.course_dir import nbgrader


def _grade_id(cell: NotebookNode) -> str | None:
    """The cell's grade id (None unless a non-empty string: nbgrader takes nothing else)."""
    grade_id = nbgrader(cell).get("grade_id")
    return grade_id if isinstance(grade_id, str) and grade_id else None


def _cell_ids(cell: NotebookNode) -> set[str]:
    """The cell's id, and Colab's copy of it in metadata (Colab moves ids there)."""
    return {i for i in (cell.get("id"), cell.metadata.get("id")) if isinstance(i, str) and i}


def _json_type(value) -> str:
    """JSON's name of ``value``'s type (a note names what it found)."""
    kinds = ((bool, "boolean"), (dict, "object"), (list, "array"), (str, "string"), ((int, float), "number"))
    return next((name for kind, name in kinds if isinstance(value, kind)), "null")


def _drop_malformed(cells: list[NotebookNode]) -> str | None:
    """Drop ``nbgrader`` metadata nbgrader cannot read (not a JSON object, or a grade id that is not
    a string: nbgrader's schema takes neither, and a list is no key at all); a note if any was."""
    dropped = []
    for i, cell in enumerate(cells):
        meta = cell.metadata.get("nbgrader", {})
        if not isinstance(meta, dict):
            dropped.append(f"cell {i + 1} ({_json_type(meta)})")
        elif not isinstance(meta.get("grade_id", ""), str):
            dropped.append(f"cell {i + 1} (a grade id that is {_json_type(meta['grade_id'])})")
        else:
            continue
        del cell.metadata["nbgrader"]
    if not dropped:
        return None
    more = f" and {len(dropped) - 10} more" if len(dropped) > 10 else ""
    return (
        f"dropped nbgrader metadata that is not an object, or not nbgrader's, from {len(dropped)} "
        f"cell(s): {', '.join(dropped[:10])}{more}"
    )


def _key_line(source: str) -> str:
    """The first line that identifies an answer cell and survives editing: its ``def``/``class``
    line (students keep the signature), else the first non-comment line."""
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("def ", "class ")):
            return line
    return next((line for line in lines if not line.startswith("#")), lines[0] if lines else "")


def _find(
    released: NotebookNode, cells: list[NotebookNode], taken: set[int], position: int
) -> tuple[int | None, str]:
    gid = _grade_id(released)
    for i, cell in enumerate(cells):
        if i not in taken and _grade_id(cell) == gid and cell.cell_type == released.cell_type:
            return i, ""
    for i, cell in enumerate(cells):
        if i not in taken and not nbgrader(cell) and released.get("id") in _cell_ids(cell):
            return i, "cell id"
    text = released.source.strip()
    key = _key_line(released.source)
    for i, cell in enumerate(cells):
        if i in taken or nbgrader(cell) or cell.cell_type != released.cell_type:
            continue
        if cell.source.strip() == text or (nbgrader(released).get("solution") and key and key in cell.source):
            return i, "content"
    # An answer whose text shares nothing with the stub (a free-text answer): the unclaimed
    # cell of the same type right after the previous match, where the student typed it.
    following = position + 1
    if (
        nbgrader(released).get("solution")
        and following < len(cells)
        and following not in taken
        and not nbgrader(cells[following])
        and cells[following].cell_type == released.cell_type
    ):
        return following, "position"
    return None, ""


def repair(submitted: NotebookNode, released: NotebookNode) -> tuple[NotebookNode, list[str]]:
    """Return the repaired notebook and what was done (empty list: nothing needed)."""
    nb = copy.deepcopy(submitted)
    cells = nb.cells
    notes: list[str] = [note] if (note := _drop_malformed(cells)) else []
    # A copy-pasted cell carries a second copy of a grade id, which nbgrader rejects: keep the
    # last one (the student's latest work), strip the earlier ones.
    last: dict[str, int] = {}
    for i, cell in enumerate(cells):
        if _grade_id(cell):
            if _grade_id(cell) in last:
                cells[last[_grade_id(cell)]].metadata.pop("nbgrader")
                notes.append(f"removed a duplicate of cell {_grade_id(cell)}")
            last[_grade_id(cell)] = i
    taken: set[int] = set()
    position = -1  # index in `cells` of the last released cell matched so far
    restored, deleted = [], []
    for ref in (c for c in released.cells if nbgrader(c)):
        index, how = _find(ref, cells, taken, position)
        if index is None:
            fresh = copy.deepcopy(ref)
            if nb.get("nbformat_minor", 5) < 5:  # cells carry ids only from format 4.5 on
                fresh.pop("id", None)
            cells.insert(position + 1, fresh)
            taken = {t + 1 if t > position else t for t in taken}
            index = position + 1
            deleted.append(_grade_id(ref))
        elif how:
            cells[index].metadata["nbgrader"] = copy.deepcopy(nbgrader(ref))
            restored.append(_grade_id(ref))
        taken.add(index)
        position = max(position, index)
    if deleted:
        notes.append(f"put back {len(deleted)} deleted cell(s): {', '.join(deleted)}")
    if restored:
        notes.append(f"restored nbgrader metadata of {len(restored)} cell(s): {', '.join(restored)}")
    return nb, notes
