"""Grading each part on its own: while a later exercise's hidden test runs, the notebook's names
of earlier parts point at the course's reference versions (defined in that hidden test), so one
mistake costs its own exercise's points once instead of failing every exercise built on it.

The student's own functions are put back when the test ends, whatever happens in it: the cells
after it (plots, training, later exercises) run on the student's code as the student wrote it.
Nothing here is a solution: the reference versions live only in the hidden tests, and only while
the hidden test that defines them runs (:func:`references`): the next answer cell cannot name them,
and a copy the student's code kept while they were lent to it no longer runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from types import FunctionType
from typing import Any

_UNSET = object()


def is_reference(name: str) -> bool:
    """The course's convention for a reference implementation: ``reference_<part>`` or ``Reference<Part>``."""
    return name.startswith(("reference_", "Reference"))


def _expired(*args: Any, **kwargs: Any) -> None:
    raise RuntimeError("@")  # "@" becomes the message; only builtins run here (the notebook's globals)


def _revoke(function: FunctionType) -> None:
    """Make ``function`` raise when called, wherever it is kept (its code is replaced in place)."""
    if function.__code__.co_freevars:  # a wrapper (contextmanager's): its code needs its closure
        wrapped = getattr(function, "__wrapped__", None)
        if isinstance(wrapped, FunctionType):
            _revoke(wrapped)
        return
    message = (
        f"{function.__qualname__} is one of the course's reference implementations: it exists only while the "
        f"hidden test that defined it runs, and that test has ended"
    )
    code = _expired.__code__
    function.__code__ = code.replace(
        co_name=function.__name__,
        co_qualname=function.__qualname__,
        co_consts=tuple(message if constant == "@" else constant for constant in code.co_consts),
    )


def _revoke_object(value: Any, module: str) -> None:
    """Revoke a reference function, or every method of a reference class, defined in ``module``
    (an imported class under a reference name, transformers' own say, is only unbound)."""
    if getattr(value, "__module__", None) != module:
        return
    if isinstance(value, FunctionType):
        _revoke(value)
    elif isinstance(value, type):
        for attribute in vars(value).values():
            function = getattr(attribute, "__func__", attribute)  # staticmethod, classmethod
            if isinstance(function, FunctionType):
                _revoke(function)


@contextmanager
def references(namespace: MutableMapping[str, Any]) -> Iterator[None]:
    """The course's reference implementations defined in the block live only while it runs.

    A hidden test defines its references (:func:`is_reference` names) inside ``with
    references(globals()):``. When the block ends, however it ends, each is unbound again (or the
    student's own object of that name is put back) and revoked: its code, and every method of a
    reference class, now raises. A reference lent to the student's code through :func:`substituted`
    and kept there (a global, a default argument, a list) is dead before the next cell runs, so
    the student's code can only ever use it inside the check that lends it, never in the graded
    test of the part it stands for."""
    module = namespace.get("__name__", "__main__")
    saved = {name: value for name, value in namespace.items() if is_reference(name)}
    try:
        yield
    finally:
        for name in [name for name in namespace if is_reference(name)]:
            value = namespace[name]
            if saved.get(name, _UNSET) is value:
                continue
            _revoke_object(value, module)
            if name in saved:
                namespace[name] = saved[name]
            else:
                del namespace[name]


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
