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

No list of implementations is complete, so a from-scratch exercise also says what its answer may
use, beside it (``"may_use": ["numpy", "numpy.*"]`` for assignment 1; tensor operations and
``nn`` building blocks, ``torch.*``, for the layers of assignments 2 and 5), and any module name the
answer reaches through an import outside that list and :data:`ALWAYS_ALLOWED` is named too: the
scan proves what it can (a name that resolves inside the list) and flags what it cannot.
"""

from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass

from nbformat import NotebookNode

from staff.course_dir import exercise_titles, nbgrader
from staff.grading.integrity.resolve import canonical
from staff.grading.integrity.source_ast import Unreadable, Walker, dotted, parse

#: Modules any answer may use, whatever its exercise allows: the standard library's computation and
#: plumbing, and the notebooks' plotting, progress bars, checks and hand-in (none of them answers an
#: exercise of this course; what is dangerous in ``os`` and ``sys`` is flagged by name elsewhere).
ALWAYS_ALLOWED = [
    f"{module}{tail}"
    for module in (
        "math", "cmath", "itertools", "functools", "collections", "typing", "dataclasses", "re",
        "string", "statistics", "heapq", "bisect", "copy", "time", "warnings", "random", "sys", "os",
        "pathlib", "json", "pprint", "textwrap", "contextlib", "enum", "abc", "numbers", "fractions",
        "decimal", "matplotlib", "seaborn", "tqdm", "IPython.display", "course.checks",
        "course.figures", "course.env", "course.submission",
    )
    for tail in ("", ".*")
]  # fmt: skip


@dataclass(frozen=True)
class Exercise:
    """What the release says of one answer cell: its exercise, the library implementations that
    would answer it (``library_answers``) and, for a from-scratch exercise, the only modules its
    answer may use (``may_use``, None: any), :data:`ALWAYS_ALLOWED` besides."""

    title: str
    answers: list[str]
    may_use: list[str] | None


def listed(released: NotebookNode) -> dict[str, Exercise]:
    """``{grade id: Exercise}`` of the released answer cells; the exercise is the notebook's
    ``## <n>. <title>`` heading above the cell."""
    found = {}
    for cell, exercise in zip(released.cells, exercise_titles(released), strict=True):
        course = cell.metadata.get("course", {})
        patterns, allowed = course.get("library_answers"), course.get("may_use")
        grade_id = nbgrader(cell).get("grade_id")
        if cell.cell_type == "code" and nbgrader(cell).get("solution") and grade_id and patterns is not None:
            found[grade_id] = Exercise(
                exercise,
                [str(p) for p in patterns],
                None if allowed is None else [str(p) for p in allowed] + ALWAYS_ALLOWED,
            )
    return found


class _Names(Walker):
    """Dotted names a cell uses, through the notebook's import aliases (``np`` -> ``numpy``)."""

    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases
        #: ``(name, line, imported)``: imported when the name starts at an import (``np.exp``, the
        #: module of ``import torch``), not at an object the code made (``layer.self_attn``)
        self.used: list[tuple[str, int, bool]] = []

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
            self.used.append((alias.name, node.lineno, True))
            if alias.asname:  # import torch.nn.functional as F
                self.aliases[alias.asname] = alias.name
            else:  # import torch.nn binds torch
                self.aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            full = f"{node.module}.{alias.name}" if node.module else alias.name
            self.used.append((full, node.lineno, True))
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
        self.used.append((name or dotted(node) or node.attr, node.lineno, bool(name)))
        return not name

    def visit_Name(self, node: ast.Name) -> None:
        name = self.resolve(node)
        if name and name != node.id:
            self.used.append((name, node.lineno, True))

    def visit_Call(self, node: ast.Call) -> None:
        name = self.resolve(node) if dotted(node.func) == "getattr" else None
        if name:
            self.used.append((name, node.lineno, True))


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


def _matches(name: str, real: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(n, p) for n in (name, real) for p in patterns)


def uses(
    source: str, patterns: list[str], aliases: dict[str, str], may_use: list[str] | None = None
) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """``(library, outside)``: ``(dotted name, line)`` of each use in ``source`` that matches one of
    ``patterns``, and of each module's name it uses that ``may_use`` does not allow (None: any)."""
    tree = parse(source)
    if tree is None:
        return [], []
    names = _Names(dict(aliases))
    names.walk(tree)
    library: dict[str, int] = {}
    outside: dict[str, int] = {}
    for name, line, imported in names.used:
        real = canonical(name)  # course.text.torch.softmax is torch.softmax
        shown = name if real == name else f"{name} (that is, {real})"
        if patterns and _matches(name, real, patterns):
            library.setdefault(shown, line)
        elif imported and may_use is not None and not _matches(name, real, may_use):
            outside.setdefault(shown, line)
    return [sorted(found.items(), key=lambda item: item[1]) for found in (library, outside)]


def _listing(calls: list[tuple[str, int]]) -> str:
    named = ", ".join(f"{call} (line {line})" for call, line in calls[:4])
    return named + (f" and {len(calls) - 4} more" if len(calls) > 4 else "")


def _allowed(patterns: list[str]) -> str:
    """``numpy.*`` and ``numpy`` as ``numpy``: what the exercise's own list allows, for the flag."""
    own = [p for p in patterns if p not in ALWAYS_ALLOWED]
    return ", ".join(dict.fromkeys(p.removesuffix(".*") for p in own)) or "the standard library"


def scan(cells: list[tuple[str, NotebookNode]], nb: NotebookNode, released: NotebookNode) -> list[str]:
    """One flag per cell that calls a library implementation of its exercise, naming the calls, the
    cell and the exercise; one per cell of a from-scratch exercise that uses a module its exercise
    does not allow. A cell the student added is held to what every exercise lists as an answer, and
    may use what any exercise allows; the release's other answer cells (free text, given plots) to
    what every exercise lists."""
    exercises = listed(released)
    if not exercises:
        return []
    everywhere = set.intersection(*(set(e.answers) for e in exercises.values()))
    limits = [e.may_use for e in exercises.values()]
    anywhere = None if any(limit is None for limit in limits) else sorted(set().union(*map(set, limits)))
    added = Exercise("every exercise", sorted(everywhere), anywhere)
    other = Exercise("every exercise", sorted(everywhere), None)  # the release's other cells
    released_ids = {nbgrader(c).get("grade_id") for c in released.cells} - {None}
    aliases = _aliases(nb)
    found = []
    for name, cell in cells:
        grade_id = nbgrader(cell).get("grade_id")
        exercise = exercises.get(grade_id, other if grade_id in released_ids else added)
        try:
            library, outside = uses(cell.source, exercise.answers, aliases, exercise.may_use)
        except Unreadable:  # static_scan flags the cell itself
            continue
        if library:
            found.append(
                f"{name}: library: uses {_listing(library)}: an implementation of {exercise.title}, "
                f"which asks for the student's own"
            )
        if outside:
            found.append(
                f"{name}: outside the exercise: uses {_listing(outside)}, which {exercise.title} does not "
                f"allow (its answer may use {_allowed(exercise.may_use)})"
            )
    return found
