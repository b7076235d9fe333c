"""How each assignment's fixtures are computed: one module per assignment, named like it
(``01_attention.py`` for ``01_attention``), each with

- ``build()`` returning ``{(visibility, name): arrays}`` for :func:`staff.authoring.fixtures.build`;
- ``TOLERANCES``: ``{"<name>" or "<name>/<array>" or "*": (atol, rtol[, share])}``, the tolerance
  the notebook's tests compare that fixture with (``make fixtures-check`` allows a tenth of it, or
  ``share`` with a comment saying why);
- random inputs drawn with :class:`staff.authoring.tensors.Draws` (the same bits on every CPU).

Module names start with a digit, like the assignments, so they are loaded by name here.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).parent


def assignments() -> list[str]:
    """Assignments with a recipe, in course order."""
    return sorted(p.stem for p in HERE.glob("[0-9]*.py"))


def load(assignment: str) -> ModuleType:
    if not (HERE / f"{assignment}.py").is_file():
        raise KeyError(f"no fixture recipe for {assignment!r}: expected {HERE / (assignment + '.py')}")
    return importlib.import_module(f"{__name__}.{assignment}")
