"""What a student wrote in one assignment, as text a similarity engine can compare.

Similarity engines compare files, and a notebook is not one: its released cells (the skeleton, the
given imports, the tests) are the same in every submission and would make every pair look alike,
and its free-text answers are prose. So a submission is reduced to its answer code cells (nbgrader
``solution`` code cells, found as the grader finds them: :func:`repair.repair`), and in each cell
to the logical lines the released cell does not already hold. Those lines are normalised so that a
copy cannot hide behind cosmetics: comments and docstrings dropped, each logical line's tokens
joined by one space (line breaks, spacing and wrapping gone), and every name the student bound
renamed by its order of first appearance within its top-level statement. Numbering restarts at
every top-level statement, so reordered functions keep their text; names the release gives (its
imports, the functions and parameters of the skeleton), builtins, attributes and keyword arguments
keep theirs, so the code still says what it calls.

Each normalised line remembers its cell and line range, so a match found in the normalised text is
shown on the code as the student wrote it. Reads notebooks; runs nothing.
"""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from staff.course_dir import nbgrader
from staff.grading import repair

_KEEP = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | {"self", "cls"}
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
# IPython lines are not Python (`%timeit f(x)`, `!pip install ...`, `f?`): they carry no answer.
_MAGIC = re.compile(r"^\s*(?:[%!].*|.*\?\s*)$")
# When a cell does not tokenize (a syntax error, an unclosed bracket), each line is split this way.
_ROUGH = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|'[^'\n]*'|\"[^\"\n]*\"|\S")


@dataclass(frozen=True)
class Line:
    """One normalised logical line and where it came from."""

    text: str
    cell: str  # the answer cell's grade id
    first: int  # its first and last line in the cell as submitted, from 1
    last: int


@dataclass
class Answers:
    """A submission reduced to what its student wrote."""

    label: str  # the student, or an archive entry
    cells: dict[str, str] = field(default_factory=dict)  # grade id -> answer code as submitted
    lines: list[Line] = field(default_factory=list)

    @property
    def code(self) -> str:
        """The normalised code, one logical line per line (what the engine fingerprints)."""
        return "\n".join(line.text for line in self.lines)


@dataclass(frozen=True)
class Release:
    """What the released notebook gives every student of an assignment."""

    given: frozenset[str]  # names kept as they are
    skeleton: dict[str, frozenset[str]]  # grade id -> its released logical lines, normalised
    notebook: NotebookNode


def release(path: Path) -> Release:
    """The released notebook's given names and, per answer code cell, its given lines."""
    nb = nbformat.read(path, as_version=4)
    answer = [c for c in nb.cells if _is_answer(c)]
    given = set(_KEEP)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if _is_answer(cell):  # the skeleton's function, class and parameter names, its starter code
            given |= {t for t, *_ in _tokens(cell.source) or [] if t.isidentifier()}
        else:  # what the notebook's own cells define at top level (imports, helpers)
            given |= _top_level_names(cell.source)
    frozen = frozenset(given)
    skeleton = {
        nbgrader(c)["grade_id"]: frozenset(line.strip() for line, _, _ in normalise(c.source, frozen))
        for c in answer
    }
    return Release(frozen, skeleton, nb)


def answers(notebook: NotebookNode | Path, released: Release, label: str) -> Answers:
    """The answer code of a submitted notebook, without its released lines, normalised."""
    if not isinstance(notebook, NotebookNode):
        try:
            notebook = nbformat.read(notebook, as_version=4)
        except Exception:  # an unreadable file is a submission with nothing to compare
            return Answers(label)
    notebook, _ = repair.repair(notebook, released.notebook)
    out = Answers(label)
    for cell in notebook.cells:
        if not _is_answer(cell) or nbgrader(cell).get("grade_id") not in released.skeleton:
            continue
        grade_id = nbgrader(cell)["grade_id"]
        given = released.skeleton[grade_id]
        out.cells[grade_id] = cell.source
        out.lines += [
            Line(text, grade_id, first, last)
            for text, first, last in normalise(cell.source, released.given)
            if text.strip() not in given
        ]
    return out


def normalise(source: str, given: frozenset[str]) -> list[tuple[str, int, int]]:
    """(normalised logical line, first line, last line) of ``source``: no comments, docstrings or
    formatting; bound names renamed ``v1, v2, ...`` in order of appearance per top-level statement."""
    tokens = _tokens(source)
    if tokens is None:  # does not tokenize: one logical line per physical line, split roughly
        tokens, depth = [], 0
        for number, line in enumerate(source.splitlines(), 1):
            if _MAGIC.match(line) or not line.split("#")[0].strip():
                continue
            indent = (len(line) - len(line.lstrip())) // 4
            tokens += [
                (t, number, "name" if t.isidentifier() else "string" if t[0] in "'\"" else "other", indent)
                for t in _ROUGH.findall(line.split("#")[0])
            ]
            tokens.append(("\n", number, "newline", indent))
    # What the student imports is a library's name, not one the student chose.
    imported, first, importing = set(), True, False
    for text, _, kind, _ in tokens:
        if first:
            importing = text in ("import", "from")
        elif importing and kind == "name":
            imported.add(text)
        first = kind == "newline"
    given = given | imported
    out: list[tuple[str, int, int]] = []
    names: dict[str, str] = {}
    line: list[tuple[str, int, str]] = []
    for text, number, kind, depth in tokens:
        if kind != "newline":
            line.append((text, number, kind))
            continue
        if not line or all(k == "string" for _, _, k in line):  # a docstring or a bare string
            line = []
            continue
        if depth == 0:  # a new top-level statement: its names are numbered afresh
            names = {}
        words, signature, brackets = [], line[0][0] in ("def", "async", "class"), 0
        for j, (word, _, kind) in enumerate(line):
            before = line[j - 1][0] if j else ""
            after = line[j + 1][0] if j + 1 < len(line) else ""
            keyword_argument = brackets and after == "=" and before in ("(", ",") and not signature
            if kind == "name" and word not in given and before != "." and not keyword_argument:
                word = names.setdefault(word, f"v{len(names) + 1}")
            brackets += (word in ("(", "[", "{")) - (word in (")", "]", "}"))
            words.append(word.replace("\n", "\\n"))
        out.append(("    " * depth + " ".join(words), line[0][1], line[-1][1]))
        line = []
    return out


def _tokens(source: str) -> list[tuple[str, int, str, int]] | None:
    """(text, line, kind, indentation depth) per token, a "newline" token ending each logical line;
    None when the source does not tokenize."""
    lines = ["" if _MAGIC.match(line) else line for line in source.splitlines()]
    out: list[tuple[str, int, str, int]] = []
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
            if token.type in _SKIP:
                continue
            if token.type == tokenize.INDENT:
                depth += 1
            elif token.type == tokenize.DEDENT:
                depth -= 1
            elif token.type == tokenize.NEWLINE:
                out.append(("\n", token.start[0], "newline", depth))
            else:
                kind = {tokenize.NAME: "name", tokenize.STRING: "string"}.get(token.type, "other")
                out.append((token.string, token.start[0], kind, depth))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    if out and out[-1][2] != "newline":
        out.append(("\n", out[-1][1], "newline", depth))
    return out


def _top_level_names(source: str) -> set[str]:
    """What a released cell defines for the notebook (imports, functions, classes), not its variables
    (the visible checks' ``x``, ``weights``... are any student's local names too)."""
    try:
        tree = ast.parse("\n".join("" if _MAGIC.match(line) else line for line in source.splitlines()))
    except SyntaxError:
        return set()
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
    return found


def _is_answer(cell: NotebookNode) -> bool:
    return cell.cell_type == "code" and bool(nbgrader(cell).get("solution"))
