"""Import an LMS bulk download (a zip of ``.ipynb`` files) into ``submitted/`` with nbgrader's
``zip_collect``.

File names (the pattern TAs and students need to know):
``<student-id>_<anything>_<assignment>.ipynb`` — the student id is everything before the first
``_``, the assignment is one of the course's (``01_attention``, ...) at the end, and whatever the
LMS adds in between is ignored. Canvas's ``doejane_LATE_12345_67890_01_attention.ipynb`` and
Moodle-style ``doejane_12345_assignsubmission_file_01_attention.ipynb`` both work, as do the
decorations Colab and browsers add (``Copy of 01_attention.ipynb``, ``01_attention (1).ipynb``).
A file that matches no assignment is listed, never dropped silently.

What the LMS says about the submission is kept, in the LMS's own place right after the student id
(the student names only the end of the file, so nothing they type can reach it): Canvas's
``LATE`` marker goes into ``lms.json`` beside the notebook (with the LMS's file name), and a time
such as ``doejane_2027-01-30T10-15-00Z_...`` or ``doejane_LATE_2027-01-30 10:15:00+01:00_...``
(no zone: UTC) becomes nbgrader's ``timestamp.txt``, from which it computes how late the work
was; :mod:`staff.grading.gradebook.late` charges the penalty.
"""

from __future__ import annotations

import re
import shutil
import zipfile
from datetime import UTC, datetime
from pathlib import Path

from nbgrader.plugins.zipcollect import FileNameCollectorPlugin

from staff import course_dir, nbgrader_cli
from staff.grading.gradebook import late

#: A time the LMS put in the name: date, time (``:`` or ``-`` between its parts), optional zone.
_TIME = r"(\d{4}-\d{2}-\d{2})[T _-](\d{2})[-:](\d{2})[-:](\d{2})(Z|UTC|[+-]\d{2}:?\d{2})?"


def pattern(assignments: list[str]) -> re.Pattern:
    names = "|".join(re.escape(a) for a in sorted(assignments, key=len, reverse=True))
    time = re.sub(r"\((?!\?)", "(?:", _TIME)  # the same, without its groups
    return re.compile(
        rf"^(?P<student_id>[^_/\\]+)_(?:(?P<late>(?i:late))_)?(?:(?P<timestamp>{time})_)?"
        rf"(?:.*?_)??(?:Copy of )?(?P<file_id>{names})(?: ?\(\d+\))?\.ipynb$"
    )


def received(text: str) -> datetime:
    """The LMS's time in UTC (naive, as nbgrader keeps it); a time without a zone is read as UTC."""
    date, hours, minutes, seconds, zone = re.fullmatch(_TIME, text).groups()
    zone = "+00:00" if zone in (None, "Z", "UTC") else zone
    when = datetime.fromisoformat(f"{date}T{hours}:{minutes}:{seconds}{zone}")
    return when.astimezone(UTC).replace(tzinfo=None)


def match(filename: str, assignments: list[str]) -> dict | None:
    """``student_id``, ``file_id`` (the assignment), ``late`` (bool) and ``timestamp`` (or None)."""
    found = pattern(assignments).match(Path(filename).name)
    if not found:
        return None
    info = found.groupdict()
    info["late"] = bool(info["late"])
    try:
        info["timestamp"] = received(info["timestamp"]) if info["timestamp"] else None
    except ValueError:  # no such date or time (2027-02-30): listed as unmatched, never guessed
        return None
    return info


class CourseCollector(FileNameCollectorPlugin):
    """nbgrader collector plugin: the course's file-name pattern, for the assignment being
    collected (files of other assignments are collected by their own run)."""

    def collect(self, submitted_file: str) -> dict | None:
        info = match(submitted_file, course_dir.assignments())
        if info and info["file_id"] == self.parent.coursedir.assignment_id:
            # nbgrader writes timestamp.txt from "timestamp" when there is one
            return {
                "student_id": info["student_id"],
                "file_id": info["file_id"],
                **({"timestamp": info["timestamp"]} if info["timestamp"] else {}),
            }
        return None


def collect(
    zip_path: Path, course: course_dir.CourseDir = course_dir.COURSE
) -> tuple[dict[str, list[str]], list[str]]:
    """Import every notebook of ``zip_path``; return ({assignment: [students]}, unmatched names)."""
    with zipfile.ZipFile(zip_path) as archive:
        names = [n for n in archive.namelist() if not n.endswith("/")]
    assignments = course_dir.assignments()
    found: dict[str, list[str]] = {}
    said: dict[tuple[str, str], tuple[str, bool]] = {}  # what the LMS's name said: (its name, LATE?)
    unmatched = []
    for name in names:
        info = match(name, assignments)
        if info:
            found.setdefault(info["file_id"], []).append(info["student_id"])
            said[info["student_id"], info["file_id"]] = Path(name).name, info["late"]
        else:
            unmatched.append(name)
    for assignment in found:
        archive_dir = course.root / "downloaded" / assignment / "archive"
        shutil.rmtree(archive_dir.parent, ignore_errors=True)  # a fresh extraction per import
        archive_dir.mkdir(parents=True)
        shutil.copy2(zip_path, archive_dir / zip_path.name)
        nbgrader_cli.run(
            "zip_collect",
            assignment,
            "--force",
            "--log-level=ERROR",
            "--ZipCollectApp.collector_plugin=staff.authoring.collect.CourseCollector",
            course=course,
        )
        for student in found[assignment]:  # zip_collect replaced each folder: the marker goes in after
            folder = course.submitted / student / assignment
            if folder.is_dir():
                late.write_marker(folder, *said[student, assignment])
    return found, unmatched
