"""What a dotted name names, whatever the path a student took to it.

A module's attributes include every module it imports: ``course.text.torch.softmax`` **is**
``torch.softmax``, ``course.models.transformers.DistilBertModel`` is transformers' own. A scan that
matched only the name as written would miss those, so :func:`canonical` follows each module's
explicit imports (``import torch``, ``from transformers import X as Y``, relative ones) to the
module or object they bind, until the name starts at a module that does not re-export it.

It reads the modules' source files (found from the installed packages' folders, without importing
anything: a name in a student's code never makes the grader import a module), so it sees what a
module imports by name at its top level; a name a module builds otherwise (a star import, a lazy
``__getattr__``) stays as written, and the scan's patterns then match its written form.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

#: A name rewritten more often than this is left as it is (a cycle of re-exports).
MAX_STEPS = 16


@functools.lru_cache(maxsize=256)
def _package_folders(top: str) -> tuple[Path, ...]:
    """The folders of a top-level package (or the file's folder of a top-level module), no import."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return ()
    if spec is None:
        return ()
    if spec.submodule_search_locations:
        return tuple(Path(p) for p in spec.submodule_search_locations)
    return (Path(spec.origin).parent,) if spec.origin and spec.origin.endswith(".py") else ()


@functools.lru_cache(maxsize=1024)
def module_file(module: str) -> Path | None:
    """The source file of ``module`` (a package's ``__init__.py``), None if it is not a Python file."""
    top, *rest = module.split(".")
    if not top.isidentifier() or not all(part.isidentifier() for part in rest):
        return None
    for folder in _package_folders(top):
        base = folder.joinpath(*rest) if rest else folder
        if not rest and (folder / f"{top}.py").is_file():
            return folder / f"{top}.py"
        for candidate in (base / "__init__.py", base.with_suffix(".py") if rest else None):
            if candidate is not None and candidate.is_file():
                return candidate
    return None


@functools.lru_cache(maxsize=1024)
def imports(module: str) -> dict[str, str]:
    """``{name: what it binds}`` of the top-level imports of ``module``'s source."""
    path = module_file(module)
    if path is None:
        return {}
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        return {}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    bound: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - (node.level - 1)] if node.level > 1 else parent
                base = ".".join(parent + ([base] if base else []))
            for alias in node.names:
                if alias.name != "*":
                    bound[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
    return bound


@functools.lru_cache(maxsize=8192)
def canonical(name: str) -> str:
    """``name`` with every module re-export followed (``course.text.torch.softmax`` -> ``torch.softmax``)."""
    for _ in range(MAX_STEPS):
        parts = name.split(".")
        for split in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:split])
            if module_file(module) is None:
                continue
            target = imports(module).get(parts[split])
            if target and target != ".".join(parts[: split + 1]):
                name = ".".join([target, *parts[split + 1 :]])
                break
            return name  # the longest module prefix does not re-export the next part
        else:
            return name
    return name
