"""The one writer's gradebook session: nbgrader's ``Gradebook`` opened once per batch, and each
submission saved in one transaction of it.

nbgrader opens a new gradebook in each of its steps (a new engine and connection, the schema
inspected, every table checked) and commits after every cell's points and comment, many times each
per submission. Against PostgreSQL that was most of the writer's time per submission
(docs/scaling.md). nbgrader has no seam for either, so for the writer's block only its
``Gradebook.__init__`` and ``close`` are swapped (:func:`one_session`) and its commits become
flushes (:func:`one_transaction`); the classes, schema, queries and objects are nbgrader's own, so
the formgrader, feedback and export read what they always read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from nbgrader.api import Gradebook


@contextmanager
def one_session(db_url: str) -> Iterator[Gradebook]:
    """While open, every ``Gradebook(db_url)`` (nbgrader's preprocessors and converter, the judge's
    points, the late penalty) is nbgrader's own class on one engine and one session, opened here once.

    The schema is checked once; ``close`` leaves the shared session open. The writer is one
    thread; a gradebook another thread opened meanwhile (none does today) would share it too."""
    shared = Gradebook(db_url)  # the one real open: engine, schema, course row
    courses = {shared.course_id}
    opened, closed = Gradebook.__init__, Gradebook.close

    def __init__(self, url, course_id="default_course", authenticator=None):
        if url != db_url:
            return opened(self, url, course_id, authenticator)
        self.engine, self.db, self.course_id, self.authenticator = (
            shared.engine,
            shared.db,
            course_id,
            authenticator,
        )
        self._shared = True
        if course_id not in courses:
            self.check_course(course_id=course_id)
            courses.add(course_id)

    def close(self):
        if not getattr(self, "_shared", False):
            closed(self)

    Gradebook.__init__, Gradebook.close = __init__, close
    _open[db_url] = shared
    try:
        yield shared
    finally:
        del _open[db_url]
        Gradebook.__init__, Gradebook.close = opened, closed
        shared.close()


_open: dict[str, Gradebook] = {}


@contextmanager
def one_transaction(db_url: str) -> Iterator[None]:
    """One submission's save as one transaction of the writer's session: nbgrader's own commits
    inside (after every cell's points and comment: about 25 per submission) only flush, and the
    block commits once at its end, or rolls back when it raises. A submission's grade lands whole
    or not at all; then its status is written (a crash loses no finished grade, and half of one is
    never in the gradebook). Outside :func:`one_session` nbgrader's commits stay as they are."""
    if db_url not in _open:
        yield
        return
    session = _open[db_url].db()  # the Session behind nbgrader's scoped_session
    session.commit = session.flush  # an instance attribute over the method, for this block
    _transactions.add(db_url)
    try:
        yield
    except BaseException:
        del session.commit
        session.rollback()
        raise
    finally:
        _transactions.discard(db_url)
    del session.commit
    session.commit()


_transactions: set[str] = set()


def in_transaction(db_url: str) -> bool:
    """Inside :func:`one_transaction` (rows read in it stay loaded until it commits)."""
    return db_url in _transactions


def session_cache(db_url: str) -> dict | None:
    """A dict that lives as long as the writer's session (None outside one): what is the same for
    every submission of a batch (an assignment's source cells) is read from the gradebook once."""
    return _open[db_url].__dict__.setdefault("_course_cache", {}) if db_url in _open else None


def settle(db_url: str) -> None:
    """End whatever the writer's session has open (reads only, between submissions): a transaction
    left "idle in transaction" while a worker runs holds PostgreSQL's snapshot and connection state
    for minutes; the next submission starts afresh."""
    if db_url in _open:
        _open[db_url].db.rollback()
