"""Indexes nbgrader's gradebook lacks: on the foreign keys its queries join a submission's rows by.

nbgrader 0.9.6 declares ``submitted_notebook.assignment_id`` (a submitted notebook's submission),
``grade.notebook_id`` and ``comment.notebook_id`` (a grade's or comment's submitted notebook) as
foreign keys without an index, and neither SQLite nor PostgreSQL indexes a foreign key by itself
(each table's unique constraint starts with the other column: ``(notebook_id, assignment_id)``,
``(cell_id, notebook_id)``). So SQLite can only reach a submission's notebooks, or a notebook's
grades, by scanning the table, and its planner nests those scans inside one another:

- Manage Submissions (``Gradebook.submission_dicts``, one SQL statement) asks, for every submission,
  whether it needs manual grading. Without an index on ``submitted_notebook.assignment_id`` SQLite
  answers it by walking, for each of the gradebook's submissions (every assignment's, not only the
  one listed), every grade that still needs manual grading: the submissions times those grades,
  for one page. With the index it goes from the submission to its notebooks to their grades: the
  same rows, a small part of the time (the figures at 1,000 students x 5 assignments:
  docs/scaling.md).
- A grading page loads its notebook's grades and comments, and every score nbgrader shows is a sum
  over a notebook's grades (``Grade.notebook_id == SubmittedNotebook.id``): a scan of every grade
  of every student each time without an index on ``notebook_id``.

An index changes how the database finds the rows, never which rows a query returns; the tests
compare nbgrader's own answers with and without them (tests/staff/grading/gradebook/test_indexes.py).
It is the change nbgrader itself could make upstream (``index=True`` on these columns and a
migration). :func:`ensure` creates the missing ones (``CREATE INDEX`` only; nothing else in the
gradebook changes, and nbgrader's migrations touch none of these columns): at registration before
grading (:func:`staff.grading.gradebook.admin.register`) and when the formgrader starts, so a gradebook
made before these indexes existed gets them too.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Column, Index, MetaData, Table, create_engine, inspect
from sqlalchemy.engine import make_url

#: (index name, table, column): nbgrader's foreign keys that a submission's rows are found by.
INDEXES = (
    ("ix_submitted_notebook_assignment_id", "submitted_notebook", "assignment_id"),
    ("ix_grade_notebook_id", "grade", "notebook_id"),
    ("ix_comment_notebook_id", "comment", "notebook_id"),
)


def _index(name: str, table: str, column: str) -> Index:
    # A table of its own, not nbgrader's: adding an Index to nbgrader's metadata would change what
    # nbgrader's own create_all() builds in every gradebook this process opens.
    return Index(name, Table(table, MetaData(), Column(column)).c[column])


def ensure(db_url: str) -> list[str]:
    """Create the :data:`INDEXES` a gradebook does not have yet; returns their names. A gradebook
    that does not exist yet (no SQLite file, or no tables) is left alone: nbgrader creates it."""
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite" and url.database and not Path(url.database).is_file():
        return []  # connecting would create an empty file, which nbgrader would then take as a gradebook
    engine = create_engine(db_url)
    try:
        tables = set(inspect(engine).get_table_names())
        created = []
        with engine.begin() as connection:
            for name, table, column in INDEXES:
                if table in tables and not any(
                    i["name"] == name for i in inspect(connection).get_indexes(table)
                ):
                    _index(name, table, column).create(connection)
                    created.append(name)
        return created
    finally:
        engine.dispose()


def drop(db_url: str) -> None:
    """Remove the :data:`INDEXES` again: nbgrader's gradebook as nbgrader alone makes it (the
    benchmark's and the tests' baseline)."""
    engine = create_engine(db_url)
    try:
        with engine.begin() as connection:
            for name, table, column in INDEXES:
                if any(i["name"] == name for i in inspect(connection).get_indexes(table)):
                    _index(name, table, column).drop(connection)
    finally:
        engine.dispose()
