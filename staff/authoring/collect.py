"""Import an LMS bulk download (a zip of ``.ipynb`` files) into ``submitted/`` with nbgrader's
``zip_collect``.

File names (the pattern TAs and students need to know):
``<student-id>_<anything>_<assignment>.ipynb`` — the student id is everything before the first
``_``, the assignment is one of the course's (``01_attention``, ...) at the end, and whatever the
LMS adds in between is ignored. Canvas's ``doejane_LATE_12345_67890_01_attention.ipynb`` and
Moodle-style ``doejane_12345_assignsubmission_file_01_attention.ipynb`` both work, as do the
decorations Colab and browsers add (``Copy of 01_attention.ipynb``, ``01_attention (1).ipynb``).
Nothing is dropped silently: every file not imported as it is gets a line naming it (and the
student, when its name has one) and saying why: its name ends in no assignment's (the assignments
are listed, and the closest one suggested: ``bob_01_Attention.ipynb`` -> ``01_attention``), it has
no student id (``Copy of 01_attention.ipynb``), a student handed in two files with no LMS time to
tell the last, or it is no notebook the grader can read (imported all the same: autograde gives it
its status). A zip of which nothing can be imported, or a file that is no zip, is refused (exit
status 2). Students the gradebook does not know yet are named, with the commands to run next.

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
import sys
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

import nbformat
from nbformat.reader import NotJSONError
from nbgrader.plugins.zipcollect import FileNameCollectorPlugin

from staff import course_dir, nbgrader_cli
from staff.grading.gradebook import admin, late
from staff.grading.status import first_line, printable

#: A time the LMS put in the name: date, time (``:`` or ``-`` between its parts), optional zone.
_TIME = r"(\d{4}-\d{2}-\d{2})[T _-](\d{2})[-:](\d{2})[-:](\d{2})(Z|UTC|[+-]\d{2}:?\d{2})?"


def _tail(assignments: list[str]) -> str:
    """The end of a name: an assignment's, with what Colab and browsers add around it."""
    names = "|".join(re.escape(a) for a in sorted(assignments, key=len, reverse=True))
    return rf"(?:Copy of )?(?P<file_id>{names})(?: ?\(\d+\))?\.ipynb$"


def pattern(assignments: list[str]) -> re.Pattern:
    time = re.sub(r"\((?!\?)", "(?:", _TIME)  # the same, without its groups
    return re.compile(
        rf"^(?P<student_id>[^_/\\]+)_(?:(?P<late>(?i:late))_)?(?:(?P<timestamp>{time})_)?"
        rf"(?:.*?_)??{_tail(assignments)}"
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


def _squeezed(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def closest(filename: str, assignments: list[str]) -> str | None:
    """The assignment a name that matches none was meant for, compared without case or punctuation
    (``bob_01_Attention``, ``bob_01-attention``: ``01_attention``), or by its words alone
    (``bob_distilbert``: ``02_distilbert``); None when nothing is close."""
    stem = _squeezed(re.sub(r" ?\(\d+\)$", "", Path(filename).name.rsplit(".", 1)[0]))
    by_length = sorted(assignments, key=len, reverse=True)
    for squeeze in (_squeezed, lambda a: _squeezed(a).lstrip("0123456789")):
        found = next((a for a in by_length if squeeze(a) and stem.endswith(squeeze(a))), None)
        if found:
            return found
    return None


def why_not(filename: str, assignments: list[str]) -> tuple[str, bool]:
    """Why :func:`match` took no assignment from a file's name, as a line naming the file (and its
    student when the name has one), and whether the reason is that the name ends in no assignment's
    (else it names one and lacks something else)."""
    name = Path(filename).name
    shown = f"{printable(name)}: not imported:"
    if not name.lower().endswith(".ipynb"):
        return f"{shown} not a notebook (.ipynb)", True
    found = pattern(assignments).match(name)
    if found:  # matched, but what the LMS put in the name is no time
        return f"{shown} {printable(found['timestamp'])} in its name is no date and time", False
    lone = re.match(rf"^.*?{_tail(assignments)}", name)
    if lone:
        expected = f"<student-id>_..._{lone['file_id']}.ipynb, as the LMS's download names it"
        return f"{shown} no student id in its name (expected {expected})", False
    guess = closest(name, assignments)
    bare = re.sub(r"^Copy of | ?\(\d+\)$", "", name.rsplit(".", 1)[0])
    whole = bool(guess) and _squeezed(bare) in (_squeezed(guess), _squeezed(guess).lstrip("0123456789"))
    if "_" in bare and not whole:
        shown = f"{printable(bare.split('_', 1)[0])}: {shown}"
    return (
        f"{shown} {'no student id, and ' if whole else ''}its name ends in no assignment's name"
        + (f": did you mean {guess}?" if guess else ""),
        True,
    )


def unreadable(data: bytes) -> str | None:
    """Why a handed-in file is no notebook the grader can read (None when it is one): not UTF-8,
    not JSON, or JSON nbformat does not take as a notebook. Never quotes the file."""
    try:
        nbformat.reads(data.decode("utf-8"), as_version=4, capture_validation_error={})
    except UnicodeDecodeError as error:
        return f"not UTF-8 text (byte {error.start})"
    except NotJSONError:
        return "not JSON"
    except Exception as error:  # whatever nbformat's readers raise on JSON that is no notebook
        return f"JSON that nbformat reads as no notebook ({type(error).__name__})"
    return None


@dataclass
class Sorted:
    """A zip's files as :func:`sort` found them."""

    taken: dict[tuple[str, str], str] = field(default_factory=dict)  # (student, assignment) -> its name
    said: dict[tuple[str, str], dict] = field(default_factory=dict)  # what its name said (:func:`match`)
    problems: list[str] = field(default_factory=list)  # one line each, naming the file and the student
    unmatched: list[str] = field(default_factory=list)  # files whose name ends in no assignment's


def sort(archive: zipfile.ZipFile, assignments: list[str]) -> Sorted:
    """Which file of the zip is whose submission: its name (:func:`match`; else :func:`why_not`),
    one file per student and assignment (the newest by the LMS's time, else none: nothing says which
    one counts), and each taken file checked for a notebook (:func:`unreadable`; taken all the
    same, so autograde gives it its status). macOS's ``__MACOSX/`` copies are no files of the LMS."""
    out, files = Sorted(), {}
    for name in archive.namelist():
        if name.endswith("/") or name.startswith("__MACOSX/"):
            continue
        info = match(name, assignments)
        if info:
            files.setdefault((info["student_id"], info["file_id"]), []).append((name, info))
            continue
        reason, no_assignment = why_not(name, assignments)
        out.problems.append(reason)
        if no_assignment:
            out.unmatched.append(name)
    for (student, assignment), found in files.items():
        shown = ", ".join(printable(Path(name).name) for name, _ in found)
        if len(found) > 1 and not all(info["timestamp"] for _, info in found):
            out.problems.append(
                f"{printable(student)}: {shown}: not imported: {len(found)} files for {assignment} and no "
                "time in their names to tell which is the last (leave one in the zip and collect again)"
            )
            continue
        name, info = max(found, key=lambda item: item[1]["timestamp"] or datetime.min)
        if len(found) > 1:
            out.problems.append(
                f"{printable(student)}: {shown}: {len(found)} files for {assignment}: imported the last "
                f"by the LMS's time, {printable(Path(name).name)}"
            )
        try:
            why = unreadable(archive.read(name))
        except (
            zipfile.BadZipFile,
            RuntimeError,
            NotImplementedError,
            OSError,
            EOFError,
            zlib.error,
        ) as error:
            out.problems.append(
                f"{printable(student)}: {printable(Path(name).name)}: not imported: the zip cannot give "
                f"it back ({first_line(error)})"
            )
            continue
        out.taken[student, assignment], out.said[student, assignment] = name, info
        if why:
            out.problems.append(
                f"{printable(student)}: {printable(Path(name).name)}: imported, but it is {why}: "
                f"`make autograde` will mark it invalid notebook (ask {printable(student)} for it again)"
            )
    return out


def _refuse(message: str) -> NoReturn:
    """Bad input: one message on stderr and exit status 2, never a traceback (``SystemExit``)."""
    print(f"collect: {message}", file=sys.stderr)
    raise SystemExit(2)


def collect(
    zip_path: Path, course: course_dir.CourseDir = course_dir.COURSE
) -> tuple[dict[str, list[str]], list[str]]:
    """Import every notebook of ``zip_path``; return ({assignment: [students]}, the names that end in
    no assignment's). Says on stderr, one line each, every file it did not import as it is
    (:func:`sort`), the assignments' names when a file matches none, the students the gradebook does
    not know yet and what to run next. A file that is no zip, or a zip of which nothing could be
    imported, changes nothing: a message and exit status 2 (``SystemExit``)."""
    assignments = course_dir.assignments()
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as error:
        _refuse(f"{printable(zip_path)} is no zip file ({first_line(error)}); nothing imported")
    with archive:
        found = sort(archive, assignments)
        for problem in found.problems:
            print(f"collect: {problem}", file=sys.stderr)
        if found.unmatched:
            print(
                f"collect: the assignments: {', '.join(assignments)} (a notebook's name ends in one: "
                "<student-id>_..._<assignment>.ipynb)",
                file=sys.stderr,
            )
        if not found.taken:
            _refuse(f"nothing imported from {printable(zip_path.name)} (see above)")
        for assignment in sorted({a for _, a in found.taken}):
            archive_dir = course.root / "downloaded" / assignment / "archive"
            shutil.rmtree(archive_dir.parent, ignore_errors=True)  # a fresh extraction per import
            archive_dir.mkdir(parents=True)
            for (_, of), name in found.taken.items():  # only the files taken: nbgrader sees no other
                if of == assignment:
                    (archive_dir / Path(name).name).write_bytes(archive.read(name))
            _zip_collect(assignment, course)
    imported: dict[str, list[str]] = {}
    for (student, assignment), name in found.taken.items():
        folder = course.submitted / student / assignment
        if folder.is_dir():  # zip_collect replaced each folder: the marker goes in after
            late.write_marker(folder, Path(name).name, found.said[student, assignment]["late"])
            imported.setdefault(assignment, []).append(student)
        else:
            print(
                f"collect: {printable(student)}: {printable(Path(name).name)}: nbgrader did not import it",
                file=sys.stderr,
            )
    _next_steps(course, {s for students in imported.values() for s in students})
    return imported, found.unmatched


def _zip_collect(assignment: str, course: course_dir.CourseDir) -> None:
    try:
        nbgrader_cli.run(
            "zip_collect",
            assignment,
            "--force",
            "--log-level=ERROR",
            "--ZipCollectApp.collector_plugin=staff.authoring.collect.CourseCollector",
            course=course,
            quiet=True,
        )
    except RuntimeError as error:  # nbgrader's own failure: its last line says why
        _refuse(f"{assignment}: nbgrader's zip_collect failed: {first_line(str(error).splitlines()[-1])}")


def _next_steps(course: course_dir.CourseDir, students: set[str]) -> None:
    """The students the gradebook does not know yet (names come from the roster), and what next."""
    new = sorted(students - admin.students(course))
    if new:
        shown = ", ".join(printable(s) for s in new[:10]) + (
            f" and {len(new) - 10} more" if len(new) > 10 else ""
        )
        print(
            f"collect: {len(new)} student(s) not in the gradebook yet: {shown}; "
            "`make students ROSTER=roster.csv` adds their names and emails"
        )
    print(
        "collect: next: " + ("`make students ROSTER=roster.csv`, then " if new else "") + "`make autograde`"
    )
