"""nbgrader's formgrader API without the work it does for the whole class per row, same answers.

The formgrader's handlers build an ``NbGraderAPI`` for every request (``BaseHandler.api``). With
1,000 students x 5 assignments, these of its methods do, for one row or one student, work that
grows with the class or the whole gradebook:

- ``get_submission(assignment, student)`` without the class's sets (a student's page in Manage
  Students calls it once per assignment; so does a row refreshed in Manage Submissions) first works
  out which students of the whole class are autograded, submitted and known: it reads and parses
  every student's ``timestamp.txt`` (dateutil), globs every submission folder twice and sums every
  student's scores over every grade, then reads one student's entries from those sets. For one
  student's page, that is done once per assignment (the figures at 1,000 x 5: docs/scaling.md).
- ``get_submissions`` (Manage Submissions) and ``get_notebook_submissions`` (a notebook's
  submissions) each run one statement that sums the scores of every submission in the gradebook,
  all assignments', then keep one assignment's or notebook's; ``get_submissions`` also builds the
  class's student list, each student's score summed, to read names from it.
- ``_filter_existing_notebooks`` (a notebook's submissions, and every grading page and its
  Next/Previous through ``get_notebook_submission_indices``) reads ``nb.student.id`` of each
  submitted notebook: two lazy loads per row (its submission, then its student), an SQL
  statement each.

:class:`CourseAPI` runs nbgrader's own methods, unchanged, with less asked of their helpers and
their database: while ``get_submission`` runs, the class-wide helpers answer for its one student
only (the only entries it reads); while ``get_submissions`` runs, the student list holds names only
(all it reads); while either list runs, every query of its gradebook sees only the submissions of
that assignment or notebook (SQLAlchemy's ``with_loader_criteria``, which adds the criterion in
subqueries too: the sums it keeps are the same sums); and before ``_filter_existing_notebooks``
loops, one query loads the rows' submissions and students into the session nbgrader's objects
belong to, where its lazy loads find them (a many-to-one load by primary key looks in the session
before it asks the database).

The answers are exactly nbgrader's, in the same order (compared on a real gradebook with graded,
unautograded, untimestamped and missing submissions: tests/staff/grading/review/test_formgrader_api.py).
This module is a Jupyter server extension that ``make formgrader`` enables
(:mod:`staff.grading.review.formgrader`): it puts the class where the formgrader's handlers build their
API; nbgrader's command line and every other user of ``NbGraderAPI`` are unchanged. The gradebook's
missing indexes are :mod:`staff.grading.gradebook.indexes`.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from nbgrader.api import Assignment, Notebook, Student, SubmittedAssignment, SubmittedNotebook
from nbgrader.apps.api import NbGraderAPI
from sqlalchemy import event, select
from sqlalchemy.orm import joinedload, object_session, with_loader_criteria

#: Ids per ``IN (...)`` list: far below SQLite's limit of bound parameters (32,766; 999 before 3.32).
CHUNK = 500


class CourseAPI(NbGraderAPI):
    """``NbGraderAPI`` whose helpers are asked only what the calling method reads (see the module)."""

    #: While :meth:`get_submission` runs: the one student the class-wide helpers answer for.
    _student: str | None = None
    #: While :meth:`get_submissions` runs: get_students() is read for names only.
    _names_only = False
    #: While :meth:`get_submissions` or :meth:`get_notebook_submissions` runs: the submissions
    #: their answer is about, as criteria every query of their gradebooks gets.
    _rows: tuple = ()

    def get_submission(self, assignment_id, student_id, ungraded=None, students=None):
        # nbgrader's method reads one student's membership of the sets it computes: the sets
        # restricted to that student take it down the same branch to the same dict.
        with self._asking(student=student_id):
            return super().get_submission(assignment_id, student_id, ungraded=ungraded, students=students)

    def get_submissions(self, assignment_id):
        # nbgrader's one statement sums the scores of every submission in the gradebook, of every
        # assignment, and keeps this assignment's; its student list is read for names only.
        with self._asking(names_only=True, rows=(self._of_assignment(assignment_id),)):
            return super().get_submissions(assignment_id)

    def get_notebook_submissions(self, assignment_id, notebook_id):
        # The same for a notebook: nbgrader sums every submitted notebook's scores, keeps this one's.
        # Its notebooks' submissions are all of its assignment (nbgrader makes them so), and without
        # the second criterion PostgreSQL checks each failed test against every submission.
        this = SubmittedNotebook.notebook_id.in_(
            select(Notebook.id)
            .join(Assignment, Notebook.assignment_id == Assignment.id)
            .where(Notebook.name == notebook_id, Assignment.name == assignment_id)
        )
        with self._asking(
            rows=(with_loader_criteria(SubmittedNotebook, this), self._of_assignment(assignment_id))
        ):
            return super().get_notebook_submissions(assignment_id, notebook_id)

    @staticmethod
    def _of_assignment(assignment_id: str):
        this = SubmittedAssignment.assignment_id.in_(
            select(Assignment.id).where(Assignment.name == assignment_id)
        )
        return with_loader_criteria(SubmittedAssignment, this)

    @contextmanager
    def _asking(self, student: str | None = None, names_only: bool = False, rows: tuple = ()):
        before = self._student, self._names_only, self._rows  # get_submissions calls get_submission
        self._student, self._names_only, self._rows = student, names_only, rows
        try:
            yield
        finally:
            self._student, self._names_only, self._rows = before

    @property
    def gradebook(self):
        gb = super().gradebook
        if self._rows:
            # SQLAlchemy adds each criterion wherever its entity appears in a statement, subqueries
            # included: nbgrader's SQL, unchanged, sums only the rows it returns.
            rows = self._rows

            def only_these(state):
                if state.is_select:
                    state.statement = state.statement.options(*rows)

            event.listen(
                gb.db.session_factory, "do_orm_execute", only_these
            )  # this gradebook's sessions only
        return gb

    def get_autograded_students(self, assignment_id):
        if self._student is None:
            return super().get_autograded_students(assignment_id)
        # nbgrader's three criteria, for the one student: a submission in the gradebook (its
        # query, for this student), an autograded folder, and the submitted timestamp equal to
        # the gradebook's.
        student = self._student
        with self.gradebook as gb:
            found = (
                gb.db.query(Student.id, SubmittedAssignment.timestamp)
                .join(SubmittedAssignment)
                .filter(SubmittedAssignment.name == assignment_id, Student.id == student)
                .all()
            )
        if not found:
            return set()
        folder = self.coursedir.format_path(
            self.coursedir.autograded_directory, student_id=student, assignment_id=assignment_id
        )
        if not os.path.isdir(folder) or self.get_submitted_timestamp(assignment_id, student) != found[0][1]:
            return set()
        return {student}

    def get_submitted_students(self, assignment_id):
        if self._student is None or assignment_id == "*":
            return super().get_submitted_students(assignment_id)
        # nbgrader globs the submitted folder with `*` for the student id and keeps directories.
        # `*` matches one path component that is not hidden (no leading dot): an id that cannot be
        # such a name is never in nbgrader's set, whatever is on disk.
        student = self._student
        if (
            not student
            or student.startswith(".")
            or os.sep in student
            or (os.altsep and os.altsep in student)
        ):
            return set()
        folder = self.coursedir.format_path(
            self.coursedir.submitted_directory, student_id=student, assignment_id=assignment_id
        )
        return {student} if os.path.isdir(folder) else set()

    def get_students(self):
        if self._student is None and not self._names_only:
            return super().get_students()
        # get_submission(s) read only first and last names from this list. nbgrader also lists
        # students the gradebook does not know but who submitted, with no names: that reads the
        # same as not listed (names None either way), so only the gradebook's students are here.
        with self.gradebook as gb:
            query = gb.db.query(Student.id, Student.first_name, Student.last_name)
            if self._student is not None:
                query = query.filter(Student.id == self._student)
            return [{"id": i, "first_name": first, "last_name": last} for i, first, last in query.all()]

    def _filter_existing_notebooks(self, assignment_id, notebooks):
        session = object_session(notebooks[0]) if notebooks else None
        loaded = []  # held until nbgrader's loop is done: a session keeps only weak references
        if session is not None:
            ids = sorted({nb.assignment_id for nb in notebooks})
            for start in range(0, len(ids), CHUNK):
                loaded += (
                    session.query(SubmittedAssignment)
                    .options(joinedload(SubmittedAssignment.student))
                    .filter(SubmittedAssignment.id.in_(ids[start : start + CHUNK]))
                    .all()
                )
        return super()._filter_existing_notebooks(assignment_id, notebooks)


def _jupyter_server_extension_points():
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp) -> None:
    """The formgrader's handlers build their API by this name in their module at every request."""
    from nbgrader.server_extensions.formgrader import base

    base.NbGraderAPI = CourseAPI
    serverapp.log.info("formgrader: nbgrader's API with the course's per-row fixes (%s)", __name__)
