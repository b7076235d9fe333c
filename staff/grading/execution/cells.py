"""Which test cell wrote which record, fixed from outside the kernel, and a guard on the shell.

A record names no cell: anything in the kernel could name any. Instead the process that drives the
kernel (the runner, or :func:`sandbox.execute` for the instructor's run) opens a records folder
just before each graded test cell runs and takes it away as soon as the cell has finished
(nbclient's ``on_cell_execute`` / ``on_cell_executed`` hooks of nbgrader's ``Execute``). So:

- a record counts only for the cell during whose run it was written; records written at any other
  time (a visible check, an answer cell, a thread between cells) have nowhere to go: the folder
  does not exist then, and the kernel's user cannot create it (its parent belongs to the grader);
- the folder is renamed out of the sandbox's view and its files are copied to fresh files the
  kernel never had a handle on, so nothing written later reaches the judge;
- a graded cell that recorded nothing has an empty list: the judge fails it with that reason.

Before each test cell the driver also runs the :data:`GUARD` (defence in depth, not the
guarantee, which is the withheld expected values): it puts back the shell's input and AST
transformers, exception handlers, display hooks and run methods as they were before any student
code ran, and reports which had been changed; the grader flags the submission for a TA.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from pathlib import Path

from course.record import MAX_RECORD_BYTES
from staff.course_dir import nbgrader

#: At most this many files and bytes are taken from one cell; a cell that left more is marked
#: (the judge then rejects the submission's records and flags it for a TA).
MAX_FILES, MAX_BYTES = 20_000, 512 * 2**20
DOOR = "cell"  # the folder a test cell's checks write into, inside the sandbox's records folder
INDEX = "cells.json"  # in the taken folder: grade id -> the folder of its records

#: Run before any student code, as a user expression (:data:`GUARD_INSTALL`, the context the
#: guard later runs in: inside a cell IPython swaps ``sys.displayhook``): a snapshot of the shell's
#: hooks and a function that restores them and names what had changed, in a module of its own.
GUARD_SETUP = r"""
def _course_guard_setup():
    import sys, types
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    absent = object()  # "not set on the instance"
    lists = ("input_transformers_cleanup", "input_transformers_post", "ast_transformers")
    attributes = ("run_cell", "run_cell_async", "run_ast_nodes", "run_code", "transform_cell", "transform_ast",
                  "showtraceback", "_showtraceback", "showsyntaxerror", "compile", "input_transformer_manager",
                  "custom_exceptions", "CustomTB", "displayhook", "display_pub", "display_formatter", "excepthook")
    saved_lists = {name: list(getattr(shell, name)) for name in lists}
    saved_own = {name: shell.__dict__.get(name, absent) for name in attributes}
    saved_class = {name: type(shell).__dict__.get(name) for name in attributes}
    saved_kernel = {name: type(kernel).__dict__.get(name) for name in ("do_execute", "execute_request")} if kernel else {}
    saved_kernel_own = {name: kernel.__dict__.get(name, absent) for name in saved_kernel} if kernel else {}
    # Callbacks that run before a cell's code (after it, libraries such as matplotlib's inline
    # backend register their own, and nothing there can change what the cell's code computes).
    saved_events = {name: list(shell.events.callbacks.get(name, [])) for name in ("pre_execute", "pre_run_cell")}
    saved_sys = {"displayhook": sys.displayhook, "excepthook": sys.excepthook}

    def check():
        changed = []
        for name, value in saved_lists.items():
            if getattr(shell, name) != value:
                changed.append(name)
                getattr(shell, name)[:] = value
        for name, value in saved_own.items():
            if shell.__dict__.get(name, absent) is not value:
                changed.append(name)
                if value is absent:
                    shell.__dict__.pop(name, None)
                else:
                    shell.__dict__[name] = value
        for name, value in saved_class.items():
            if type(shell).__dict__.get(name) is not value:
                changed.append(f"{type(shell).__name__}.{name}")
                setattr(type(shell), name, value)
        for name, value in saved_kernel.items():
            if type(kernel).__dict__.get(name) is not value:
                changed.append(f"kernel.{name}")
                setattr(type(kernel), name, value)
        for name, value in saved_kernel_own.items():
            if kernel.__dict__.get(name, absent) is not value:
                changed.append(f"kernel.{name}")
                kernel.__dict__.pop(name, None)
        for name, value in saved_events.items():
            callbacks = shell.events.callbacks.setdefault(name, [])
            if callbacks != value:
                changed.append(f"events.{name}")
                callbacks[:] = value
        for name, value in saved_sys.items():
            if getattr(sys, name) is not value:
                changed.append(f"sys.{name}")
                setattr(sys, name, value)
        return ",".join(changed)

    module = types.ModuleType("_course_guard")
    module.check = check
    sys.modules["_course_guard"] = module

_course_guard_setup()
del _course_guard_setup
"""
GUARD_INSTALL = f"exec({GUARD_SETUP!r})"
#: Evaluated as a user expression (no input or AST transformer touches it) before each test cell.
GUARD = "__import__('sys').modules['_course_guard'].check()"


def graded_test(cell) -> str | None:
    """The grade id of a graded test cell (nbgrader: graded code that is not an answer), else None."""
    meta = nbgrader(cell)
    if cell.get("cell_type") == "code" and meta.get("grade") and not meta.get("solution"):
        return meta.get("grade_id")
    return None


class CellRecords:
    """Opens and takes each graded test cell's records folder; ``cells`` maps grade id -> folder."""

    def __init__(self, records: Path, taken: Path, uid: int | None):
        self.door, self.taken, self.uid = records / DOOR, taken, uid
        self.taken.mkdir(parents=True, exist_ok=True)
        self.taken.chmod(0o700)
        self.cells: dict[str, str] = {}
        self.guard: dict[str, str] = {}  # grade id -> the shell hooks found changed before it ran
        self.current: str | None = None
        self.overflow: list[
            str
        ] = []  # cells that left more than MAX_FILES files or MAX_BYTES bytes, or an unreadable folder
        self.seconds = 0.0  # spent opening, guarding and taking: the cost of fixing records per cell

    def open(self, grade_id: str) -> None:
        self._discard()  # whatever the kernel put there itself (it can, when it runs as our own user)
        self.door.mkdir()
        if self.uid is not None:
            os.chown(self.door, self.uid, self.uid)
        self.current = grade_id

    def take(self) -> None:
        """Move the open folder out of the kernel's reach; copy its files to new files."""
        grade_id, self.current = self.current, None
        if grade_id is None:
            return
        folder = self.taken / f"{len(self.cells):04d}"
        moved = self.taken / f"{folder.name}.moved"
        try:
            os.rename(self.door, moved)
        except FileNotFoundError:  # the kernel removed it: nothing recorded
            moved.mkdir()
        if not moved.is_dir() or moved.is_symlink():  # replaced by a file or a link from inside
            moved.unlink()
            moved.mkdir()
        os.chown(moved, os.geteuid(), os.getegid())
        moved.chmod(0o700)  # a directory handle the kernel kept can no longer create files in it
        folder.mkdir()
        total = 0
        try:
            with os.scandir(moved) as entries:
                for count, entry in enumerate(sorted(entries, key=lambda e: e.name)):
                    if count >= MAX_FILES or total > MAX_BYTES:
                        self.overflow.append(grade_id)
                        break
                    total += copy_regular(Path(entry.path), folder / entry.name)
        except OSError:  # made unreadable from inside (possible when the kernel runs as our own user)
            self.overflow.append(grade_id)
        shutil.rmtree(moved, ignore_errors=True)
        if grade_id in self.cells:  # the same test cell twice: nbgrader's sanitizing prevents it
            grade_id = f"{grade_id} (again)"
        self.cells[grade_id] = folder.name

    def _discard(self) -> None:
        if os.path.lexists(self.door):
            if os.path.isdir(self.door) and not os.path.islink(self.door):
                shutil.rmtree(self.door, ignore_errors=True)
            else:
                os.unlink(self.door)

    def attach(self, executor, guard: bool = True) -> None:
        """Hook into nbgrader's ``Execute`` (an nbclient ``NotebookClient``); ``guard``: run the
        :data:`GUARD` before each test cell (the kernel must have run :data:`GUARD_SETUP`)."""

        async def before(cell, cell_index, **_):
            start = time.perf_counter()
            self.take()  # a test cell that did not finish normally keeps what it recorded until then
            grade_id = graded_test(cell)
            if grade_id is not None:
                changed = await run_guard(executor) if guard else ""
                if changed:
                    self.guard[grade_id] = changed
                self.open(grade_id)
            self.seconds += time.perf_counter() - start

        def after(cell, cell_index, **_):
            start = time.perf_counter()
            self.take()
            self.seconds += time.perf_counter() - start

        executor.on_cell_execute = before
        executor.on_cell_executed = after

    def save(self) -> None:
        """``taken/cells.json``: which folder holds which cell's records (read by ``records.read_cells``)."""
        (self.taken / INDEX).write_text(
            json.dumps({"cells": self.cells, "guard": self.guard, "overflow": self.overflow})
        )


def copy_regular(source: Path, destination: Path) -> int:
    """A regular file's bytes (at most a record's size, plus one byte so the judge sees it is too
    big) into a new file; links, pipes and devices are skipped. Returns the bytes copied."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return 0
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return 0
        data = handle.read(MAX_RECORD_BYTES + 65537)
    destination.write_bytes(data)
    return len(data)


async def run_guard(executor, timeout: float = 30, expression: str = GUARD) -> str:
    """Run :data:`GUARD` in the kernel before a test cell; what it put back ("" if nothing, or a
    note when the kernel did not answer as expected). With :data:`GUARD_INSTALL`: install it."""
    from nbclient.util import ensure_async

    client = executor.kc
    msg_id = client.execute("", silent=True, store_history=False, user_expressions={"guard": expression})
    while True:
        try:
            reply = await ensure_async(client.get_shell_msg(timeout=timeout))
        except Exception:
            return "the kernel did not answer the guard"
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            break
    result = reply.get("content", {}).get("user_expressions", {}).get("guard", {})
    if result.get("status") != "ok":
        return f"the guard could not run ({result.get('ename', 'no answer')})"
    text = result.get("data", {}).get("text/plain", "''")
    return text.strip("'\"")[:300]
