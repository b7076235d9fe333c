"""Grading each part on its own: while a later exercise's hidden test runs, the notebook's names
of earlier parts point at the course's reference versions (defined in that hidden test), so one
mistake costs its own exercise's points once instead of failing every exercise built on it.

The student's own functions are put back when the test ends, whatever happens in it: the cells
after it (plots, training, later exercises) run on the student's code as the student wrote it.
Nothing here is a solution: the reference versions live only in the hidden tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

_UNSET = object()


@contextmanager
def substituted(namespace: MutableMapping[str, Any], **parts: Callable | type) -> Iterator[None]:
    """Within the block, ``namespace[name]`` is ``parts[name]`` for every name given (the notebook
    passes ``globals()``: its functions look their helpers up there when called); afterwards each
    name is what it was before, or absent again if it was absent (a part the student never defined)."""
    saved = {name: namespace.get(name, _UNSET) for name in parts}
    namespace.update(parts)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is _UNSET:
                namespace.pop(name, None)
            else:
                namespace[name] = value
