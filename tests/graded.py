"""The graded course behind conftest's ``graded_course``: every bundled sample submitted (with its
student's name) and autograded in one batch as `make demo` does, on another CPU's kernels
(:data:`OTHER_CPU`).

It is the suite's longest piece of work (about six minutes here), so it is built in a process of its
own, started the moment a test process has collected a test that reads it. The test processes run
the other tests meanwhile; each then waits for the build and takes its own copy of the finished
course, because the tests that read it also write in it (a TA's grades, flag decisions, feedback).
Before, one test process built it and then ran all of its tests one after the other: that chain was
the suite's wall time, with the second core half idle (docs/scaling.md).

Run as a script (``python graded.py FOLDER PARENT``) this module is that process: it builds
``FOLDER/course``, then writes ``FOLDER/done``, or ``FOLDER/failed`` with the traceback. It stops
the moment process ``PARENT`` is gone (the pytest process that runs the session), so a killed test
run leaves nothing running; the session's end stops a build no test waited for.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

#: The CPU kernels the graded course's kernels run on: PyTorch's portable ones, not the AVX2 or
#: AVX-512 ones the fixtures were built with, so the samples' exact scores are checked on "another
#: CPU" on every machine (float32 results move in the last bits between them; see docs/integrity.md,
#: "Supported CPUs"). Dask's worker processes, and the sandboxed kernels after them, inherit it.
OTHER_CPU = {"ATEN_CPU_CAPABILITY": "default"}

FOLDER = "graded-course"
#: Beside the build: release/ and the gradebook as nbgrader generated them, before any submission
#: (conftest's ``released``: every test process copies them instead of running nbgrader again).
RELEASED = "released"


def folder(config) -> Path:
    """Where the session's build goes: one folder for every test process of a session (under
    pytest-xdist the workers' temporary folders are inside the controller's)."""
    base = config._tmp_path_factory.getbasetemp()  # as pytest-xdist itself reaches it
    return (base.parent if hasattr(config, "workerinput") else base) / FOLDER


def start(config) -> None:
    """Start the build unless a process of this session already has (creating the folder is the
    lock). It runs in a session of its own, so this test process ending does not end it; it lives
    as long as the process that runs the whole session (pytest-xdist's controller, or this one)."""
    shared = folder(config)
    try:
        shared.mkdir(parents=True)
    except FileExistsError:
        return
    session = os.getppid() if hasattr(config, "workerinput") else os.getpid()
    with (shared / "build.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, __file__, str(shared), str(session)],
            # The grader's own COURSE_STUDENT must not reach a kernel: each runs its student's variant.
            env=os.environ | OTHER_CPU | {"COURSE_STUDENT": "worked-example"},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    (shared / "pid").write_text(str(process.pid))


def stop(config) -> None:
    """At the end of the session (in the process that runs it): stop a build still going, which
    happens only when no test waited for it (the run was interrupted or stopped at a failure)."""
    if hasattr(config, "workerinput"):
        return
    shared = folder(config)
    pid = shared / "pid"
    # A build that wrote its outcome has ended: its pid may since be another process's.
    if pid.exists() and not (shared / "done").exists() and not (shared / "failed").exists():
        try:
            os.killpg(
                int(pid.read_text()), signal.SIGKILL
            )  # the grader leaves nothing behind (test_worker_killed)
        except ProcessLookupError:
            pass


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def take_release(config, root: Path) -> bool:
    """Copy the build's release/ and gradebook into the course at ``root`` once it has generated
    them (seconds after it starts); False, and nothing copied, if no build runs in this session or
    it stopped before (the caller then generates its own)."""
    shared = folder(config)
    try:
        pid = int((shared / "pid").read_text())
    except (FileNotFoundError, ValueError):  # no build, or its starter has not written the pid yet
        return False
    while not (shared / RELEASED).exists():
        if (shared / "failed").exists() or not _alive(pid):
            if not (shared / RELEASED).exists():  # (written just before it stopped, or never)
                return False
            break
        time.sleep(0.2)
    shutil.copytree(shared / RELEASED / "release", root / "release")
    shutil.copy2(shared / RELEASED / "gradebook.db", root / "gradebook.db")
    return True


def finished(config, every: float = 1.0) -> Path:
    """The finished course, once the build is done (it fails the test, with the build's log, if
    the build failed or died)."""
    import pytest

    shared = folder(config)
    pid = int((shared / "pid").read_text())
    while not (shared / "done").exists():
        if (shared / "failed").exists():
            pytest.fail(
                f"building the graded course failed:\n{(shared / 'failed').read_text()}", pytrace=False
            )
        if not _alive(pid) and not (shared / "done").exists():
            log = (shared / "build.log").read_text()[-3000:]
            pytest.fail(
                f"the graded course's build stopped without finishing; its log ends:\n{log}", pytrace=False
            )
        time.sleep(every)
    return shared / "course"


def copy(built: Path, root: Path):
    """A test process's own copy of the finished course (its source/ still the real one)."""
    from staff.course_dir import CourseDir

    shutil.copytree(built, root, symlinks=True)
    return CourseDir(root)


def build(root: Path) -> None:
    import course  # noqa: F401  (applies the hub mode before transformers is imported)
    from staff import course_dir
    from staff.authoring import release, samples
    from staff.course_dir import CourseDir
    from staff.grading import autograde
    from staff.grading.gradebook import admin

    root.mkdir()
    (root / "source").symlink_to(course_dir.SOURCE, target_is_directory=True)
    graded = CourseDir(root)
    release.generate(course=graded)
    staging = root.parent / f"{RELEASED}.partial"  # renamed when whole: a reader sees all or nothing
    shutil.copytree(graded.release, staging / "release")
    shutil.copy2(graded.gradebook, staging / "gradebook.db")
    staging.rename(root.parent / RELEASED)
    samples.copy_to_submitted(course=graded)
    admin.import_roster(samples.ROSTER, graded)
    # One submission per core (one thread each), as `make autograde` does on this machine: the
    # test processes' work fills the gaps between kernels.
    autograde.autograde(course_dir.assignments(), course=graded, jobs=os.cpu_count() or 1, progress=False)


def _stop_with(session: int, every: float = 1.0) -> None:
    """Kill this process and what it started the moment process ``session`` is gone, however it
    died. (Not its parent: under pytest-xdist that is the test process that started the build,
    which may end first while another one still waits for it.)"""
    import threading

    import psutil

    def watch() -> None:
        while psutil.pid_exists(session):
            threading.Event().wait(every)
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, daemon=True, name="stop-with-session").start()


def main(shared: Path, session: int) -> None:
    _stop_with(session)
    started = time.monotonic()
    try:
        build(shared / "course")
    except BaseException:
        (shared / "failed").write_text(traceback.format_exc())
        raise
    (shared / "done").write_text(f"{time.monotonic() - started:.0f} s\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
