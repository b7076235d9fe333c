"""Each assignment's authoring, in one folder named like it (``01_attention/`` for
``01_attention``), beside ``source/<assignment>/`` and ``samples/<assignment>/``:

- ``recipe.py``: how its fixtures are computed: ``build()`` returning ``{(visibility, name): arrays}``
  for :func:`staff.authoring.fixtures.build`, from the notebook's own solution; ``TOLERANCES``:
  ``{"<name>" or "<name>/<array>" or "*": (atol, rtol[, share])}``, the tolerance the notebook's
  tests compare that fixture with (``make fixtures-check`` allows a tenth of it, or ``share`` with a
  comment saying why); ``OUTPUTS``, the expected values a grading kernel never sees; ``TRAINED``,
  the fixtures it trains; random inputs drawn with :class:`staff.authoring.tensors.Draws` (the same
  bits on every CPU).
- ``contract.py``: ``CONTRACT``, what its released text promises about the inputs of its hidden
  cases (terms from :mod:`staff.authoring.contract_kit`).
- ``diagram.py``: ``draw()``, its architecture diagram on a :class:`staff.authoring.diagram_kit.Canvas`.
- ``reading.py``: ``READING``, its reading list (keys of :data:`staff.authoring.reading_lists.REFERENCES`).

``_template/`` is what ``make new-assignment`` copies (``staff/authoring/new_assignment.py``); its
leading underscore keeps it out of :func:`assignments`. Folder names start with a digit, like the
assignments, so their modules are loaded by name here.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).parent
#: The modules of an assignment's folder, each named for its part.
PARTS = ("recipe", "contract", "diagram", "reading")
#: The folder ``make new-assignment`` copies.
TEMPLATE = HERE / "_template"


def assignments() -> list[str]:
    """The assignments with a folder here, in course order."""
    return sorted(p.name for p in HERE.iterdir() if p.is_dir() and p.name[:1].isdigit())


def folder(assignment: str) -> Path:
    return HERE / assignment


def module(assignment: str, part: str) -> ModuleType:
    """``<assignment>/<part>.py``, imported (once) as ``staff.authoring.assignments.<assignment>.<part>``."""
    path = folder(assignment) / f"{part}.py"
    if not path.is_file():
        raise KeyError(f"no {part} for {assignment!r}: expected {path}")
    return importlib.import_module(f"{__name__}.{assignment}.{part}")


def recipe(assignment: str) -> ModuleType:
    return module(assignment, "recipe")


def contract(assignment: str) -> Mapping:
    """The assignment's ``CONTRACT`` (empty when it states none: its hidden fixtures are then findings)."""
    if not (folder(assignment) / "contract.py").is_file():
        return {}
    return module(assignment, "contract").CONTRACT


def reading(assignment: str) -> list[tuple[str, str]]:
    """The assignment's reading list: ``[(reference key, why it matters here)]``, in reading order."""
    return module(assignment, "reading").READING
