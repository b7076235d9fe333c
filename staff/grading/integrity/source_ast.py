"""A cell's code as the kernel really runs it, for the scans that read it (never run it).

IPython rewrites ``!cmd``, ``%magic`` and ``%%magic`` into Python before it compiles a cell, so
the scans parse that Python, not the text the student typed."""

from __future__ import annotations

import ast
import functools


@functools.lru_cache(maxsize=1)
def _transformer():
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager()


def python(source: str) -> str:
    """IPython syntax (``!cmd``, ``%magic``) as the Python the kernel really runs."""
    return _transformer().transform_cell(source)


@functools.lru_cache(maxsize=4096)
def parse(source: str) -> ast.Module | None:
    """The cell's syntax tree (read, never changed: the scanners only visit it). Cached: most cells
    of a batch are the same in every submission (given code, read-only cells, answers left as they
    were released), and IPython's transformation is most of the scan's cost."""
    try:
        return ast.parse(python(source))
    except SyntaxError:
        return None  # it will fail to run; nothing to game


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
