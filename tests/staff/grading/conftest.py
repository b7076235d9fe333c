"""Submissions of assignment 1 as students damage them, shared by the grading tests."""

from __future__ import annotations

import nbformat
import pytest

from staff.authoring import samples
from staff.course_dir import nbgrader

ASSIGNMENT = "01_attention"


def _delete_tests(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.cells = [c for c in nb.cells if not nbgrader(c).get("grade") or c.cell_type == "markdown"]
    return nb


def _strip_metadata(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """As a copy-paste into a fresh notebook leaves it: no nbgrader metadata, new cell ids."""
    for i, cell in enumerate(nb.cells):
        cell.metadata = {}
        cell.id = f"pasted-{i}"
    return nb


@pytest.fixture(scope="session")
def samples1() -> dict[str, samples.Sample]:
    """Assignment 1's bundled samples by student name."""
    return {s.student: s for s in samples.load(ASSIGNMENT)}


@pytest.fixture(scope="session")
def damaged(samples1):
    """student -> (the correct sample's notebook, damaged; expected status; expected score)."""
    correct = samples1["correct_loops"]
    return {
        "deleted_tests": (_delete_tests(samples.fill(correct)), "repaired", 23.0),
        "stripped_metadata": (_strip_metadata(samples.fill(correct)), "repaired", 23.0),
    }


#: The small gradebook's students: id -> (first name, last name), and what each one did.
SMALL_STUDENTS = {
    "graded": ("Ada", "Lovelace"),  # submitted, autograded, a TA gave the manual points
    "pending": ("Alan", "Turing"),  # submitted, autograded, free-text answer not graded yet
    "resubmitted": ("Grace", "Hopper"),  # autograded, then handed in again (newer timestamp)
    "untimestamped": ("Edsger", "Dijkstra"),  # submitted and autograded with no timestamp anywhere
    "no_folder": ("Barbara", "Liskov"),  # in the gradebook, its autograded folder removed
    "lost_notebook": ("Donald", "Knuth"),  # autograded folder without its notebook
    "submitted_only": ("Frances", "Allen"),  # handed in, never autograded
    "absent": ("John", "Lovelace"),  # never handed anything in (same last name as graded)
    ".hidden": ("Dot", "Files"),  # a folder nbgrader's glob never lists
}
SMALL_ASSIGNMENTS = {"a1": ("nb1",), "a2": ("nb1", "nb2")}


def _small_course(root):
    """A real nbgrader course folder and SQLite gradebook (nbgrader's own API writes it) with every
    kind of submission the formgrader lists, and a student the gradebook does not know
    (``unknown``, submitted only)."""
    import json
    import shutil
    from datetime import datetime, timedelta

    from nbgrader.api import Gradebook

    url = f"sqlite:///{root / 'gradebook.db'}"
    stamp = datetime(2026, 3, 2, 9, 30, 15)

    def folder(step, student, assignment, timestamp=None, notebooks=()):
        path = root / step / student / assignment
        path.mkdir(parents=True, exist_ok=True)
        if timestamp is not None:
            (path / "timestamp.txt").write_text(f"{timestamp:%Y-%m-%d %H:%M:%S.%f} UTC")
        for notebook in notebooks:
            (path / f"{notebook}.ipynb").write_text(
                json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
            )

    with Gradebook(url, "small-course") as gb:
        for number, (assignment, notebooks) in enumerate(SMALL_ASSIGNMENTS.items()):
            gb.add_assignment(assignment, duedate=stamp + timedelta(days=7 * number))
            for notebook in notebooks:
                gb.add_notebook(notebook, assignment)
                gb.add_grade_cell("test", notebook, assignment, max_score=2, cell_type="code")
                gb.add_solution_cell("code", notebook, assignment)
                gb.add_grade_cell("answer", notebook, assignment, max_score=3, cell_type="markdown")
                gb.add_solution_cell("answer", notebook, assignment)
            gb.add_task_cell("task", notebooks[-1], assignment, max_score=1, cell_type="markdown")
        for student, (first, last) in SMALL_STUDENTS.items():
            gb.add_student(student, first_name=first, last_name=last, email=f"{student}@example.edu")
        for number, (assignment, notebooks) in enumerate(SMALL_ASSIGNMENTS.items()):
            when = stamp + timedelta(days=7 * number, hours=1)
            for student in (
                "graded",
                "pending",
                "resubmitted",
                "untimestamped",
                "no_folder",
                "lost_notebook",
            ):
                timestamp = None if student == "untimestamped" else when
                gb.add_submission(assignment, student, timestamp=timestamp)
                folder("submitted", student, assignment, timestamp, notebooks)
                folder(
                    "autograded",
                    student,
                    assignment,
                    timestamp,
                    () if student == "lost_notebook" else notebooks,
                )
                for notebook in notebooks:
                    test = gb.find_grade("test", notebook, assignment, student)
                    test.auto_score, test.needs_manual_grade = (2.0 if student != "pending" else 0.0), False
                    if student == "graded":
                        answer = gb.find_grade("answer", notebook, assignment, student)
                        answer.manual_score, answer.needs_manual_grade = 2.5, False
                gb.db.commit()
            folder("submitted", "resubmitted", assignment, when + timedelta(hours=5), notebooks)
            folder("submitted", "submitted_only", assignment, when, notebooks)
            folder("submitted", "unknown", assignment, when, notebooks)
            folder("submitted", ".hidden", assignment, when, notebooks)
            shutil.rmtree(root / "autograded" / "no_folder" / assignment)


@pytest.fixture(scope="session")
def _small_course_made(tmp_path_factory):
    """Built once (a new nbgrader gradebook runs the ``alembic`` command: ~3 s), copied per test."""
    root = tmp_path_factory.mktemp("small") / "course"
    root.mkdir()
    _small_course(root)
    return root


@pytest.fixture
def small_course(_small_course_made, tmp_path):
    """A copy of the small gradebook and course folder of :func:`_small_course`: its ``url``,
    ``students`` and ``assignments``, and ``api(cls)``, an instance of nbgrader's ``NbGraderAPI``
    (or a subclass) on it, configured as the formgrader's is."""
    import shutil
    from types import SimpleNamespace

    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    root = tmp_path / "course"
    shutil.copytree(_small_course_made, root)
    url = f"sqlite:///{root / 'gradebook.db'}"

    def api(cls):
        config = Config()
        config.CourseDirectory.root = str(root)
        config.CourseDirectory.db_url = url
        config.CourseDirectory.course_id = "small-course"
        config.Exchange.root = str(tmp_path / "exchange")
        (tmp_path / "exchange").mkdir(exist_ok=True)
        return cls(CourseDirectory(config=config), config=config)

    return SimpleNamespace(api=api, url=url, students=list(SMALL_STUDENTS), assignments=SMALL_ASSIGNMENTS)


@pytest.fixture(scope="session")
def save_without_kernel():
    """nbgrader's save of a submission with its sanitized notebook as the "executed" one and no
    judge (no kernel ran: every test cell counts as passed, as nbgrader alone would count it)."""
    from staff.grading.gradebook import nbgrader_steps

    def save(course, student: str, assignment: str = ASSIGNMENT) -> None:
        path = course.submitted / student / assignment / f"{assignment}.ipynb"
        sent = nbgrader_steps.sanitize(course, student, assignment, nbformat.read(path, as_version=4))
        nbgrader_steps.save(
            course, student, assignment, nbgrader_steps.Handoff(sent, nbformat.reads(sent, as_version=4))
        )

    return save
