"""The course's calendar, ``due_dates.toml``: when each assignment is released and due, and when it
closes (its due date plus the late window the late policy gives it).

The one place an instructor sets the dates, each with its time zone; read by ``make publish`` (what
is released, and nothing that gives away an answer of an assignment still open), the gradebook's due
dates and the late penalty (:mod:`staff.grading.gradebook.late`), ``make samples`` and ``make
new-assignment``. Reading it never touches the gradebook.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

from course.paths import ROOT

#: The instructor's due dates (see the file's own header).
DUE_DATES = ROOT / "due_dates.toml"


class DueDatesError(ValueError):
    pass


@dataclass(frozen=True)
class Dates:
    """One assignment's line of ``due_dates.toml`` (aware, UTC; None where the file gives none)."""

    release: datetime | None = None
    due: datetime | None = None


#: The keys of an assignment's table in ``due_dates.toml``.
DATE_KEYS = ("release", "due")


def _when(path: Path, where: str, when) -> datetime:
    if not isinstance(when, datetime) or when.tzinfo is None:
        raise DueDatesError(
            f"{path.name}: {where} = {when}: give a date and time with its time zone, "
            f"e.g. 2027-01-29T23:59:00Z (UTC) or 2027-01-29T23:59:00+01:00"
        )
    return when.astimezone(UTC)


def schedule(path: Path = DUE_DATES) -> dict[str, Dates]:
    """assignment -> its release and due dates. An assignment's value is its due date alone
    (``"01_attention" = 2027-01-29T23:59:00Z``) or a table of both (``{ release = ..., due = ... }``).
    A date without a time zone, an assignment the course does not have (a typo would silently leave
    the real one without a deadline), an unknown key or a release after the due date is refused."""
    from staff import course_dir

    if not path.is_file():
        return {}
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise DueDatesError(f"{path.name}: {error}") from None
    known = set(course_dir.assignments())
    found = {}
    for assignment, value in raw.items():
        if assignment not in known:
            raise DueDatesError(
                f"{path.name}: {assignment!r} is not an assignment of the course ({', '.join(sorted(known))})"
            )
        if not isinstance(value, dict):
            value = {"due": value}
        unknown = sorted(set(value) - set(DATE_KEYS))
        if unknown:
            raise DueDatesError(
                f"{path.name}: {assignment}: unknown key(s) {', '.join(unknown)} (an assignment has "
                f"{' and '.join(DATE_KEYS)})"
            )
        dates = Dates(**{key: _when(path, f"{assignment}.{key}", when) for key, when in value.items()})
        if dates.release and dates.due and dates.release > dates.due:
            raise DueDatesError(
                f"{path.name}: {assignment}: released ({dates.release:%Y-%m-%d %H:%M} UTC) after "
                f"its due date ({dates.due:%Y-%m-%d %H:%M} UTC)"
            )
        found[assignment] = dates
    return found


def due_dates(path: Path = DUE_DATES) -> dict[str, datetime]:
    """assignment -> due date (aware, UTC), for the assignments that have one (see :func:`schedule`)."""
    return {a: d.due for a, d in schedule(path).items() if d.due is not None}


def release_dates(path: Path = DUE_DATES) -> dict[str, datetime]:
    """assignment -> release date (aware, UTC): from then on ``make publish`` ships it. An
    assignment without one is never published (a missing line must not give a notebook away)."""
    return {a: d.release for a, d in schedule(path).items() if d.release is not None}


def moment(as_of: str | date | datetime | None = None) -> datetime:
    """The moment a publication is "as of", aware, UTC: now by default; a date (``2027-02-11``)
    is the end of that day in UTC (everything released that day is released by then); a date and
    time needs its time zone."""
    if as_of is None:
        return datetime.now(UTC)
    if isinstance(as_of, str):
        try:
            as_of = date.fromisoformat(as_of) if len(as_of) == 10 else datetime.fromisoformat(as_of)
        except ValueError:
            raise DueDatesError(
                f"as of {as_of!r}: give a date (2027-02-11) or a date and time with its time zone "
                f"(2027-02-11T09:00:00Z)"
            ) from None
    if not isinstance(as_of, datetime):
        return datetime.combine(as_of, time.max, tzinfo=UTC)
    if as_of.tzinfo is None:
        raise DueDatesError(f"as of {as_of.isoformat()}: give its time zone (Z for UTC)")
    return as_of.astimezone(UTC)


def released(when: datetime, path: Path = DUE_DATES) -> list[str]:
    """The assignments released by ``when`` (aware), in course order."""
    from staff import course_dir

    dates = release_dates(path)
    return [a for a in course_dir.assignments() if a in dates and dates[a] <= when]


def closing_dates(window: timedelta | None, path: Path = DUE_DATES) -> dict[str, datetime | None]:
    """assignment -> when it closes: its due date plus the late window (the late policy's,
    ``staff.grading.gradebook.late.policy().late_window``). None: it never closes (no due date, or
    no window: a policy with no penalty), so nothing that gives its answers away may ever be published."""
    dates = due_dates(path)
    return {a: dates[a] + window if a in dates and window is not None else None for a in schedule(path)}


def open_at(when: datetime, window: timedelta | None, path: Path = DUE_DATES) -> list[str]:
    """The assignments not closed at ``when`` (aware), in course order: none of their answers may
    be in a bundle published then (every assignment of the course that the file does not close)."""
    from staff import course_dir

    closing = closing_dates(window, path)
    return [a for a in course_dir.assignments() if closing.get(a) is None or when < closing[a]]
