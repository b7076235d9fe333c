"""What a grading worker does with one submission: run it in a fresh sandboxed kernel and hand back
the executed notebook and the kernel's records. It never judges: the expected outputs are not here.

A task (:func:`execute`, run by a Dask worker, :mod:`cluster`) carries everything it needs, so no
shared file system is assumed: the sanitized notebook as text, and the course :class:`Bundle`
(``course/``, ``data/`` and the fixtures view without expected outputs, content-addressed: each
worker unpacks a bundle once and keeps it for the tasks that follow).

Throughput without weaker isolation: a submission's kernel is started, and the modules the
notebooks import are imported into it, *before* the submission arrives, while the previous
submission runs (a :class:`Runner`: :mod:`runner`, a process waiting on its stdin). Every
runner has its own fresh sandbox, scratch folder and user id, and serves exactly one submission,
then exits: no kernel, file or process ever passes from one student to the next.

The runner executes with nbgrader's own ``Execute`` preprocessor (its timeouts, interrupts and
error outputs), in its own process group with the memory limit, so a kernel that hangs, crashes
or eats memory takes only its runner down, never the worker.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from course import settings
from staff.grading.execution import quota, scratch


@dataclass(frozen=True)
class Bundle:
    """The course files a kernel sees, as one tar archive named by its SHA-256."""

    digest: str
    data: bytes

    @classmethod
    def pack(cls, view: Path, files: Path = settings.ROOT) -> Bundle:
        """``course/`` and ``data/`` of ``files``, and ``view`` (the fixtures without expected outputs)."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:

            def clean(info: tarfile.TarInfo):
                if "__pycache__" in info.name or info.name.endswith(".pyc"):
                    return None
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mtime = 0  # the same files give the same digest
                return info

            for name, path in (("course", files / "course"), ("data", files / "data"), ("fixtures", view)):
                tar.add(path, arcname=name, filter=clean)
        data = buffer.getvalue()
        return cls(hashlib.sha256(data).hexdigest(), data)


_unpack_lock = threading.Lock()


_swept = False


def unpack(bundle: Bundle) -> Path:
    """The bundle's folder on this machine (unpacked once; later tasks find it by digest)."""
    home = Path(tempfile.gettempdir()) / "course-bundles"
    folder = home / bundle.digest[:32]
    with _unpack_lock:
        if not folder.is_dir():
            home.mkdir(exist_ok=True)
            staging = Path(tempfile.mkdtemp(dir=home))
            with tarfile.open(fileobj=io.BytesIO(bundle.data)) as tar:
                tar.extractall(staging, filter="data")
            for path in [staging, *staging.rglob("*")]:  # readable by each kernel's own user
                path.chmod(0o755 if path.is_dir() else 0o644)
            staging.rename(folder)
    return folder


@dataclass
class Job:
    """One submission as the worker gets it (no student code runs before the sandbox)."""

    student: str
    assignment: str
    notebook: str  # the sanitized notebook, nbformat JSON
    cell_timeout: int
    wall: int
    memory: int
    threads: int | None = None  # BLAS/OpenMP threads per kernel (None: as the batch or the worker says)
    unsafe: bool = False
    modules: list[str] = field(default_factory=list)  # what the released notebook imports (imported ahead)
    skip: list[str] = field(default_factory=list)  # given cells that only teach, left out (skipping.py)


def imports(nb) -> list[str]:
    """What a notebook's code cells import, in order (read, never run): each module, and each name
    of a ``from`` import as ``module.name``. A kernel started ahead imports only these (importing more
    would cost CPU that grading needs), names included: ``from transformers import DistilBertModel``
    loads the model's code, while ``import transformers`` alone loads almost nothing (a lazy module)."""
    import ast

    found: list[str] = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
            else:
                names = []
            found += [n for n in names if n not in found]
    return found


#: The owner of runners started outside a Dask worker (one submission graded directly).
HERE = "here"


@dataclass
class Result:
    notebook: str | None  # executed (None: nothing graded)
    records: dict = field(default_factory=dict)  # graded test cell -> its records (taken by the runner)
    guard: dict = field(default_factory=dict)  # graded test cell -> shell hooks found changed before it
    bad_records: str = ""
    error: tuple[str, str] | None = None  # (status, reason) from the execution itself
    phases: dict[str, float] = field(default_factory=dict)
    worker: str = ""


def status_from_log(log: str, failed: str = "") -> tuple[str, str] | None:
    """A status from what nbgrader's Execute logged and raised (``failed``: the exception's name)."""
    if "DeadKernelError" in failed or "Kernel died" in log:
        return "kernel died", "the kernel died (crash, os._exit or out of memory); nothing graded"
    if "CellTimeoutError" in failed or "CellTimeoutError" in log:
        return "timeout", "a cell ignored the interrupt after its time limit; nothing graded"
    if failed:
        return "kernel died", f"execution failed: {failed}"[:200]
    if "Timeout waiting for execute reply" in log:
        cells = log.count("Timeout waiting for execute reply")
        return "timeout", f"{cells} cell(s) hit the per-cell limit and were interrupted; the rest graded"
    return None


class Runner:
    """A sandboxed kernel started (and warmed) ahead of its submission, in a process of its own."""

    def __init__(
        self, files: Path, threads: int, memory: int, unsafe: bool, modules: list[str], owner: str = HERE
    ):
        from staff.grading.execution import sandbox

        if owner in _stopping:  # its worker is being closed (:func:`stopped`)
            raise RuntimeError("the grader is stopping: no new kernel is started")
        self.owner = owner
        self.scratch = scratch.folder("kernel")
        self.scratch.chmod(0o755)
        spec = sandbox.make_spec(self.scratch / "sandbox", files / "fixtures", files=files)
        spec.env.update(
            NBGRADER_EXECUTION="autograde",
            OMP_NUM_THREADS=str(threads),
            MKL_NUM_THREADS=str(threads),
            # A kernel shares its cores with the next one warming up (and, in a cluster, with other
            # workers' kernels): OpenMP threads that spin at each barrier while another process holds
            # a core took assignment 4's hidden run from 0.97 s to 1.71 s with 2 threads. Waiting
            # passively changes no value (the same threads split the same work) and costs 0.08 s idle.
            OMP_WAIT_POLICY="PASSIVE",
            MPLBACKEND="Agg",
        )
        config = {
            "spec": str(spec.save(self.scratch / "spec.json")),
            "unsafe": unsafe,
            "files": str(files),
            "modules": modules,
            "parent": os.getpid(),  # the runner dies with this process
            "memory": memory,  # its address-space limit, which its kernel inherits
        }
        self.expired = self.over_quota = False
        self.process = subprocess.Popen(
            [sys.executable, "-m", "staff.grading.execution.run_notebook", json.dumps(config)],
            cwd=self.scratch,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        with _lock:
            _runners.add(self)

    def run(self, job: Job) -> Result:
        """Hand ``job`` to the waiting kernel; the whole runner is killed after ``job.wall`` s."""
        start = time.monotonic()
        (self.scratch / "in.ipynb").write_text(job.notebook)
        deadline = threading.Timer(job.wall, self.kill, kwargs={"expired": True})
        deadline.start()
        done = threading.Event()
        threading.Thread(
            target=quota.watch, args=(self.scratch / "sandbox", done, self.over), daemon=True
        ).start()
        try:
            ready = self.process.stdout.readline().strip()  # the warm-up ends with "ready"
            waited = time.monotonic() - start
            if ready != "ready":
                log = ready + self.process.stdout.read()
                raise RuntimeError(f"the grading kernel did not start: {log.strip()[-500:]}")
            self.process.stdin.write(
                json.dumps({"timeout": job.cell_timeout, "skip": job.skip, "student": job.student}) + "\n"
            )
            self.process.stdin.flush()
            log = self.process.stdout.read()
            self.process.wait()
        finally:
            deadline.cancel()
            done.set()
        phases = {"kernel start": round(waited, 2), "execution": round(time.monotonic() - start - waited, 2)}
        if self.over_quota:
            return Result(
                None,
                error=(
                    "disk quota",
                    f"wrote more than {quota.SHARED_BYTES >> 20} MB where the grader "
                    f"reads (records, sockets); killed, nothing graded",
                ),
                phases=phases,
            )
        if self.expired:
            return Result(
                None,
                error=("timeout", f"still running after the {job.wall} s limit for one notebook; killed"),
                phases=phases,
            )
        try:
            status = json.loads((self.scratch / "status.json").read_text())
        except (OSError, ValueError):
            return Result(
                None,
                error=("kernel died", (log.strip().splitlines() or ["the runner died"])[-1][:200]),
                phases=phases,
            )
        error = status_from_log(status["log"], status["failed"])
        phases["cell records"] = status.get("cell records", 0.0)  # part of "execution"
        executed = self.scratch / "out.ipynb"
        notebook = executed.read_text() if executed.exists() and not status["failed"] else None
        result = Result(notebook, error=tuple(error) if error else None, phases=phases)
        from staff.grading.execution import records  # reading compares nothing: no expected value is involved

        try:
            result.records, result.guard = records.read_cells(self.scratch / "taken")
        except (records.BadRecords, OSError, ValueError) as bad:
            result.bad_records = str(bad)[:300]
        return result

    def over(self) -> None:
        """The kernel left more on this machine's disk than its quota (:func:`quota.watch`)."""
        self.over_quota = True
        self.kill()

    def kill(self, expired: bool = False) -> None:
        self.expired = self.expired or expired
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        self.kill()
        self.process.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)
        with _lock:
            _runners.discard(self)


#: Every runner of this process not yet closed (executing a submission or waiting for one).
_runners: set[Runner] = set()
#: Workers being closed (:func:`stopped`): their runners are killed and none is started.
_stopping: set[str] = set()
#: Runners started ahead, per worker and (files, threads, memory, unsafe): at most one waiting per
#: worker thread. Each imports what the previous job's notebook imported (jobs come in assignment order).
_waiting: dict[tuple, list[Runner]] = {}
_lock = threading.RLock()  # (a runner is started ahead while it is held)


def _take(owner: str, key: tuple, modules: list[str]) -> Runner:
    with _lock:
        queue = _waiting.get((owner, *key)) or []
        runner = queue.pop(0) if queue else None
    return runner or Runner(*key, modules, owner=owner)


def _start_next(owner: str, key: tuple, modules: list[str], limit: int) -> None:
    with _lock:
        queue = _waiting.setdefault((owner, *key), [])
        if len(queue) < limit and owner not in _stopping:
            queue.append(Runner(*key, modules, owner=owner))


def _stop_runners(owners: set[str] | None = None) -> None:
    """Kill the runners of ``owners`` (workers' addresses; None: all) executing a submission (their
    tasks end at once) and close those waiting for one."""
    with _lock:
        waiting = []
        for key in [k for k in _waiting if owners is None or k[0] in owners]:
            waiting += _waiting.pop(key)
        executing = [r for r in _runners if (owners is None or r.owner in owners) and r not in waiting]
    for runner in executing:
        runner.kill()
    for runner in waiting:
        runner.close()


atexit.register(_stop_runners)


@contextmanager
def stopped(owners: set[str]) -> Iterator[None]:
    """While the workers ``owners`` (a local cluster's: threads of this process) are closed: their
    runners killed, none started. Closing a worker waits for its running task, a notebook nobody
    waits for any more (a failed canary, Ctrl-C, an error in the writer). Another batch's workers
    in this process (a second TA's regrade in the formgrader) keep theirs."""
    with _lock:
        _stopping.update(owners)
    try:
        _stop_runners(owners)
        yield
    finally:
        _stop_runners(owners)  # one started as they were marked
        with _lock:
            _stopping.difference_update(owners)


def _this_worker():
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None  # not in a Dask worker (one submission graded directly)


def _queued(dask_worker) -> int:
    """Tasks the worker holds for later. Dask's scheduler sends a worker about one task beyond
    what it runs, so this is how it knows another submission is coming to it."""
    try:
        tasks = list(dask_worker.state.tasks.values())
    except RuntimeError:  # changed while read (the worker's event loop owns it): next time
        return 0
    return sum(1 for task in tasks if task.state in ("ready", "constrained", "waiting", "fetch", "flight"))


def _start_when_queued(
    dask_worker, key: tuple, modules: list[str], limit: int, stop: threading.Event
) -> None:
    """While a submission runs, start the next one's kernel as soon as one is queued here (and
    none after the last submission: a kernel nobody uses would take CPU from those still running)."""
    while dask_worker is not None and not stop.wait(0.5):
        if _queued(dask_worker):
            _start_next(dask_worker.address, key, modules, limit)
            return


def _threads_here(job: Job, by_worker: dict[str, int] | None) -> tuple[int, int]:
    """BLAS threads per kernel (the job's, else the batch's share for this worker, else this
    worker's cores over its own threads) and kernels at once on this worker (its thread count)."""
    dask_worker = _this_worker()
    if dask_worker is None:
        return job.threads or 1, 1
    slots = dask_worker.state.nthreads
    share = (by_worker or {}).get(dask_worker.address)  # a worker that joined later is not in it
    return job.threads or share or max(1, (os.cpu_count() or 1) // slots), slots


def execute(bundle: Bundle, job: Job, threads_by_worker: dict[str, int] | None = None) -> Result:
    """The Dask task: one submission executed in a fresh sandboxed kernel."""
    global _swept
    started = time.monotonic()
    if not _swept:  # once per worker process: what killed graders left on this machine
        _swept = True
        scratch.sweep()
    files = unpack(bundle)
    threads, slots = _threads_here(job, threads_by_worker)
    key = (files, threads, job.memory, job.unsafe)
    dask_worker, stop = _this_worker(), threading.Event()
    runner = _take(dask_worker.address if dask_worker is not None else HERE, key, job.modules)
    threading.Thread(
        target=_start_when_queued, args=(dask_worker, key, job.modules, slots, stop), daemon=True
    ).start()
    try:
        result = runner.run(job)
    finally:
        stop.set()
        runner.close()
    result.phases["worker"] = round(time.monotonic() - started, 2)
    result.worker = dask_worker.address if dask_worker is not None else "local"
    return result
