"""make clean removes only what a command writes again; students' work and grades go only through
make clean-grading-data, which asks on the terminal (the course folder's name, or yes), refuses
without one unless CONFIRM=yes, and says what it deleted. The Makefile runs in a scratch folder."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
from pathlib import Path

import pytest

from course.settings import ROOT

#: What the commands write again (feedback, export, report, publish, solutions, collect's scratch).
REGENERATED = [
    "feedback/doejane/01_attention/01_attention.html",
    "grades.csv",
    "grades-canvas.csv",
    "grades-wide.csv",
    "reports/report.html",
]
REGENERATED += ["publish/README.md", "solutions/01_attention/01_attention.html", "downloaded/01_attention/x"]
#: Students' work and grades: nothing regenerates them.
KEPT = [
    "submitted/doejane/01_attention/01_attention.ipynb",
    "autograded/doejane/01_attention/01_attention.ipynb",
    "autograded/.originals/doejane/01_attention/01_attention.ipynb",
    "autograded/status.jsonl",
    "autograded/regrades.jsonl",
    "gradebook.db",
    "gradebook.db.20270101-000000-000000.bak",
]


@pytest.fixture()
def course(tmp_path) -> Path:
    folder = tmp_path / "mycourse"
    folder.mkdir()
    shutil.copy2(ROOT / "Makefile", folder / "Makefile")
    for name in [*REGENERATED, *KEPT, "autograded/README.md"]:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(name)
    return folder


def _make(folder: Path, *args: str, answer: str | None = None) -> subprocess.CompletedProcess:
    """``make <args>`` in ``folder``; with ``answer``, typed on a terminal (a pseudo-terminal)."""
    if answer is None:
        return subprocess.run(
            ["make", *args], cwd=folder, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60
        )
    leader, follower = pty.openpty()
    try:
        os.write(leader, answer.encode() + b"\n")
        return subprocess.run(
            ["make", *args], cwd=folder, capture_output=True, text=True, stdin=follower, timeout=60
        )
    finally:
        os.close(leader), os.close(follower)


def _left(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} - {"Makefile"}


def test_make_clean_keeps_students_work_and_grades(course):
    done = _make(course, "clean")
    assert done.returncode == 0, done.stderr
    assert _left(course) == {*KEPT, "autograded/README.md"}
    assert (
        "clean: kept students' work and grades: submitted/, autograded/, gradebook.db, 1 backup(s) "
        "(make clean-grading-data deletes them)" in done.stdout
    )


@pytest.mark.parametrize("confirm", [[], ["CONFIRM=no"]])
def test_clean_grading_data_refuses_without_a_terminal(course, confirm):
    before = _left(course)
    done = _make(course, "clean-grading-data", *confirm)
    assert done.returncode == 2
    assert (
        "clean-grading-data: refused, nothing deleted: no terminal to confirm on (run it in a terminal, or with CONFIRM=yes)"
        in done.stderr
    )
    assert _left(course) == before


def test_clean_grading_data_deletes_only_what_the_terminal_confirms(course):
    before = _left(course)
    done = _make(course, "clean-grading-data", answer="yes please")
    assert done.returncode != 0 and "clean-grading-data: not confirmed, nothing deleted" in done.stderr
    assert "Type the course folder's name (mycourse) or yes to delete them:" in done.stdout
    assert "  submitted/   1 student folder(s): the students' work" in done.stdout
    assert _left(course) == before

    done = _make(course, "clean-grading-data", answer="mycourse")
    assert done.returncode == 0, done.stderr
    assert _left(course) == {"autograded/README.md"}
    assert (
        "clean-grading-data: deleted submitted/ (1 student folder(s)), autograded/'s 4 entries, gradebook.db "
        "and 1 backup(s)" in done.stdout
    )


def test_clean_grading_data_with_confirm_yes_for_scripts(course):
    done = _make(course, "clean-grading-data", "CONFIRM=yes")
    assert done.returncode == 0, done.stderr
    assert _left(course) == {"autograded/README.md"}


def test_make_help_says_what_each_deletes(course):
    listed = {line.split()[1]: line for line in _make(course, "help").stdout.splitlines()}
    assert "never submitted/, autograded/, gradebook.db or its backups" in listed["clean"]
    assert "DELETE students' work and grades" in listed["clean-grading-data"]
    assert "submitted/, autograded/, gradebook.db and its backups" in listed["clean-grading-data"]
