"""A grader killed with SIGKILL in the middle of a batch leaves no process running and, once the
next grader has run, no scratch folder behind; that next run grades what was left, and every grade
finished before the kill is still there.

The grader runs in a process of its own on a scratch course (a local Dask cluster of two workers,
each starting sandboxed runners ahead). It is killed once its first kernels are executing; every
process it had started by then (workers, runners, bwrap, kernels) must be gone a few seconds later."""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from course.settings import ROOT
from staff.authoring import samples
from staff.grading import autograde
from staff.grading.status import load_status, status_file

pytestmark = [pytest.mark.notebooks, pytest.mark.xdist_group("killed")]
ASSIGNMENT = "01_attention"
STUDENTS = ("correct_loops", "partial", "stub", "hardcoded_shapes")
DRIVER = (
    "import sys; from pathlib import Path; from staff.course_dir import CourseDir; "
    "from staff.grading import autograde; "
    "autograde.autograde([sys.argv[1]], course=CourseDir(Path(sys.argv[2])), jobs=2, progress=False)"
)


def processes() -> dict[int, tuple[int, str]]:
    """{pid: (parent pid, command line)} of every live (not zombie) process."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            state, parent = stat[stat.rindex(")") + 2 :].split()[:2]
            if state != "Z":
                found[int(proc.name)] = (
                    int(parent),
                    (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(),
                )
        except (OSError, ValueError):
            continue
    return found


def tree(root: int) -> set[int]:
    """``root`` and every process below it."""
    table, found, todo = processes(), {root}, [root]
    while todo:
        parent = todo.pop()
        children = {pid for pid, (ppid, _) in table.items() if ppid == parent} - found
        found |= children
        todo += children
    return found


def test_a_killed_grader_leaves_nothing_running_and_the_next_run_loses_nothing(make_course, samples1):
    from nbgrader.api import Gradebook

    course = make_course("killed")
    expected = {}
    for number, name in enumerate(STUDENTS * 2):  # enough work to be killed in the middle of
        student = f"{name}_{number}"
        samples.submit(samples1[name], course, student)
        expected[student] = samples1[name].expected_score
    grader = subprocess.Popen(
        [sys.executable, "-c", DRIVER, ASSIGNMENT, str(course.root)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while not status_file(course).is_file() and time.monotonic() < deadline:
        time.sleep(0.05)  # killed right after its first finished grade, with kernels executing
    started, before = tree(grader.pid), processes()
    grader.send_signal(signal.SIGKILL)
    grader.wait()
    running = [p for p in started if "staff.grading.execution.run_notebook" in before.get(p, (0, ""))[1]]
    assert running, "no kernel was running when the grader was killed"
    for _ in range(150):  # a runner notices at once; a worker process when its pipe to the grader closes
        table = processes()
        alive = {p: table[p][1][:120] for p in started if p in table}
        orphans = {p: cmd[:120] for p, (ppid, cmd) in table.items() if ppid in started and p not in started}
        if not alive and not orphans:
            break
        time.sleep(0.1)
    assert not alive and not orphans, (alive, orphans)

    finished = {student for (student, _), o in load_status(course).items() if o.get("status") == "graded"}
    assert finished, "no grade was finished before the kill"
    autograde.autograde([ASSIGNMENT], course=course, jobs=1, progress=False)  # the next run
    with Gradebook(course.db_url) as gb:
        assert {s: gb.find_submission(ASSIGNMENT, s).score for s in expected} == expected
    left = [
        p.name
        for p in Path(tempfile.gettempdir()).glob("course-*-*")
        if any(f"-{pid}-" in p.name for pid in started)
    ]
    assert not left, left
