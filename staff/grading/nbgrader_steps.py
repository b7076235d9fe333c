"""nbgrader's ``autograde``, in its two halves around the execution, run in this process.

nbgrader's ``Autograde`` converter sanitizes a submission, then executes it and saves the points,
in one go. Here the execution happens on a worker (:mod:`worker`), so the halves are split:
:func:`sanitize` runs nbgrader's own sanitizing preprocessors before the notebook leaves, and
:func:`save` runs nbgrader's own converter afterwards with its ``Execute`` step swapped for
:class:`UseExecuted` (the worker's executed cells). Everything else is nbgrader's: creating the
student and the submission, its timestamp and late penalty, ``autograded/``, the points.
"""
from __future__ import annotations

import io
import logging
import threading
import warnings

import nbformat
from nbformat import NotebookNode
from nbgrader.converters import Autograde
from nbgrader.converters.base import NbGraderException
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from sqlalchemy.exc import SAWarning
from traitlets.config import Config, PyFileConfigLoader

from staff import course_dir
from staff.course_dir import CourseDir


def sanitize(course: CourseDir, student: str, assignment: str) -> str:
    """nbgrader's own sanitizing steps (clear outputs, put back every locked and test cell from the
    gradebook, check the metadata), here before the notebook leaves for a worker, so the worker
    runs the instructor's test cells and nothing the student changed in them."""
    path = course.submitted / student / assignment / f"{assignment}.ipynb"
    nb = nbformat.read(path, as_version=4)
    resources = {"nbgrader": {"db_url": course.db_url, "assignment": assignment, "notebook": assignment,
                              "student": student}}
    for step in Autograde.class_traits()["sanitize_preprocessors"].default():
        nb, resources = step().preprocess(nb, resources)
    return nbformat.writes(nb)


class UseExecuted(NbGraderPreprocessor):
    """nbgrader's ``Execute`` step, done on a worker: take that run's executed cells (or its error)."""

    #: (student, assignment) -> the executed notebook, or why there is none
    results: dict[tuple[str, str], NotebookNode | str] = {}

    def preprocess(self, nb, resources):
        key = resources["nbgrader"]["student"], resources["nbgrader"]["assignment"]
        done = self.results.pop(key)
        if isinstance(done, str):
            raise ExecutionElsewhereFailed(done)
        if [c.source for c in nb.cells] != [c.source for c in done.cells]:
            raise ExecutionElsewhereFailed("the executed notebook is not the one sent to the worker")
        nb.cells = done.cells
        nb.metadata["language_info"] = done.metadata.get("language_info", {})
        return nb, resources


class ExecutionElsewhereFailed(RuntimeError):
    pass


_config_lock = threading.Lock()
_nbgrader_log = logging.getLogger("staff.grading.nbgrader")


def course_config(course: CourseDir) -> Config:
    """The course's nbgrader configuration (``nbgrader_config.py``: its preprocessors, the late
    penalty's plugin and policy), pointed at ``course``'s folder and gradebook."""
    config = Config(PyFileConfigLoader("nbgrader_config.py", path=str(course_dir.COURSE.root)).load_config())
    config.CourseDirectory.root = str(course.root)
    config.CourseDirectory.db_url = course.db_url
    return config


def save(course: CourseDir, student: str, assignment: str, executed: NotebookNode | str) -> str:
    """``nbgrader autograde`` for one submission, in this process, with the execution swapped for
    the worker's: nbgrader creates the student and submission (its timestamp, late penalty), writes
    ``autograded/``, and saves the points. Returns what nbgrader logged as an error ("" if none)."""
    config = course_config(course)
    config.CourseDirectory.student_id = student
    config.CourseDirectory.assignment_id = assignment
    config.BaseConverter.force = True
    steps = list(Autograde.class_traits()["autograde_preprocessors"].default())
    config.Autograde.autograde_preprocessors = [UseExecuted if s is Execute else s for s in steps]
    errors = io.StringIO()
    handler = logging.StreamHandler(errors)
    handler.setLevel(logging.ERROR)
    _nbgrader_log.addHandler(handler)
    _nbgrader_log.setLevel(logging.WARNING)
    _nbgrader_log.propagate = False
    UseExecuted.results[(student, assignment)] = executed
    try:
        with _config_lock, warnings.catch_warnings():  # the converter changes the working directory
            warnings.simplefilter("ignore", SAWarning)  # nbgrader's own ORM warnings, on every submission
            Autograde(coursedir=CourseDirectory(config=config), config=config, log=_nbgrader_log).start()
    except NbGraderException:
        pass
    finally:
        _nbgrader_log.removeHandler(handler)
        UseExecuted.results.pop((student, assignment), None)
    return errors.getvalue()
