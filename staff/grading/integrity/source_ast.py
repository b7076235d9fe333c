"""A cell's code as the kernel really runs it, for the scans that read it (never run it).

IPython rewrites ``!cmd``, ``%magic`` and ``%%magic`` into Python before it compiles a cell, so
the scans parse that Python, not the text the student typed. A magic that runs Python
(``%%time``, ``%%capture``, ``%timeit``, ...) becomes one call whose argument is its body *as a
string*: that string is parsed too, and its statements put in the tree right after the call, so
the scans read the body as the code it is (recursively, a ``%%capture`` inside a ``%%time``). So is
a constant string given to ``exec``/``eval``/``compile``.

A student controls the shape of the tree, so nothing here recurses on it: the walker keeps its own
stack (a 600-branch ``elif`` chain is 600 nested ``If`` nodes, past Python's recursion limit for a
recursive visitor), and a cell too deep for the parser itself is :class:`Unreadable`, which the scan
turns into a flag rather than an error.
"""

from __future__ import annotations

import ast
import functools

#: Magics whose body (and line, after its options) is Python the kernel runs.
PYTHON_MAGICS = {"time", "timeit", "capture", "prun"}
#: Builtins that run a string as code: a constant one is read like the cell's own code.
CODE_STRINGS = {"exec", "eval", "compile"}
#: Magic bodies inside magic bodies: deeper than this is not read (and flagged).
MAX_NESTING = 8


class Unreadable(Exception):
    """A cell the scan cannot read whole (nested past what the parser takes, or magic bodies inside
    magic bodies past :data:`MAX_NESTING`): a reason to look, never a reason to stop a batch."""


@functools.lru_cache(maxsize=1)
def _transformer():
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager()


def python(source: str) -> str:
    """IPython syntax (``!cmd``, ``%magic``) as the Python the kernel really runs."""
    return _transformer().transform_cell(source)


def _constant(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def magic_call(node: ast.AST) -> tuple[str, str] | None:
    """``("run_cell_magic", name)`` for IPython's rewriting of a magic (``get_ipython().run_cell_magic(
    'time', '', body)``), also ``system``/``getoutput`` for ``!cmd``; None for any other node."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "get_ipython"
    ):
        return node.func.attr, _constant(node.args[0]) if node.args else None
    return None


def _code_in_line(line: str) -> ast.Module | None:
    """The Python in a magic's line (``-n 1 -r 3 f(x)`` -> ``f(x)``): its options dropped from the left."""
    words = line.split()
    for start in range(min(len(words), 12) + 1):
        try:
            return ast.parse(python(" ".join(words[start:])))
        except SyntaxError:
            continue
    return None


def _embedded(node: ast.Call) -> list[tuple[ast.Module | None, int]]:
    """Code a call runs from strings: ``(tree, line offset)`` per string (None: it is not Python)."""
    magic = magic_call(node)
    if magic and magic[0] in ("run_cell_magic", "run_line_magic") and magic[1] in PYTHON_MAGICS:
        line, body = (_constant(a) for a in (node.args[1:3] + [None, None])[:2])
        found = [(_code_in_line(line), node.lineno - 1)] if line and line.strip() else []
        if magic[0] == "run_cell_magic" and body is not None:
            found.append((_tree(body), node.lineno))
        return found
    if (
        isinstance(node.func, ast.Name)
        and node.func.id in CODE_STRINGS
        and _constant(node.args[0] if node.args else None)
    ):
        return [(_tree(node.args[0].value), node.lineno - 1)]
    return []


def _own_nodes(statement: ast.stmt):
    """The nodes of one statement, not those of the statements nested in it."""
    stack = [statement]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, ast.stmt))


def _expand(tree: ast.Module, depth: int) -> ast.Module:
    """Put the statements of every string of code (magic bodies, ``exec("...")``) right after the
    statement that runs it."""
    for node in list(ast.walk(tree)):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if not isinstance(statements, list) or not statements or not isinstance(statements[0], ast.stmt):
                continue
            expanded = []
            for statement in statements:
                expanded.append(statement)
                for part in _own_nodes(statement):
                    if not isinstance(part, ast.Call):
                        continue
                    for inner, offset in _embedded(part):
                        if inner is None:
                            continue
                        if depth >= MAX_NESTING:
                            raise Unreadable(f"code strings nested more than {MAX_NESTING} deep")
                        inner = _expand(inner, depth + 1)
                        ast.increment_lineno(inner, offset)
                        expanded.extend(inner.body)
            setattr(node, field, expanded)
    return tree


def _tree(source: str) -> ast.Module | None:
    try:
        return ast.parse(python(source))
    except SyntaxError:
        return None  # it will fail to run; nothing to game
    except (RecursionError, MemoryError) as error:
        # The kernel's own limits are the student's to raise (sys.setrecursionlimit): it may run.
        raise Unreadable(f"nested too deep for the parser ({type(error).__name__})") from None


@functools.lru_cache(maxsize=4096)
def parse(source: str) -> ast.Module | None:
    """The cell's syntax tree as the kernel runs it, with the code its magics and ``exec`` strings run
    (read, never changed: the scanners only visit it). None: a syntax error. Raises
    :class:`Unreadable`. Cached: most cells of a batch are the same in every submission (given code,
    read-only cells, answers left as they were released), and IPython's transformation is most of
    the scan's cost."""
    tree = _tree(source)
    return _expand(tree, 0) if tree is not None else None


class Walker:
    """``ast.NodeVisitor`` without recursion: ``visit_<Node>(node)`` before a node's children (return
    False to skip them), ``leave_<Node>(node)`` after them, on a stack of its own."""

    def walk(self, tree: ast.AST) -> None:
        stack: list[tuple[ast.AST, bool]] = [(tree, False)]
        while stack:
            node, leaving = stack.pop()
            kind = type(node).__name__
            if leaving:
                getattr(self, f"leave_{kind}")(node)
                continue
            visit = getattr(self, f"visit_{kind}", None)
            if visit is not None and visit(node) is False:
                continue
            if hasattr(self, f"leave_{kind}"):
                stack.append((node, True))
            stack.extend((child, False) for child in reversed(list(ast.iter_child_nodes(node))))


def strings(node: ast.AST) -> str:
    """The string constants, names and attributes under ``node``, as one text (what ``ast.dump``
    shows of it that matters to a scan, without its recursion)."""
    parts = []
    for part in ast.walk(node):
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            parts.append(part.value)
        elif isinstance(part, ast.Name):
            parts.append(part.id)
        elif isinstance(part, ast.Attribute):
            parts.append(part.attr)
    return " ".join(parts)


def root(node: ast.AST) -> str | None:
    """The name an attribute chain, subscript or call starts from (``os`` in ``os.environ["x"]``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def dotted(node: ast.AST) -> str:
    """``a.b.c`` of an attribute chain; only the trailing part after a call (``f().x`` -> ``x``)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def named(node: ast.AST) -> str:
    """``a.b.c`` of a chain that starts at a name, "" otherwise (``model.to(d).eval`` is no ``eval``)."""
    chain = node
    while isinstance(chain, ast.Attribute):
        chain = chain.value
    return dotted(node) if isinstance(chain, ast.Name) else ""
