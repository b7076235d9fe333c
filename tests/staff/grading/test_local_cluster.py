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
