"""Grading on a real cluster into a real PostgreSQL: an external `dask scheduler` with two
`dask worker` processes on loopback (started here, as an instructor would on their machines), one
of them killed mid-batch, and a PostgreSQL 15 server in a temporary folder as the gradebook.

Every submission must be graded exactly once, with the scores the samples declare (the scores a
sequential run gives: tests/staff/grading/test_autograde.py), bad input keeps its status, and a
re-run grades only what changed and keeps the manual grades."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import postgres_server
import psutil
import pytest
from dask.system import cpu_count
from distributed import Client
from nbgrader.api import Gradebook

from staff.authoring import samples
from staff.course_dir import CourseDir
from staff.grading import autograde
from staff.grading.execution import cluster
from staff.grading.status import load_status
from support import free_port

pytestmark = [pytest.mark.notebooks, pytest.mark.xdist_group("cluster")]
ASSIGNMENT = "01_attention"
BAD = Path(__file__).parents[1] / "bad_submissions" / ASSIGNMENT
LIMITS = autograde.Limits(cell=10, wall=90, memory=3 * 2**30)


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server of its own (the machine's binaries) with an empty database."""
    try:
        postgres_server.binaries()
    except postgres_server.NoPostgres as error:
        pytest.skip(str(error))
    with postgres_server.temporary_server("course") as url:
        yield url


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """`dask scheduler` and two `dask worker` processes (no nanny: a killed worker stays dead)."""
    folder = tmp_path_factory.mktemp("dask")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    bindir = Path(sys.executable).parent
    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "2"}
    processes = [
        subprocess.Popen(
            [str(bindir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            cwd=folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    for name in ("w1", "w2"):
        processes.append(
            subprocess.Popen(
                [
                    str(bindir / "dask"),
                    "worker",
                    address,
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                    "--name",
                    name,
                ],
                cwd=folder,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    try:
        yield address, processes[1:]
    finally:
        for process in processes:
            process.kill()
            process.wait()


def _kill_first_busy_worker(workers: list[subprocess.Popen], killed: list[int]) -> None:
    """Kill the first worker seen running a kernel (mid-submission), once."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not killed:
        for process in workers:
            try:
                kernels = [
                    p
                    for p in psutil.Process(process.pid).children(recursive=True)
                    if "ipykernel" in " ".join(p.cmdline())
                ]
            except psutil.Error:
                continue
            if kernels:
                time.sleep(2)  # well inside its submission
                process.kill()
                killed.append(process.pid)
                return
        time.sleep(0.2)


def test_external_cluster_postgresql_and_a_killed_worker(
    make_course, samples1, postgres, scheduler, monkeypatch
):
    address, workers = scheduler
    course = make_course("cluster")
    course = CourseDir(course.root, url=postgres)
    expected = {}
    batch = [
        samples1["correct_loops"],
        samples1["partial"],
        samples1["stub"],
        *[s for s in samples.load(ASSIGNMENT, BAD) if s.student in ("infinite_loop", "memory_bomb")],
    ]
    for sample in batch:
        samples.submit(sample, course)
        expected[sample.student] = (sample.expected_status, sample.expected_score)
    corrupt = course.submitted / "corrupt_json" / ASSIGNMENT
    corrupt.mkdir(parents=True)
    corrupt.joinpath(f"{ASSIGNMENT}.ipynb").write_text('{"cells": [')
    expected["corrupt_json"] = ("invalid notebook", 0.0)

    monkeypatch.setenv("SCHEDULER", address)
    with Client(address) as client:  # two workers of one thread on one host share its cores
        client.wait_for_workers(2, timeout=60)
        assert cluster.kernel_threads(client) == {
            a: max(1, cpu_count() // 2) for a in client.scheduler_info()["workers"]
        }
    killed: list[int] = []
    killer = threading.Thread(target=_kill_first_busy_worker, args=(workers, killed))
    killer.start()
    outcomes = autograde.autograde([ASSIGNMENT], course=course, limits=LIMITS, progress=False)
    killer.join()
    assert killed, "no worker was seen running a kernel"

    with Gradebook(postgres) as gb:
        submissions = gb.assignment_submissions(ASSIGNMENT)
        scores = {s.student.id: s.score for s in submissions}
    assert (
        len(submissions) == len(scores) == len(expected) - 1
    )  # each once; the corrupt one never reached nbgrader
    got = {o.student: (o.status, scores.get(o.student, 0.0)) for o in outcomes}
    assert got == expected, [(o.student, o.status, o.reason, o.worker) for o in outcomes]
    assert all(
        o.worker.startswith("tcp://127.0.0.1:") for o in outcomes if o.student != "corrupt_json"
    )  # all ran there
    assert all(o.reason for o in outcomes if o.status not in ("graded", "flagged"))

    # A TA grades a free-text answer; one student hands in again; the rest is unchanged.
    with Gradebook(postgres) as gb:
        gb.find_grade("q_scaling", ASSIGNMENT, ASSIGNMENT, "partial").manual_score = 1.0
        gb.db.commit()
    samples.submit(samples1["correct_loops"], course, student="stub")
    before = load_status(course)
    again = {
        o.student: o for o in autograde.autograde([ASSIGNMENT], course=course, limits=LIMITS, progress=False)
    }
    after = load_status(course)
    assert again["stub"].status == "graded" and again["stub"].digest != before[("stub", ASSIGNMENT)]["digest"]
    for student in ("correct_loops", "partial", "infinite_loop", "memory_bomb"):
        assert after[(student, ASSIGNMENT)] == before[(student, ASSIGNMENT)], student  # kept, not re-run
    with Gradebook(postgres) as gb:
        assert gb.find_submission(ASSIGNMENT, "stub").score == 23.0
        assert gb.find_grade("q_scaling", ASSIGNMENT, ASSIGNMENT, "partial").manual_score == 1.0
