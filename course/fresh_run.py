"""Run a copy of a notebook top to bottom in a fresh kernel, as the grader will, and time it.

A notebook that only works in the kernel it was written in (a cell deleted after it ran, cells run
out of order, a name typed once in a cell since changed) loses its points at grading, where it
runs once, top to bottom, in a fresh kernel, within the course's time limits (``CELL_TIMEOUT`` per
cell, ``NOTEBOOK_TIMEOUT`` in all: :mod:`course.settings`). So the copy runs the same way: in a
temporary folder (whatever it writes is thrown away, as are its outputs after they are read), with
the grader's settings (``NBGRADER_EXECUTION``, offline models: the notebooks cap their training
then), with this kernel's own Python (a kernel spec written for the run, so another ``python3``
on the machine cannot be picked up), and with ``COURSE_SKIP_FRESH_RUN`` so its own last cell does
not start yet another run. nbclient and tqdm are imported only when a run is asked for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from course import settings, variant

#: What the copy's kernel runs under: the grader's settings, and no second fresh run.
GRADER_ENVIRONMENT = {
    "NBGRADER_EXECUTION": "autograde",
    settings.ONLINE_VARIABLE: "0",
    settings.SKIP_FRESH_RUN_VARIABLE: "1",
    "MPLBACKEND": "Agg",
}
#: Seconds a kernel may take to start (a loaded machine, a first import of torch).
STARTUP_TIMEOUT = 120


@dataclass
class Outcome:
    """The copy after its run: ``nb`` holds its outputs; ``stopped`` says why it did not reach the
    end (a time limit, a dead kernel, no kernel at all), ``None`` when it did."""

    nb: dict
    seconds: float
    cells_run: int
    stopped: str | None = None

    def first_error(self) -> tuple[int, str, str] | None:
        """The first cell that raised: (its index, exception name, first line of the message)."""
        for index, cell in enumerate(self.nb["cells"]):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    lines = str(output.get("evalue", "")).strip().splitlines()
                    return index, output.get("ename", "error"), lines[0][:300] if lines else ""
        return None


def kernel_manager(folder: Path):
    """A kernel of this Python whose spec and sockets live in ``folder``: on Linux (Colab, the
    grader) its sockets are ZMQ ``ipc`` files there, so no TCP port is open to the machine's other
    users and the kernel does not warn that it runs over TCP without encryption."""
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    spec = folder / "kernels" / "course-fresh-run"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [
                    os.path.abspath(sys.executable),
                    "-m",
                    "ipykernel_launcher",
                    "-f",
                    "{connection_file}",
                ],
                "display_name": "fresh run",
                "language": "python",
            }
        )
    )
    sockets = {"transport": "ipc", "ip": str(folder / "kernel")} if sys.platform == "linux" else {}
    return AsyncKernelManager(
        kernel_name=spec.name,
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec.parent)]),
        **sockets,
    )


def _environment() -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"
    }  # the copy is not the student's file
    env.update(GRADER_ENVIRONMENT)
    return env


def _skipped(cell) -> bool:
    """A read-only given cell the course declares the grader skips (never an answer or a test)."""
    meta = cell.get("metadata", {})
    grading = meta.get("nbgrader", {}) if isinstance(meta.get("nbgrader"), dict) else {}
    declared = isinstance(meta.get("course"), dict) and meta["course"].get("skip_when_grading") is True
    return declared and not grading.get("solution") and not grading.get("grade")


def run(nb, progress: bool = True) -> Outcome:
    """Execute a copy of ``nb`` (a notebook dict or NotebookNode); never raises for what a cell
    does. The per-cell limit shrinks to what is left of the notebook's, as the grader's would."""
    try:
        import nbformat
        from nbclient import NotebookClient
        from nbclient.exceptions import CellTimeoutError, DeadKernelError
        from tqdm import tqdm
    except ImportError as error:  # a runtime without Jupyter's tools: the static checks still stand
        return Outcome(
            nb=nb,
            seconds=0.0,
            cells_run=0,
            stopped=f"no fresh kernel can be run here ({error}): "
            f"`pip install nbclient tqdm`, or upload the notebook and ask for a check",
        )
    limits = settings.current()
    try:
        copy_nb = nbformat.reads(json.dumps(nb), as_version=4)  # a copy, normalised as nbclient expects
    except Exception as error:  # nbformat refuses it: so would the grader
        return Outcome(
            nb=nb, seconds=0.0, cells_run=0, stopped=f"nbformat cannot read the notebook: {error}"[:400]
        )
    # The cells the grader leaves out (given cells that only illustrate, e.g. a full training run:
    # staff/grading/execution/skipping.py) are left out here too, so the time is the graded run's.
    code = [i for i, cell in enumerate(copy_nb.cells) if cell.cell_type == "code" and not _skipped(cell)]
    start, ran, stopped = time.perf_counter(), 0, None
    with tempfile.TemporaryDirectory(prefix="course-fresh-run-") as folder:
        work = Path(folder) / "work"
        work.mkdir()
        # The setup cell looks for the course files in ./transformers-course (as on Colab) or ..:
        # point the first at this package's folder, so the copy never clones or installs anything.
        (work / "transformers-course").symlink_to(settings.ROOT, target_is_directory=True)
        # The student's id, where the setup cell kept it, so the copy runs the same variant (as the grader does).
        kept = Path.cwd() / variant.ID_FILE
        if kept.is_file():
            (work / variant.ID_FILE).write_text(kept.read_text())
        client = NotebookClient(
            copy_nb,
            km=kernel_manager(Path(folder)),
            timeout=limits.cell_timeout,
            allow_errors=True,
            interrupt_on_timeout=False,
            shutdown_kernel="immediate",
            startup_timeout=STARTUP_TIMEOUT,
            resources={"metadata": {"path": str(work)}},
        )
        bar = tqdm(
            total=len(code),
            desc="fresh run: ",
            unit="cell",
            file=sys.stdout,
            disable=not progress,
            bar_format="{desc}{n_fmt}/{total_fmt} cells [{elapsed}, limit "
            f"{limits.notebook_timeout} s]",
        )
        try:
            client.reset_execution_trackers()
            # The kernel's own stderr (ipykernel's start-up warnings) would land in the student's cell.
            with client.setup_kernel(
                env=_environment(),
                cwd=str(work),
                cleanup_kc=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ):
                for index in code:
                    left = limits.notebook_timeout - (time.perf_counter() - start)
                    if left <= 0:
                        stopped = f"the notebook's time limit ({limits.notebook_timeout} s) ran out before cell {index + 1}"
                        break
                    client.timeout = max(1, int(min(limits.cell_timeout, left)))
                    bar.set_description(f"fresh run, cell {index + 1}")
                    try:
                        client.execute_cell(copy_nb.cells[index], index)
                    except CellTimeoutError:
                        which = (
                            "the notebook's limit"
                            if left < limits.cell_timeout
                            else f"the per-cell limit ({limits.cell_timeout} s)"
                        )
                        stopped = f"cell {index + 1} was still running when {which} ran out"
                        break
                    ran += 1
                    bar.update()
        except KeyboardInterrupt:  # the student stopped this cell: the kernel is shut down all the same
            stopped = f"interrupted at cell {code[min(ran, len(code) - 1)] + 1}"
        except DeadKernelError:
            stopped = (
                f"the kernel died in cell {code[ran] + 1} (out of memory? the grader gives "
                f"{limits.memory_gb:g} GiB)"
            )
        except Exception as error:  # no kernel at all (ipykernel missing, ports): say so, never raise
            stopped = f"no fresh kernel could be run here: {type(error).__name__}: {error}"[:400]
        finally:
            bar.close()
    return Outcome(nb=copy_nb, seconds=time.perf_counter() - start, cells_run=ran, stopped=stopped)
