"""The local cluster `make autograde` starts: its workers' own monitoring is slowed or off, since on
a 2-core machine every CPU-second it takes is one a student's kernel waits for."""

from __future__ import annotations

import dask
import distributed  # noqa: F401 (its defaults are part of Dask's configuration from here on)

from staff.grading.execution import cluster


def _settings() -> dict:
    return {key: dask.config.get(key) for key in cluster.QUIET}


def test_the_local_clusters_workers_run_without_the_stack_profiler_and_with_slow_ticks():
    here = _settings()
    with cluster.connect(2) as (client, where):
        assert "local Dask cluster of 2" in where
        on_workers = client.run(_settings)
    assert len(on_workers) == 2
    # threads of this process: no worker processes to start, import into and close for each batch
    assert all(address.startswith("inproc://") for address in on_workers), on_workers
    for settings in on_workers.values():
        assert settings == cluster.QUIET
        assert settings["distributed.worker.profile.enabled"] is False
    # and only there: the Dask configuration of the process that started it is left as it was
    assert _settings() == here


def test_closing_the_local_cluster_stops_its_notebooks_still_running_and_no_others(tmp_path):
    """The local cluster's workers are threads of the grader, and closing one waits for its task:
    a grader stopping early (a failed canary, Ctrl-C) must not wait for notebooks nobody will read.
    Two submissions sleep for five minutes; leaving ``connect`` kills both runners at once, and
    not the runner of another batch in the same process (a second TA's regrade in the formgrader)."""
    import time

    import nbformat

    from staff.grading.execution import worker
    from staff.grading.execution.scratch import alive

    view = tmp_path / "view"
    view.mkdir()
    bundle = worker.Bundle.pack(view)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import time\ntime.sleep(300)")])
    job = worker.Job("sleeper", "01_attention", nbformat.writes(nb), 600, 600, 4 << 30)

    def started(count: int) -> list:
        deadline = time.monotonic() + 120
        while len(worker._runners) < count and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(worker._runners) == count, "the submissions never started"
        return list(worker._runners)

    with cluster.connect(1) as (other, _):
        kept = other.submit(worker.execute, bundle, job, pure=False)
        (theirs,) = started(1)
        with cluster.connect(2) as (client, _):
            futures = [client.submit(worker.execute, bundle, job, pure=False) for _ in range(2)]
            ours = [r for r in started(3) if r is not theirs]
            time.sleep(3)  # into their sleep
            left = time.monotonic()
        took = time.monotonic() - left
        assert took < 20, f"closing the cluster waited {took:.0f} s for notebooks nobody reads"
        assert not [r.process.pid for r in ours if alive(r.process.pid)]
        assert all(f.status in ("cancelled", "error", "lost", "finished") for f in futures)
        assert worker._runners == {theirs} and alive(theirs.process.pid) and not kept.done()
    assert not worker._runners and not alive(theirs.process.pid)
