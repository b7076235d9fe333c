"""Import an LMS bulk download (a zip of ``.ipynb`` files) into ``submitted/`` with nbgrader's
``zip_collect``.

File names (the pattern TAs and students need to know):
``<student-id>_<anything>_<assignment>.ipynb`` — the student id is everything before the first
``_``, the assignment is one of the course's (``01_attention``, ...) at the end, and whatever the
LMS adds in between is ignored. Canvas's ``doejane_LATE_12345_67890_01_attention.ipynb`` and
Moodle-style ``doejane_12345_assignsubmission_file_01_attention.ipynb`` both work, as do the
decorations Colab and browsers add (``Copy of 01_attention.ipynb``, ``01_attention (1).ipynb``).
A file that matches no assignment is listed, never dropped silently.
"""
from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path

from nbgrader.plugins.zipcollect import FileNameCollectorPlugin

from staff import course_dir, nbgrader_cli


def pattern(assignments: list[str]) -> re.Pattern:
    names = "|".join(re.escape(a) for a in sorted(assignments, key=len, reverse=True))
    return re.compile(rf"^(?P<student_id>[^_/\\]+)_(?:.*?_)??(?:Copy of )?(?P<file_id>{names})"
                      rf"(?: ?\(\d+\))?\.ipynb$")


def match(filename: str, assignments: list[str]) -> dict | None:
    found = pattern(assignments).match(Path(filename).name)
    return found.groupdict() if found else None


class CourseCollector(FileNameCollectorPlugin):
    """nbgrader collector plugin: the course's file-name pattern, for the assignment being
    collected (files of other assignments are collected by their own run)."""

    def collect(self, submitted_file: str) -> dict | None:
        info = match(submitted_file, course_dir.assignments())
        if info and info["file_id"] == self.parent.coursedir.assignment_id:
            return info
        return None


def collect(zip_path: Path, course: course_dir.CourseDir = course_dir.COURSE) -> tuple[dict[str, list[str]], list[str]]:
    """Import every notebook of ``zip_path``; return ({assignment: [students]}, unmatched names)."""
    with zipfile.ZipFile(zip_path) as archive:
        names = [n for n in archive.namelist() if not n.endswith("/")]
    assignments = course_dir.assignments()
    found: dict[str, list[str]] = {}
    unmatched = []
    for name in names:
        info = match(name, assignments)
        if info:
            found.setdefault(info["file_id"], []).append(info["student_id"])
        else:
            unmatched.append(name)
    for assignment in found:
        archive_dir = course.root / "downloaded" / assignment / "archive"
        shutil.rmtree(archive_dir.parent, ignore_errors=True)  # a fresh extraction per import
        archive_dir.mkdir(parents=True)
        shutil.copy2(zip_path, archive_dir / zip_path.name)
        nbgrader_cli.run("zip_collect", assignment, "--force", "--log-level=ERROR",
                         "--ZipCollectApp.collector_plugin=staff.authoring.collect.CourseCollector", course=course)
    return found, unmatched
