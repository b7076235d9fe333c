"""What a TA's Jupyter server (``make formgrader``, the hub's formgrader) runs: a student's code
never with the grader's rights.

The server's root is the course folder and runs as the instructor (often root). A TA who opens a
submitted or autograded notebook there and runs it would run the student's code with the rights
of the server: the gradebook, the hidden tests and fixtures, every other submission, the network.
So every kernel this server starts runs in the grading sandbox (:mod:`sandbox`: no course tree, a
read-only system, no network, its own PIDs and unprivileged user, limits on processes, memory and
file sizes, the fixtures without their expected outputs), except for the instructor's own notebooks
under ``source/``, which need the whole course (hidden tests, fixtures) and hold no student code.
Where no sandbox can be made, such a kernel is refused with a message saying why and how to fix
it, never started unsandboxed.

The formgrader's own *Autograde* button (Manage Submissions) would run nbgrader's autograde in the
server: the student's code unsandboxed, and points decided by its kernel. Here it grades that
submission again through the course's grader instead (:func:`regrade.regrade`: the canary, the
sandbox, the judge; manual grades kept; logged with the TA's name), in a thread, so the other TAs'
pages stay live meanwhile (:func:`install`, a server extension).

Inside, a kernel works as a grading kernel does: its working folder is a size-limited scratch
folder (not the notebook's folder), ``course`` and the data are there, and hidden fixtures load as
``Withheld`` references, so a student's notebook runs its checks as it did under grading.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import threading
from pathlib import Path

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager, ServerKernelManager
from tornado import web
from tornado.ioloop import IOLoop
from traitlets import Unicode

from course import settings, variant
from staff.grading.execution import sandbox, scratch

#: Notebooks whose kernels run unsandboxed: the instructor's own, relative to the course folder.
TRUSTED = ("source",)


def sandboxed(cwd: Path, root: Path) -> bool:
    """Whether a kernel started for a notebook in ``cwd`` runs in the sandbox: all but the
    instructor's ``source/``. Compared as the server names them (its root and the notebook's API
    path, ``..`` resolved), so a folder outside the course counts as untrusted."""
    try:
        relative = Path(os.path.abspath(cwd)).relative_to(os.path.abspath(root))
    except ValueError:
        return True
    return not (relative.parts and relative.parts[0] in TRUSTED)


#: The course's folders that hold one folder per student (``<folder>/<student>/<assignment>/``).
PER_STUDENT = ("submitted", "autograded", "feedback")


def student_of(cwd: Path, root: Path) -> str | None:
    """The student whose notebook a kernel started in ``cwd`` runs, if ``cwd`` is in one of their
    folders (:data:`PER_STUDENT`) and the name is an id (:func:`course.variant.valid`)."""
    try:
        parts = Path(os.path.abspath(cwd)).relative_to(os.path.abspath(root)).parts
    except ValueError:
        return None
    found = parts[1] if len(parts) >= 2 and parts[0] in PER_STUDENT else None
    return found if found and variant.valid(found) else None


class _Shared:
    """What the server's sandboxed kernels share, made once: the sandbox probe and the fixtures view."""

    lock = threading.Lock()
    problem: str | None = None
    fixtures: Path | None = None

    @classmethod
    def fixtures_view(cls) -> Path:
        with cls.lock:
            if cls.problem is None and cls.fixtures is None:
                try:
                    sandbox.probe()
                    cls.fixtures = sandbox.fixtures_view(scratch.folder("grading") / "fixtures")
                except sandbox.SandboxUnavailable as error:
                    cls.problem = str(error)
            if cls.problem is not None:
                raise web.HTTPError(
                    503,
                    reason="refused to run a student's notebook outside the grading sandbox: " + cls.problem,
                )
            return cls.fixtures


class TAKernelManager(sandbox.SandboxLaunch, ServerKernelManager):
    """One kernel of the TA server: sandboxed (see the module) unless its notebook is under ``source/``."""

    scratch: Path | None = None

    async def _async_pre_start_kernel(self, **kwargs):
        if self.spec is None and self.scratch is None:  # first start (a restart keeps its sandbox)
            root = Path(self.parent.root_dir)
            if sandboxed(Path(kwargs.get("cwd") or root), root):
                # The first one probes the sandbox and writes the fixtures view (seconds): in a thread,
                # so the other TAs' pages are not held up.
                fixtures = await asyncio.to_thread(_Shared.fixtures_view)
                self.scratch = scratch.folder("kernel")
                spec = sandbox.make_spec(self.scratch / "sandbox", fixtures)
                spec.memory = settings.current().memory_bytes
                student = student_of(Path(kwargs.get("cwd") or root), root)
                if student:  # the student's own variant of the experiments, as their graded run had it
                    spec.env[settings.STUDENT_VARIABLE] = student
                self.use_sandbox(spec)
                self.log.info(
                    "Kernel for %s starts in the grading sandbox (%s)", kwargs.get("cwd"), self.scratch
                )
        return await super()._async_pre_start_kernel(**kwargs)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart and self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


async def _autograde(self, assignment_id: str, student_id: str) -> None:
    """nbgrader's ``AutogradeHandler.post``, through the course's grader (see the module)."""
    from staff.course_dir import CourseDir
    from staff.grading import regrade

    course = CourseDir(Path(self.api.coursedir.root), url=self.api.coursedir.db_url)
    user = getattr(self.current_user, "username", None) or str(self.current_user)
    grade = functools.partial(
        regrade.regrade, course, [student_id], [assignment_id], reason=f"formgrader ({user})", progress=False
    )
    try:
        outcomes = await IOLoop.current().run_in_executor(None, grade)
    except Exception as error:  # the canary stopped it, no sandbox, ...: what the TA's dialog shows
        self.write(json.dumps({"success": False, "log": "", "error": f"{type(error).__name__}: {error}"}))
        return
    lines = [
        f"{o.student} / {o.assignment}: {o.status}" + (f" ({o.reason})" if o.reason else "") for o in outcomes
    ]
    done = bool(outcomes) and all(o.status in ("graded", "repaired", "flagged") for o in outcomes)
    self.write(
        json.dumps(
            {
                "success": done,
                "log": "\n".join(lines or ["nothing submitted to grade"]),
                "error": "" if done else "\n".join(lines),
            }
        )
    )


def install() -> None:
    """The formgrader's Autograde button through the course's grader (once per process)."""
    from nbgrader.server_extensions.formgrader import apihandlers
    from nbgrader.server_extensions.formgrader.base import check_notebook_dir, check_xsrf

    if not getattr(apihandlers.AutogradeHandler.post, "course_grader", False):
        post = web.authenticated(check_xsrf(check_notebook_dir(_autograde)))
        post.course_grader = True
        apihandlers.AutogradeHandler.post = post


def _load_jupyter_server_extension(serverapp) -> None:
    install()
    serverapp.log.info("formgrader: Autograde grades through the course's sandbox and judge (%s)", __name__)


class CourseKernels(AsyncMappingKernelManager):
    """The TA server's kernel manager (``--ServerApp.kernel_manager_class``): each kernel a
    :class:`TAKernelManager`."""

    kernel_manager_class = Unicode(f"{__name__}.TAKernelManager", config=True)
