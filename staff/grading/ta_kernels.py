"""Kernels of a TA's Jupyter server (``make formgrader``, the hub's formgrader): a student's code
never runs with the grader's rights.

The server's root is the course folder and runs as the instructor (often root). A TA who opens a
submitted or autograded notebook there and runs it would run the student's code with the rights
of the server: the gradebook, the hidden tests and fixtures, every other submission, the network.
So every kernel this server starts runs in the grading sandbox (:mod:`sandbox`: no course tree, a
read-only system, no network, its own PIDs and unprivileged user, limits on processes, memory and
file sizes, the fixtures without their expected outputs), except for the instructor's own notebooks
under ``source/``, which need the whole course (hidden tests, fixtures) and hold no student code.
Where no sandbox can be made, such a kernel is refused with a message saying why and how to fix
it, never started unsandboxed.

Inside, a kernel works as a grading kernel does: its working folder is a size-limited scratch
folder (not the notebook's folder), ``course`` and the data are there, and hidden fixtures load as
``Withheld`` references, so a student's notebook runs its checks as it did under grading.
"""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager, ServerKernelManager
from tornado import web
from traitlets import Unicode

from course import settings
from staff.grading import sandbox, scratch

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
                raise web.HTTPError(503, reason="refused to run a student's notebook outside the grading sandbox: "
                                    + cls.problem)
            return cls.fixtures


class TAKernelManager(sandbox.SandboxLaunch, ServerKernelManager):
    """One kernel of the TA server: sandboxed (see the module) unless its notebook is under ``source/``."""

    scratch: Path | None = None

    async def _async_pre_start_kernel(self, **kwargs):
        if self.spec is None and self.scratch is None:  # first start (a restart keeps its sandbox)
            root = Path(self.parent.root_dir)
            if sandboxed(Path(kwargs.get("cwd") or root), root):
                self.scratch = scratch.folder("kernel")
                spec = sandbox.make_spec(self.scratch / "sandbox", _Shared.fixtures_view())
                spec.memory = settings.current().memory_bytes
                self.use_sandbox(spec)
                self.log.info("Kernel for %s starts in the grading sandbox (%s)", kwargs.get("cwd"), self.scratch)
        return await super()._async_pre_start_kernel(**kwargs)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart and self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


class CourseKernels(AsyncMappingKernelManager):
    """The TA server's kernel manager (``--ServerApp.kernel_manager_class``): each kernel a
    :class:`TAKernelManager`."""

    kernel_manager_class = Unicode(f"{__name__}.TAKernelManager", config=True)
