"""Answers handed to a library: calls of an implementation the exercise asks students to write.

A from-scratch exercise answered by ``torch.softmax``, ``torch.nn.MultiheadAttention``,
transformers' own DistilBERT layers or its question-answering post-processing runs, and may pass
every check: the values are right, only the work is not the student's. No check can tell them
apart, so this module names them for a person. Each answer cell of the source notebook lists, in
its metadata, the calls that would answer it::

    "course": {"library_answers": ["torch", "torch.*", "scipy", "scipy.*"]}

(shell-style patterns on the dotted name the call resolves to, or on an attribute chain as written,
``*self_attn`` for the attention part of a given ``nn.TransformerDecoderLayer``: ``F.softmax`` after
``import torch.nn.functional as F`` is ``torch.nn.functional.softmax``), and to what that names
(:mod:`resolve`: ``course.text.torch.softmax`` is ``torch.softmax``). The lists come from the
released notebook (the course's copy), never from the submission. A cell the student added (no
grade id) is held to what every exercise of the notebook lists. Cells where the notebook asks for
the library (parity checks, the SDPA comparison) list nothing, so nothing there is flagged.
"""

from __future__ import annotations

import ast
import fnmatch
import re

from nbformat import NotebookNode

from staff.course_dir import nbgrader
from staff.grading.integrity.resolve import canonical
from staff.grading.integrity.source_ast import Unreadable, Walker, dotted, parse

_HEADING = re.compile(r"^##\s+(\d+)\.\s+(.+?)(?:\s+\(.*\))?\s*$", re.MULTILINE)


def listed(released: NotebookNode) -> dict[str, tuple[str, list[str]]]:
    """``{grade id: (exercise, patterns)}`` of the released answer cells; the exercise is the
    notebook's ``## <n>. <title>`` heading above the cell."""
    found, exercise = {}, "this notebook"
    for cell in released.cells:
        if cell.cell_type == "markdown":
            headings = _HEADING.findall(cell.source)
            if headings:
                exercise = f"exercise {headings[-1][0]} ({headings[-1][1]})"
        patterns = cell.metadata.get("course", {}).get("library_answers")
        grade_id = nbgrader(cell).get("grade_id")
        if cell.cell_type == "code" and nbgrader(cell).get("solution") and grade_id and patterns is not None:
            found[grade_id] = (exercise, [str(p) for p in patterns])
    return found


class _Names(Walker):
    """Dotted names a cell uses, through the notebook's import aliases (``np`` -> ``numpy``)."""

    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases, self.used = aliases, []

    def resolve(self, node: ast.AST) -> str | None:
        if (
            isinstance(node, ast.Call)
            and dotted(node.func) == "getattr"
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            base = self.resolve(node.args[0])  # getattr(torch, "softmax") is torch.softmax
            return f"{base}.{node.args[1].value}" if base else None
        name = dotted(node)
        head, _, rest = name.partition(".")
        if not name or head not in self.aliases:
            return None
        return f"{self.aliases[head]}.{rest}" if rest else self.aliases[head]

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.used.append((alias.name, node.lineno))
            if alias.asname:  # import torch.nn.functional as F
                self.aliases[alias.asname] = alias.name
            else:  # import torch.nn binds torch
                self.aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            full = f"{node.module}.{alias.name}" if node.module else alias.name
            self.used.append((full, node.lineno))
            self.aliases[alias.asname or alias.name] = full

    def leave_Assign(self, node: ast.Assign) -> None:
        value = self.resolve(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                if value:
                    self.aliases[target.id] = value  # F = torch.nn.functional
                else:
                    self.aliases.pop(target.id, None)

    def visit_Attribute(self, node: ast.Attribute) -> bool:
        name = self.resolve(node)
        # An object's parts by their own names (``layer.self_attn``): a pattern such as ``*self_attn``
        # names a given library module's pieces, whatever object holds them.
        self.used.append((name or dotted(node) or node.attr, node.lineno))
        return not name

    def visit_Name(self, node: ast.Name) -> None:
        name = self.resolve(node)
        if name and name != node.id:
            self.used.append((name, node.lineno))

    def visit_Call(self, node: ast.Call) -> None:
        name = self.resolve(node) if dotted(node.func) == "getattr" else None
        if name:
            self.used.append((name, node.lineno))


def _aliases(nb: NotebookNode) -> dict[str, str]:
    """Import aliases the whole notebook sets up (the setup cell's ``import torch.nn.functional as F``)."""
    names = _Names({})
    for cell in nb.cells:
        try:
            tree = parse(cell.source) if cell.cell_type == "code" else None
        except Unreadable:  # static_scan flags the cell itself
            continue
        for node in ast.walk(tree) if tree else []:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names.walk(node)
    return names.aliases


def uses(source: str, patterns: list[str], aliases: dict[str, str]) -> list[tuple[str, int]]:
    """``(dotted name, line)`` of each use in ``source`` that matches one of ``patterns``."""
    tree = parse(source)
    if tree is None or not patterns:
        return []
    names = _Names(dict(aliases))
    names.walk(tree)
    found = {}
    for name, line in names.used:
        real = canonical(name)  # course.text.torch.softmax is torch.softmax
        if any(fnmatch.fnmatchcase(n, p) for n in (name, real) for p in patterns):
            found.setdefault(name if real == name else f"{name} (that is, {real})", line)
    return sorted(found.items(), key=lambda item: item[1])


def scan(cells: list[tuple[str, NotebookNode]], nb: NotebookNode, released: NotebookNode) -> list[str]:
    """One flag per library implementation a student's cell calls, naming the call, the cell and
    the exercise it would answer."""
    exercises = listed(released)
    if not exercises:
        return []
    everywhere = set.intersection(*(set(p) for _, p in exercises.values()))
    aliases = _aliases(nb)
    found = []
    for name, cell in cells:
        exercise, patterns = exercises.get(
            nbgrader(cell).get("grade_id"), ("every exercise", sorted(everywhere))
        )
        try:
            calls = uses(cell.source, patterns, aliases)
        except Unreadable:  # static_scan flags the cell itself
            continue
        if calls:
            named = ", ".join(f"{call} (line {line})" for call, line in calls[:4])
            more = f" and {len(calls) - 4} more" if len(calls) > 4 else ""
            found.append(
                f"{name}: library: uses {named}{more}: an implementation of {exercise}, "
                f"which asks for the student's own"
            )
    return found
