"""nbgrader's ``autograde``, in its two halves around the execution, run in this process.

nbgrader's ``Autograde`` converter sanitizes a submission, then executes it and saves the points,
in one go. Here the execution happens on a worker (:mod:`worker`), so the halves are split:
:func:`sanitize` runs nbgrader's own sanitizing preprocessors before the notebook leaves, and
:func:`save` runs nbgrader's own converter afterwards with its ``Execute`` step swapped for
:class:`UseExecuted` (the worker's executed cells, from the sanitized notebook that was sent: the
converter's own sanitizing pass is not run twice) and the judge's points set in the same pass
(:class:`JudgedPoints`), so the graded notebook is written once and its points saved once, in the
writer's one gradebook session (:func:`session.one_session`). Everything else is nbgrader's:
the student and the submission, its timestamp and late penalty (on the judged points),
``autograded/``, the points.
"""

from __future__ import annotations

import copy
import functools
import io
import logging
import threading
import warnings
from dataclasses import dataclass
from types import SimpleNamespace

import jsonschema
import nbformat
from nbformat import NotebookNode
from nbgrader import utils as nbgrader_utils
from nbgrader.api import MissingEntry
from nbgrader.converters import Autograde
from nbgrader.converters.base import NbGraderException
from nbgrader.coursedir import CourseDirectory
from nbgrader.nbgraderformat.common import BaseMetadataValidator, SchemaMismatchError, ValidationError
from nbgrader.nbgraderformat.v3 import MetadataValidatorV3
from nbgrader.preprocessors import (
    CheckCellMetadata,
    Execute,
    NbGraderPreprocessor,
    OverwriteCells,
    SaveAutoGrades,
)
from sqlalchemy.exc import SAWarning
from traitlets.config import Config, PyFileConfigLoader

from staff import course_dir
from staff.course_dir import CourseDir
from staff.grading.gradebook import session
from staff.grading.judging import points


class _CompiledSchema(BaseMetadataValidator):
    """nbgrader's per-cell check against its JSON schema, with the schema compiled once: nbgrader's
    ``jsonschema.validate`` checks the schema itself for every cell (most of ``CheckCellMetadata``'s
    time, several times per submission: docs/scaling.md). Same checks and errors otherwise
    (``jsonschema.validate`` raises the best match of the same validator's errors)."""

    _compiled: dict[int, object] = {}

    def validate_cell(self, cell: NotebookNode) -> None:
        if "nbgrader" not in cell.metadata:
            return
        if not isinstance(cell.metadata["nbgrader"], dict):  # nbformat takes any JSON there
            raise ValidationError(
                f"its nbgrader metadata is {type(cell.metadata['nbgrader']).__name__}, not an object"
            )
        if cell.metadata["nbgrader"].get("schema_version", 0) != self.schema_version:
            return super().validate_cell(cell)  # nbgrader's own "too old" / "too new"
        if self.schema_version not in self._compiled:
            self._compiled[self.schema_version] = jsonschema.validators.validator_for(self.schema)(
                self.schema
            )
        error = jsonschema.exceptions.best_match(
            self._compiled[self.schema_version].iter_errors(cell.metadata["nbgrader"])
        )
        if error is not None:
            raise error


class _Validator(MetadataValidatorV3, _CompiledSchema):
    """nbgrader's metadata validator (v3's rules: grade ids, points, cell types, duplicates) on
    :class:`_CompiledSchema` (MRO: v3's checks call it where they called nbgrader's base)."""


class CheckMetadata(CheckCellMetadata):
    """nbgrader's ``CheckCellMetadata`` with :class:`_Validator`."""

    def preprocess(self, nb, resources):
        try:
            _Validator().validate_nb(nb)
        except ValidationError as error:
            self.log.error("Notebook failed to validate; the nbgrader metadata may be corrupted: %s", error)
            raise ValidationError(
                "Notebook failed to validate; the nbgrader metadata may be corrupted."
            ) from error
        return nb, resources


class _Served:
    """nbgrader's gradebook with the lookups ``find_<what>(name, ...)`` named here served from rows
    read up front (a name not among them raises nbgrader's ``MissingEntry``, as its query would);
    everything else is the gradebook's."""

    def __init__(self, gb, **rows: dict):
        self.gb, self.rows = gb, rows

    def __getattr__(self, attr: str):
        what = attr.removeprefix("find_")
        if what not in self.rows:
            return getattr(self.gb, attr)

        def find(name: str, *where: str):
            if name not in self.rows[what]:
                raise MissingEntry()
            return self.rows[what][name]

        return find


def _served_cell(step, rows: dict, cell, resources, cell_index):
    """nbgrader's ``preprocess_cell`` of ``step`` with its gradebook's lookups served from ``rows``."""
    real = step.gradebook
    step.gradebook = _Served(real, **rows)
    try:
        return super(type(step), step).preprocess_cell(cell, resources, cell_index)
    finally:
        step.gradebook = real


class OverwriteSourceCells(OverwriteCells):
    """nbgrader's ``OverwriteCells``, with the assignment's source cells (type, locked, checksum,
    source, points) read once per writer session (:func:`session.session_cache`) and kept as plain
    values: they are the same for every submission, and nbgrader queries the gradebook for each
    cell of each submission (about 50 queries per notebook). Exactly nbgrader's outside a session."""

    def preprocess_cell(self, cell, resources, cell_index):
        cache = session.session_cache(self.db_url)
        if cache is None:
            return super().preprocess_cell(cell, resources, cell_index)
        key = ("source cells", self.assignment_id, self.notebook_id)
        if key not in cache:
            found = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
            cache[key] = {
                "source_cell": {
                    c.name: SimpleNamespace(
                        name=c.name,
                        cell_type=c.cell_type,
                        locked=c.locked,
                        checksum=c.checksum,
                        source=c.source,
                    )
                    for c in found.source_cells
                },
                "graded_cell": {
                    c.name: SimpleNamespace(name=c.name, max_score=c.max_score) for c in found.grade_cells
                },
            }
        return _served_cell(self, cache[key], cell, resources, cell_index)


class SaveJudged(SaveAutoGrades):
    """nbgrader's ``SaveAutoGrades`` with the judge's points: a judged cell's ``auto_score`` is the
    judge's (:mod:`judge`, made by the writer from the run's records) in the same step that would
    have saved the kernel's pass/fail, so a kernel-decided point never reaches the gradebook, even
    when a later step fails; the judge's lines go into the graded notebook (:mod:`points`). Inside
    the writer's transaction (:func:`session.one_transaction`) the submission's grade and comment
    rows are read once (live objects: what is set on them is committed with the rest), not once
    per cell; nbgrader's lookups otherwise."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        self._rows, self._verdicts = None, UseExecuted.handoffs[info["student"], info["assignment"]].verdicts
        nb, resources = super().preprocess(nb, resources)
        if self._verdicts is not None:
            points.annotate(nb, self._verdicts)
        return nb, resources

    def preprocess_cell(self, cell, resources, cell_index):
        if not session.in_transaction(self.db_url):
            return super().preprocess_cell(cell, resources, cell_index)
        if self._rows is None:
            found = self.gradebook.find_submission_notebook(
                self.notebook_id, self.assignment_id, self.student_id
            )
            self._rows = {
                "grade": {g.name: g for g in found.grades},
                "comment": {c.name: c for c in found.comments},
            }
        return _served_cell(self, self._rows, cell, resources, cell_index)

    def _add_score(self, cell, resources):
        super()._add_score(cell, resources)  # the kernel's pass/fail, and nbgrader's needs-manual-grade rule
        verdict = (self._verdicts or {}).get(cell.metadata["nbgrader"]["grade_id"])
        if verdict is not None:
            grade = self.gradebook.find_grade(
                cell.metadata["nbgrader"]["grade_id"], self.notebook_id, self.assignment_id, self.student_id
            )
            grade.auto_score = points.score(float(grade.max_score or 0.0), verdict)
            self.gradebook.db.commit()


#: What nbgrader raises for a notebook whose nbgrader metadata it will not take (autograde's
#: ``invalid notebook``): its metadata check's errors, and :func:`sanitize`'s own.
REJECTED = (ValidationError, SchemaMismatchError, NbGraderException)


@functools.lru_cache(maxsize=1)
def _quiet_validator() -> _Validator:
    """nbgrader's check, once per process, its warnings unsaid (``CheckMetadata`` says them later)."""
    validator = _Validator()
    validator.log = logging.getLogger("staff.grading.nbgrader.precheck")
    validator.log.setLevel(logging.ERROR)
    return validator


def metadata_problem(nb: NotebookNode) -> str | None:
    """The first cell whose nbgrader metadata nbgrader's own check rejects, and why; None if none."""
    validator = _quiet_validator()
    for index, cell in enumerate(nb.cells):
        try:
            validator.validate_cell(cell)
        except Exception as error:  # its checks index what they expect: a KeyError is a rejection too
            text = str(error).strip()
            return f"cell {index + 1}: " + (text.splitlines()[0][:150] if text else type(error).__name__)
    return None


_OURS = {CheckCellMetadata: CheckMetadata, OverwriteCells: OverwriteSourceCells, SaveAutoGrades: SaveJudged}


def _steps(names: list) -> list:
    return [_OURS.get(step, step) for step in names]


def sanitize(course: CourseDir, student: str, assignment: str, nb: NotebookNode) -> str:
    """nbgrader's own sanitizing steps (clear outputs, put back every locked and test cell from the
    gradebook, check the metadata) on the submission ``nb``, here before it leaves for a worker, so
    the worker runs the instructor's test cells and nothing the student changed in them.

    nbgrader's steps read the metadata they expect without checking it first (a solution cell
    without a grade id is a ``KeyError`` in its ``DeduplicateIds``): when one fails on a notebook
    whose metadata nbgrader's check rejects, that rejection is raised (a ``ValidationError`` naming
    the cell), so the notebook is invalid, not the grader broken."""
    problem = metadata_problem(nb)
    resources = {
        "nbgrader": {
            "db_url": course.db_url,
            "assignment": assignment,
            "notebook": assignment,
            "student": student,
        }
    }
    try:
        for step in _steps(Autograde.class_traits()["sanitize_preprocessors"].default()):
            nb, resources = step().preprocess(nb, resources)
    except REJECTED:
        raise
    except Exception as error:
        if problem:
            raise ValidationError(problem) from error
        raise
    return nbformat.writes(nb)


@dataclass
class Handoff:
    """What the writer hands nbgrader's converter for one submission."""

    sent: str  # the sanitized notebook the worker ran
    executed: NotebookNode | str  # its executed notebook, or why there is none
    verdicts: dict | None = None  # the judge's, when it judged this run


class UseExecuted(NbGraderPreprocessor):
    """nbgrader's ``Execute`` step, done on a worker: the notebook sent (sanitized here), with that
    run's executed cells (or its error)."""

    #: (student, assignment) -> :class:`Handoff`
    handoffs: dict[tuple[str, str], Handoff] = {}

    def preprocess(self, nb, resources):
        handoff = self.handoffs[resources["nbgrader"]["student"], resources["nbgrader"]["assignment"]]
        if isinstance(handoff.executed, str):
            raise ExecutionElsewhereFailed(handoff.executed)
        sent = nbformat.v4.reads(
            handoff.sent
        )  # written (and validated) by sanitize: parsed, not validated again
        if [c.source for c in sent.cells] != [c.source for c in handoff.executed.cells]:
            raise ExecutionElsewhereFailed("the executed notebook is not the one sent to the worker")
        sent.cells = handoff.executed.cells
        sent.metadata["language_info"] = handoff.executed.metadata.get("language_info", {})
        return sent, resources


class ExecutionElsewhereFailed(RuntimeError):
    pass


_config_lock = threading.Lock()
_nbgrader_log = logging.getLogger("staff.grading.nbgrader")


@functools.lru_cache(maxsize=1)
def _file_config() -> Config:
    return Config(PyFileConfigLoader("nbgrader_config.py", path=str(course_dir.COURSE.root)).load_config())


def course_config(course: CourseDir) -> Config:
    """The course's nbgrader configuration (``nbgrader_config.py``: its preprocessors, the late
    penalty's plugin and policy; read once per process), pointed at ``course``'s folder and gradebook."""
    config = copy.deepcopy(_file_config())
    config.CourseDirectory.root = str(course.root)
    config.CourseDirectory.db_url = course.db_url
    return config


def _autograde_steps() -> list:
    return [
        UseExecuted if step is Execute else step
        for step in _steps(Autograde.class_traits()["autograde_preprocessors"].default())
    ]


class SaveExecuted(Autograde):
    """nbgrader's ``Autograde`` converter without its sanitizing pass, which ran here before the
    notebook left (:func:`sanitize`): that pass read the submission, wrote it to ``autograded/``
    and read it back, only for :class:`UseExecuted` to replace all of it. Its autograding pass runs
    as nbgrader runs it, on the notebook :class:`UseExecuted` supplies, and writes the graded
    notebook once."""

    def convert_single_notebook(self, notebook_filename: str) -> None:
        resources = self.init_single_notebook_resources(notebook_filename)  # names from submitted/
        self._sanitizing = False
        self._init_preprocessors()
        try:
            with nbgrader_utils.setenv(
                NBGRADER_EXECUTION="autograde"
            ):  # UseExecuted's notebook replaces this one
                output, resources = self.exporter.from_notebook_node(
                    nbformat.v4.new_notebook(), resources=resources
                )
            self.write_single_notebook(output, resources)
        finally:
            self._sanitizing = True


def save(course: CourseDir, student: str, assignment: str, handoff: Handoff) -> str:
    """``nbgrader autograde`` for one submission, in this process, with the execution swapped for
    the worker's and the judge's points set: nbgrader creates the student and submission (its
    timestamp, late penalty), writes ``autograded/``, and saves the points. Returns what nbgrader
    logged as an error ("" if none)."""
    config = course_config(course)
    config.CourseDirectory.student_id = student
    config.CourseDirectory.assignment_id = assignment
    config.BaseConverter.force = True
    config.Exporter.optimistic_validation = True  # nbconvert validates once, not after each of 9 steps
    config.Autograde.autograde_preprocessors = _autograde_steps()
    errors = io.StringIO()
    handler = logging.StreamHandler(errors)
    handler.setLevel(logging.ERROR)
    _nbgrader_log.addHandler(handler)
    _nbgrader_log.setLevel(logging.WARNING)
    _nbgrader_log.propagate = False
    UseExecuted.handoffs[(student, assignment)] = handoff
    try:
        with _config_lock, warnings.catch_warnings():  # the converter changes the working directory
            warnings.simplefilter("ignore", SAWarning)  # nbgrader's own ORM warnings, on every submission
            SaveExecuted(coursedir=CourseDirectory(config=config), config=config, log=_nbgrader_log).start()
    except NbGraderException:
        pass
    finally:
        _nbgrader_log.removeHandler(handler)
        UseExecuted.handoffs.pop((student, assignment), None)
    return errors.getvalue()
