"""Late work: due dates, when the LMS received each submission, and the late penalty, all in
nbgrader's own terms.

- **Due dates** come from the course's calendar (:mod:`staff.calendar`, ``due_dates.toml``);
  :func:`write_due_dates` puts them into the gradebook's ``Assignment.duedate`` (UTC, as nbgrader
  stores it) whenever assignments are registered and before every export. The late window
  (:attr:`CourseLatePenalty.late_window`) is when an assignment closes in that calendar.
- **When the work arrived** is nbgrader's ``timestamp.txt`` in ``submitted/<student>/<assignment>/``:
  nbgrader's autograde reads it into the submission, and its ``total_seconds_late`` follows (with
  any extension given through nbgrader). ``make collect`` writes it when the LMS's file name carries
  a time, ``make samples`` for every sample.
- **The LMS's own LATE marker** (Canvas: ``doejane_LATE_12345_67890_01_attention.ipynb``) is kept by
  ``make collect`` in :data:`MARKER` beside the notebook. Canvas's names carry no time: a marked
  submission without a timestamp is charged as one started day late, the least it can be (write
  the real time into its ``timestamp.txt`` for the exact penalty).
- **The penalty** is :class:`CourseLatePenalty`, nbgrader's ``LateSubmissionPlugin`` seam
  (``c.AssignLatePenalties.plugin_class`` in ``nbgrader_config.py``, where its policy is set).
  nbgrader applies it inside autograde *before* the judge sets the judged cells' points, on a
  score that is not final; :func:`apply` runs nbgrader's ``AssignLatePenalties`` again after the
  judge, :func:`refresh` before every export and :class:`ChargeLatePenalty` before feedback, so
  the penalty follows the final score (a TA's manual points included).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

from nbconvert.preprocessors import Preprocessor
from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

from staff.calendar import due_dates
from staff.course_dir import CourseDir

#: What ``make collect`` keeps of the LMS's file name, beside the submitted notebook.
MARKER = "lms.json"
#: nbgrader's own file for when a submission was received (read by its autograde).
TIMESTAMP = "timestamp.txt"
DAY = 24 * 3600


def policy() -> CourseLatePenalty:
    """The late policy as ``nbgrader_config.py`` sets it (the one place)."""
    from staff import course_dir
    from staff.grading.gradebook import nbgrader_steps

    return CourseLatePenalty(config=nbgrader_steps.course_config(course_dir.COURSE))


def write_due_dates(assignments: list[str], course: CourseDir) -> None:
    """Each assignment's due date into the gradebook (``None`` where the file gives none: a date
    the instructor removed is removed there too)."""
    from nbgrader.api import Gradebook

    dates = due_dates()
    with Gradebook(course.db_url) as gb:
        for assignment in assignments:
            when = dates.get(assignment)
            gb.update_or_create_assignment(assignment, duedate=when.replace(tzinfo=None) if when else None)


def days_late(seconds: float) -> int:
    """Started days: one second late is one day late."""
    return math.ceil(seconds / DAY) if seconds > 0 else 0


class CourseLatePenalty(LateSubmissionPlugin):
    """The course's late policy: ``per_day`` of a notebook's points off per started day late, never
    more than ``cap`` of them. nbgrader calls it only for a submission after its due date (extension
    included). Set both in ``nbgrader_config.py``; "late work scores zero" is per_day = cap = 1."""

    per_day = Float(0.10, help="share of the notebook's score taken per started day late").tag(config=True)
    cap = Float(0.50, help="largest share of the notebook's score a late penalty takes").tag(config=True)

    @property
    def late_window(self) -> timedelta | None:
        """How long after the due date lateness still changes the score: the started days it takes
        the penalty to reach its cap (5 days at 10 % a day up to 50 %). An assignment *closes* when
        its window ends (:func:`staff.calendar.closing_dates`); work that arrives later is charged the cap. None
        when there is no penalty (``per_day`` or ``cap`` 0): lateness never counts, so nothing closes."""
        if self.per_day <= 0 or self.cap <= 0:
            return None
        return timedelta(days=math.ceil(round(min(1.0, self.cap) / self.per_day, 9)))

    def late_submission_penalty(
        self, student_id: str, score: float, total_seconds_late: float
    ) -> float | None:
        share = min(self.cap, self.per_day * days_late(total_seconds_late))
        return round(max(0.0, share) * (score or 0.0), 2)


def write_timestamp(folder: Path, when: datetime) -> Path:
    """nbgrader's ``timestamp.txt`` for a submission folder, in UTC with the zone written out."""
    path = folder / TIMESTAMP
    path.write_text(when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") + "\n")
    return path


def read_timestamp(folder: Path) -> datetime | None:
    """``timestamp.txt`` as nbgrader reads it (naive UTC), or None when there is none or it is unreadable."""
    from nbgrader.utils import parse_utc

    try:
        return parse_utc((folder / TIMESTAMP).read_text().strip() or None)
    except (OSError, ValueError, OverflowError):
        return None


def write_marker(folder: Path, lms_name: str, late: bool) -> Path:
    """What the LMS said about a collected file: its name there and whether it marked it late."""
    path = folder / MARKER
    path.write_text(json.dumps({"lms_file": lms_name, "late": late}) + "\n")
    return path


def lms_late(course: CourseDir, student: str, assignment: str) -> bool:
    path = course.submitted / student / assignment / MARKER
    try:
        return json.loads(path.read_text()).get("late") is True
    except (OSError, ValueError, AttributeError):
        return False


def apply(course: CourseDir, student: str, assignment: str) -> None:
    """nbgrader's ``AssignLatePenalties`` (with the plugin and policy of ``nbgrader_config.py``) on
    each notebook of one submission, on its current points; then the LMS-marked-late case. The
    gradebook's timestamp is brought up to ``timestamp.txt`` first (nbgrader reads it only when it
    autogrades, and an unchanged notebook is not graded again)."""
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.preprocessors import AssignLatePenalties

    from staff.grading.gradebook import nbgrader_steps

    received = read_timestamp(course.submitted / student / assignment)
    with Gradebook(course.db_url) as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            return
        if received is not None and submission.timestamp != received:  # a TA put the real time in since
            submission.timestamp = received
            gb.db.commit()
        names, untimed = [n.name for n in submission.notebooks], submission.timestamp is None
    step = AssignLatePenalties(config=nbgrader_steps.course_config(course))
    for name in names:
        step.preprocess(
            nbformat.v4.new_notebook(),
            {
                "nbgrader": {
                    "notebook": name,
                    "assignment": assignment,
                    "student": student,
                    "db_url": course.db_url,
                }
            },
        )
    if names and untimed and lms_late(course, student, assignment):
        with Gradebook(course.db_url) as gb:
            for notebook in gb.find_submission(assignment, student).notebooks:
                penalty = step.plugin_inst.late_submission_penalty(student, notebook.score, 1.0)
                # nbgrader's own bounds (0 <= penalty <= score), as for a timed submission
                notebook.late_submission_penalty = (
                    None if penalty is None else step._check_late_penalty(notebook, penalty)
                )
            gb.db.commit()


def after_autograde(course: CourseDir, student: str, assignment: str) -> None:
    """What nbgrader's own grading leaves out, right after it: a submission the LMS marked late.
    (nbgrader's ``AssignLatePenalties`` ran in the same save, after the judge's points, and its
    timestamp was just read from ``timestamp.txt``: nothing else to do, and no query when unmarked.)"""
    if lms_late(course, student, assignment):
        apply(course, student, assignment)


class ChargeLatePenalty(Preprocessor):
    """First of nbgrader's feedback steps (``nbgrader_config.py``): the penalty charged on the points
    as they are now (a TA's included), before nbgrader's ``GetGrades`` reads it for the page. An
    nbconvert preprocessor (as the other feedback steps): it takes the exporter's configuration
    (``display_data_priority``) that nbgrader's own base class would warn about on every notebook."""

    enabled = True

    def preprocess(self, nb, resources):
        from nbgrader.coursedir import CourseDirectory

        info = resources["nbgrader"]
        course = CourseDir(Path(CourseDirectory(config=self.config).root), url=info["db_url"])
        apply(course, info["student"], info["assignment"])
        return nb, resources


def refresh(course: CourseDir) -> dict[tuple[str, str], dict[str, str]]:
    """Apply the penalty again to every submission in the gradebook (due dates re-read first), and
    return what ``grades.csv`` shows of it: ``lms_late`` and ``days_late`` per (student, assignment)."""
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gb:
        registered = [a.name for a in gb.assignments]
    write_due_dates(registered, course)
    with Gradebook(course.db_url) as gb:
        submissions = sorted((s.student.id, a.name) for a in gb.assignments for s in a.submissions)
    for student, assignment in submissions:
        apply(course, student, assignment)
    with Gradebook(course.db_url) as gb:  # as apply left them (a timestamp may have been corrected)
        found = {
            (s.student.id, a.name): (s.timestamp is not None and s.duedate is not None, s.total_seconds_late)
            for a in gb.assignments
            for s in a.submissions
        }
    columns = {}
    for (student, assignment), (timed, seconds) in sorted(found.items()):
        marked = lms_late(course, student, assignment)
        days = days_late(seconds) if timed else (1 if marked else None)
        columns[(student, assignment)] = {
            "lms_late": "LATE" if marked else "",
            "days_late": "" if days is None else str(days),
        }
    return columns
