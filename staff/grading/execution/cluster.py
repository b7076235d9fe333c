"""Where submissions execute: a Dask cluster, local by default, the instructor's own if named.

``SCHEDULER`` unset: a ``LocalCluster`` in this process, one worker per core (``JOBS``), one
submission at a time each (each in a runner process of its own, :mod:`worker`).
``SCHEDULER=tcp://host:8786``: the workers of an existing Dask cluster (started with ``dask worker``
on Slurm/PBS through dask-jobqueue, on Kubernetes through dask-kubernetes, or by hand: see
docs/admin.md), which need the course's environment and nothing else (no shared file system, no
gradebook, no expected outputs).

On an existing cluster, a worker that dies mid-submission (killed, out of memory) has its task
rescheduled by Dask's own scheduler on another worker, up to ``distributed.scheduler.allowed-failures``
times (the scheduler's own setting; :data:`ALLOWED_FAILURES` on the local cluster); after that the
task fails with ``KilledWorker`` and the submission is reported ``kernel died``. The local cluster's
workers are threads of the grader: what a submission can take down there is its own runner.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from course import settings

if TYPE_CHECKING:
    from distributed import Client

#: Times a submission may take a worker down with it before it is given up (then: kernel died).
ALLOWED_FAILURES = 2
#: Dask's own monitoring, slowed or off on the local cluster: its workers sample their threads'
#: stacks every 10 ms (for a dashboard this cluster does not serve) and every process checks its
#: event loop every 20 ms. Idle, that takes a share of the CPU the kernels need, and far less with
#: these (docs/scaling.md).
#: An existing cluster's own configuration is its operator's (docs/scaling.md gives these keys).
QUIET = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.worker.memory.monitor-interval": "1s",
}


@contextmanager
def connect(workers: int | None = None) -> Iterator[tuple[Client, str]]:
    """A Dask client and a description of where it grades (for the log)."""
    import dask
    from distributed import Client, LocalCluster

    address = settings.current().scheduler
    if address:
        try:
            client = Client(address, timeout="30s")
        except OSError as error:
            raise RuntimeError(
                f"cannot reach the Dask scheduler at SCHEDULER={address} ({error}); start it "
                "with `dask scheduler` or unset SCHEDULER to grade on this machine"
            ) from None
        try:
            client.wait_for_workers(1, timeout=120)
        except TimeoutError:
            client.close()
            raise RuntimeError(
                f"the Dask scheduler at {address} has no workers after 120 s; start some with "
                f"`dask worker {address}` in the course's environment"
            ) from None
        try:
            yield client, f"{len(client.scheduler_info()['workers'])} worker(s) of the cluster at {address}"
        finally:
            client.close()
        return
    workers = workers or settings.current().jobs or os.cpu_count() or 1
    with dask.config.set(
        {
            "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
            # a grading task waits on its kernel for minutes: that is not a stuck worker
            "distributed.admin.tick.limit": "1h",
            **QUIET,
        }
    ):
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            # Threads of this process: a task only waits on its runner, a process of its own that
            # holds the kernel; worker processes cost each batch (and each single regrade) seconds
            # of starting, importing and closing on the cores the kernels need (docs/scaling.md).
            processes=False,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        client = Client(cluster)
        try:
            yield client, f"a local Dask cluster of {workers} worker(s)"
        finally:
            from staff.grading.execution import worker

            ours = {w.address for w in cluster.workers.values()}  # not another batch's in this process
            client.close()  # the scheduler lets go of every task: queued ones never start
            with worker.stopped(ours):  # and running ones end now, not when their notebooks do
                cluster.close()


def kernel_threads(client: Client) -> dict[str, int]:
    """BLAS/OpenMP threads per kernel, by worker address: each host's cores (as its workers see
    them: cgroups and CPU affinity count) shared among every kernel that runs at once on that host.
    A worker alone cannot know its neighbours; oversubscribing is costly: two fine-tuning notebooks
    at once take several times longer with more threads than cores (docs/scaling.md)."""
    from dask.system import cpu_count

    cores = client.run(cpu_count)
    workers = client.scheduler_info()["workers"]
    kernels_on = Counter()
    for info in workers.values():
        kernels_on[info["host"]] += info["nthreads"]
    return {
        address: max(1, cores[address] // kernels_on[info["host"]])
        for address, info in workers.items()
        if address in cores
    }


def failure(error: Exception) -> tuple[str, str]:
    """Status and reason of a submission whose task failed on the cluster, not in its kernel."""
    from distributed.scheduler import KilledWorker

    if isinstance(error, KilledWorker):
        return "kernel died", (
            f"it took down {ALLOWED_FAILURES + 1} grading workers (crash or out of memory outside "
            "the kernel); nothing graded"
        )
    return "kernel died", f"grading failed on the worker: {type(error).__name__}: {error}"[:200]


class Shared:
    """Data every task needs (the course bundle), on the cluster once, by its hash. Dask keeps few
    copies of it (its memory manager removes replicas nothing asks for), so a worker that dies can
    take the last one with it and the tasks that need it are cancelled ("lost dependencies"):
    :meth:`again` sends it anew before they are resubmitted."""

    def __init__(self, client: Client, value):
        self.client, self.value = client, value
        self.future = self.again()

    def again(self):
        self.future = self.client.scatter(self.value, broadcast=False, hash=True)
        return self.future
