"""One submission's execution, in a process of its own (started by :class:`worker.Runner` ahead of
the submission): start the sandboxed kernel, import what the released notebook imports, say
``ready`` on stdout, then read one request on stdin and execute the notebook the worker left in
the working folder with nbgrader's own ``Execute`` preprocessor, opening a records folder for each
graded test cell and taking it right after (:mod:`cells`, into ``taken/``). Writes ``out.ipynb``
and ``status.json`` (what nbgrader logged, and the exception that stopped it, if any); then exits.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import json
import logging
import os
import resource
import sys
from pathlib import Path

from course import settings
from course.record import RECORDS_VARIABLE

KERNEL_ARGUMENTS = ["--HistoryManager.hist_file=:memory:"]  # what nbgrader's Execute gives a Python kernel
#: What a kernel runs before the submission arrives: the notebook's imports (:func:`worker.imports`),
#: each module and each name a ``from`` import takes (an attribute, or a submodule), inside a function
#: so that no name is bound in the student's namespace: a cell that uses a name it never imported
#: fails as it does in the student's own run. Whatever fails to import is left to the cell that imports it.
WARM = """
def _course_warm(names):
    import importlib
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            module, _, attribute = name.rpartition(".")
            try:
                getattr(importlib.import_module(module), attribute, None)
            except BaseException:
                pass
        except BaseException:
            pass
_course_warm({modules})
del _course_warm
"""


#: Packages whose ``__init__`` this process skips, and the names their modules take from those
#: ``__init__``s (each from the module that defines it). nbgrader's load its Jupyter server extensions
#: and every other preprocessor (with the gradebook's SQLAlchemy models); nbconvert's load every
#: exporter and filter (jinja2, mistune, bleach, BeautifulSoup). Together that was most of the CPU
#: this process spent importing, once per graded notebook, on cores the kernels share: 0.34 s for
#: nbconvert's alone (docs/scaling.md).
SKIPPED_INITS = {
    "nbconvert": {},
    "nbconvert.exporters": {},
    "nbconvert.preprocessors": {
        "Preprocessor": "nbconvert.preprocessors.base",
        "ExecutePreprocessor": "nbconvert.preprocessors.execute",
        "CellExecutionError": "nbconvert.preprocessors.execute",
    },
    "nbgrader": {},
    "nbgrader.preprocessors": {"NbGraderPreprocessor": "nbgrader.preprocessors.base"},
}


def nbgrader_execute() -> type:
    """nbgrader's own ``Execute`` preprocessor, imported without running the ``__init__`` of the
    packages in :data:`SKIPPED_INITS`, which this process never uses. The classes and their modules
    are nbgrader's and nbconvert's, unchanged; this process imports nothing else of either."""
    for name in SKIPPED_INITS:
        if name not in sys.modules:
            package = importlib.util.module_from_spec(importlib.util.find_spec(name))  # __path__ set, not run
            sys.modules[name] = package
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(sys.modules[parent], child, package)
    for name, taken in SKIPPED_INITS.items():
        for attribute, module in taken.items():
            if not hasattr(sys.modules[name], attribute):
                setattr(sys.modules[name], attribute, getattr(importlib.import_module(module), attribute))
    return importlib.import_module("nbgrader.preprocessors.execute").Execute


def die_with(parent: int, every: float = 0.2) -> None:
    """Kill this process the moment ``parent`` (the grading worker) is gone, however it died.

    The runner has a session of its own (so a timeout can kill it with its kernel) and would
    otherwise be adopted by PID 1 and go on executing a notebook nobody waits for. Its sandbox
    follows it: bwrap runs with ``--die-with-parent``, and its parent is this process. (Polled, not
    ``PR_SET_PDEATHSIG``: that fires when the *thread* that started the runner ends, and workers
    start runners ahead from short-lived threads.)"""
    import signal
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(every)
        os.kill(os.getpid(), signal.SIGKILL)

    if os.getppid() != parent:  # gone before this process got here
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=watch, daemon=True, name="die-with-parent").start()


async def tell_student(manager, student: str) -> None:
    """Set ``COURSE_STUDENT`` to ``student`` inside the started kernel."""
    client = manager.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        code = f"__import__('os').environ[{settings.STUDENT_VARIABLE!r}] = {student!r}"
        reply = await client.execute_interactive(code, silent=True, store_history=False, timeout=60)
        if reply["content"].get("status") != "ok":
            raise RuntimeError(f"the kernel was not told its student: {reply['content'].get('evalue')}")
    finally:
        client.stop_channels()


def main(config: dict) -> None:
    """Start the sandboxed kernel, import ahead, say "ready", then execute the one notebook sent."""
    if config.get("parent"):
        die_with(int(config["parent"]))
    if config.get("memory"):  # set here, not in a preexec_fn: the grader that starts runners has threads
        resource.setrlimit(resource.RLIMIT_AS, (config["memory"], config["memory"]))
    import nbformat
    from jupyter_core.utils import run_sync

    from staff.grading.execution import sandbox, skipping
    from staff.grading.execution.cells import GUARD_INSTALL, CellRecords

    scratch = Path.cwd()
    spec = sandbox.Spec.load(config["spec"])
    if config["unsafe"]:  # no sandbox: the kernel still gets the withheld view and records
        from jupyter_client.manager import AsyncKernelManager

        os.environ.pop(settings.STUDENT_VARIABLE, None)  # as the sandbox does (sandbox.command)
        os.environ.update(
            spec.env,
            **{
                settings.FIXTURES_VARIABLE: str(Path(config["files"]) / "fixtures"),
                "PYTHONPATH": config["files"],  # the course package the grader shipped
                RECORDS_VARIABLE: str(sandbox.records_door(Path(spec.scratch))),
            },
        )
        manager = AsyncKernelManager(kernel_name="python3")
    else:
        manager = sandbox.SandboxedKernelManager(spec=spec, kernel_name="python3")
    # Imported silently: the execution count stays 0, so the records' cell numbers are unchanged.
    warm = WARM.format(modules=json.dumps(config["modules"]))

    executor_class = []

    # One event loop for the warm-up and nbclient (run_sync keeps it per thread): the kernel
    # manager's sockets must not outlive the loop they were made on.
    async def start() -> None:
        await manager.start_kernel(extra_arguments=KERNEL_ARGUMENTS, cwd=str(Path(spec.scratch) / "work"))
        executor_class.append(nbgrader_execute())  # while the kernel boots, in its own process
        client = manager.client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=120)
            await client.execute_interactive(warm, silent=True, store_history=False, timeout=300)
            # Before any student code: the snapshot of the shell's hooks the guard restores (cells.py).
            reply = await client.execute_interactive(
                "", silent=True, store_history=False, timeout=60, user_expressions={"guard": GUARD_INSTALL}
            )
            installed = reply["content"].get("user_expressions", {}).get("guard", {})
            if installed.get("status") != "ok":
                raise RuntimeError(
                    f"the shell guard did not install: {installed.get('ename')}: {installed.get('evalue')}"
                )
        finally:
            client.stop_channels()

    run_sync(start)()
    print("ready", flush=True)
    request = sys.stdin.readline()
    if not request:  # the worker went away before sending a submission
        run_sync(manager.shutdown_kernel)(now=True)
        return
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    nb = nbformat.read(scratch / "in.ipynb", as_version=4)
    request = json.loads(request)
    # Whose variant of the experiments the notebook runs (course.variant). The kernel was started
    # before its submission was known, and its folders are its own (tmpfs): told now, silently (no
    # execution count, nothing bound in the notebook's namespace), before any of the notebook's cells.
    from course import variant

    run_sync(tell_student)(manager, variant.graded_as(request["student"]))
    executor = executor_class[0](
        timeout=request["timeout"], interrupt_on_timeout=True, extra_arguments=KERNEL_ARGUMENTS
    )
    skipping.install(executor, request.get("skip", []))
    executor.log.addHandler(handler)
    records = CellRecords(Path(spec.scratch) / "records", scratch / "taken", spec.uid)
    records.attach(executor)
    failed = ""
    try:
        nb, _ = executor.preprocess(nb, {"metadata": {"path": str(Path(spec.scratch) / "work")}}, km=manager)
    except Exception as error:  # DeadKernelError, CellTimeoutError, ...: nothing graded
        failed = f"{type(error).__name__}: {error}"[:300]
        logging.getLogger(__name__).addHandler(handler)
    finally:
        try:
            run_sync(manager.shutdown_kernel)(now=True)
        except Exception:
            pass
    records.take()
    records.save()
    if not failed:
        nbformat.write(nb, scratch / "out.ipynb")
    (scratch / "status.json").write_text(
        json.dumps({"log": log.getvalue(), "failed": failed, "cell records": round(records.seconds, 3)})
    )


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
