"""What one grading run shares: its limits, and its :class:`Batch` (the fixtures as kernels see
them packed into the workers' bundle, the judge's checks and trusted fixtures, the released
notebooks), built once per run by :mod:`autograde` and read by the one writer for every submission."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field

import nbformat

from course import settings
from staff import course_dir
from staff.course_dir import CourseDir
from staff.grading.execution import sandbox, scratch, skipping, worker
from staff.grading.integrity import static_scan
from staff.grading.judging import cell_checks, judge


@dataclass
class Limits:
    """Per submission: ``cell`` s per cell (nbgrader interrupts it), ``wall`` s for the whole
    notebook (then the process group is killed), ``memory`` bytes of address space per process.
    Defaults: ``CELL_TIMEOUT``, ``NOTEBOOK_TIMEOUT`` and ``MEMORY_GB`` (:mod:`course.settings`)."""

    cell: int = field(default_factory=lambda: settings.current().cell_timeout)
    wall: int = field(default_factory=lambda: settings.current().notebook_timeout)
    memory: int = field(default_factory=lambda: settings.current().memory_bytes)


class Batch:
    """What every submission of one run shares: the fixtures as kernels see them (expected outputs
    withheld), packed with ``course/`` and ``data/`` into the :class:`worker.Bundle` the workers
    get, and the judge's checks per assignment (these stay here)."""

    def __init__(self, assignments: list[str], unsafe: bool = False):
        if not unsafe:
            sandbox.probe()  # SandboxUnavailable says why and how to enable it
        self.unsafe = unsafe
        self._modules: dict[str, list[str]] = {}
        self._released: dict[str, nbformat.NotebookNode] = {}
        scratch.sweep()  # what graders killed before they could clean up left on this machine
        self.folder = scratch.folder("grading")
        self.folder.chmod(0o755)
        fixtures = settings.current().fixtures
        self.checks: dict[str, dict] = {}
        self.hidden: dict[str, frozenset[str]] = {}  # what the hidden tests define: the scan's
        self.skips: dict[str, list[str]] = {}  # given cells that only teach: not run (skipping.py)
        for assignment in assignments:  # no judge file, or an out-of-date one: nobody is graded
            source = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
            self.checks[assignment] = cell_checks.load_checks(assignment, fixtures, source)
            self.hidden[assignment] = static_scan.hidden_names(source)
            self.skips[assignment] = skipping.declared(source)
        self.fixtures = judge.Fixtures(fixtures)  # the trusted ones, expected outputs included: the judge's
        self.bundle = worker.Bundle.pack(sandbox.fixtures_view(self.folder / "fixtures", fixtures))
        shutil.rmtree(self.folder / "fixtures")  # it lives on in the bundle

    def digest(self, notebook: str, assignment: str, limits: Limits) -> str:
        """What a grade depends on: the notebook as executed, the course files, the checks, the limits."""
        parts = [
            notebook,
            self.bundle.digest,
            json.dumps(self.checks.get(assignment), sort_keys=True),
            json.dumps(self.skips.get(assignment, [])),
            f"{limits.cell}/{limits.wall}/{limits.memory}/{self.unsafe}",
        ]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def released(self, course: CourseDir, assignment: str) -> nbformat.NotebookNode:
        """The released notebook (read once per batch; repairs copy from it, never change it)."""
        if assignment not in self._released:
            self._released[assignment] = nbformat.read(
                course_dir.release_notebook(assignment, course.release), as_version=4
            )
        return self._released[assignment]

    def modules(self, course: CourseDir, assignment: str) -> list[str]:
        """What the released notebook imports: a worker imports it into the next kernel ahead of
        time (from the course's notebook, never a student's: a kernel serves the next student)."""
        if assignment not in self._modules:
            self._modules[assignment] = worker.imports(self.released(course, assignment))
        return self._modules[assignment]

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
