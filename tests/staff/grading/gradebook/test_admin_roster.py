"""make students ROSTER=...: the rosters a new instructor has at hand (Excel's "CSV UTF-8" with its
byte-order mark, semicolons, an LMS's headers and extra columns, a row with blanks) go into the
gradebook through the real command without a blank ever replacing a name; a roster it cannot take
(no id column, a row without an id, an id twice, no such file) is one line naming what and where,
exit status 2, no traceback and the gradebook untouched."""

from __future__ import annotations

import pytest
from nbgrader.api import Gradebook

from staff.course_dir import CourseDir
from staff.grading.gradebook import admin
from support import scratch_checkout, staff_command

ADA = {"first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.edu"}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A course folder whose gradebook knows one student, with her name and email."""
    root = scratch_checkout(tmp_path_factory.mktemp("roster") / "course")
    with Gradebook(CourseDir(root).db_url) as gb:
        gb.add_student("correct_loops", **ADA)
    return root, (root / "gradebook.db").read_bytes()


@pytest.fixture()
def checkout(pristine):
    """:func:`pristine`'s folder with its gradebook as it was made."""
    root, gradebook = pristine
    (root / "gradebook.db").write_bytes(gradebook)
    return root


def _students(root) -> dict[str, dict[str, str | None]]:
    with Gradebook(CourseDir(root).db_url) as gb:
        return {
            s.id: {"first_name": s.first_name, "last_name": s.last_name, "email": s.email}
            for s in gb.students
        }


def _students_command(root, roster: bytes):
    (root / "roster.csv").write_bytes(roster)
    return staff_command(root, "students", "roster.csv")


def test_a_row_of_blanks_never_replaces_a_name(checkout):
    done = _students_command(checkout, b"id,first_name,last_name,email\ncorrect_loops,,,\n")
    assert done.returncode == 0, done.stderr
    assert _students(checkout) == {"correct_loops": ADA}
    assert "students: 0 new, 1 already in the gradebook; 3 blank field(s) left as they were" in done.stdout


def test_excel_csv_utf8_with_semicolons_an_lms_header_and_extra_columns(checkout):
    roster = (
        "\ufeffStudent ID; First Name ;LAST NAME;E-mail;Section\r\n"
        "correct_loops;Ada;King;ada.king@example.edu;A\r\n"
        "\r\n"
        "partial;Grace;;grace@example.edu;B\r\n"
    ).encode()
    done = _students_command(checkout, roster)
    assert done.returncode == 0, done.stderr
    assert _students(checkout) == {
        "correct_loops": {"first_name": "Ada", "last_name": "King", "email": "ada.king@example.edu"},
        "partial": {"first_name": "Grace", "last_name": None, "email": "grace@example.edu"},
    }
    assert "students: ignored column(s) the gradebook has no place for: Section\n" in done.stdout
    assert "students: 1 new, 1 already in the gradebook" in done.stdout


@pytest.mark.parametrize(
    "roster, says",
    [
        (
            b"name;mail\nAda Lovelace;ada@example.edu\n",
            "students: roster.csv: no column for the student id; found: name, mail; needs: id (or Student ID, "
            "Username, Login ID), and any of first_name, last_name, email",
        ),
        (
            b"id,first_name\n,Ada\ncorrect_loops,Ada\n\npartial,Grace\ncorrect_loops,Augusta\n",
            "students: roster.csv: nothing imported: line 2 has no student id; student id correct_loops twice "
            "(lines 3 and 6)",
        ),
        (
            b"id,first_name,last_name\ncorrect_loops,Lovelace, Ada,Byron\n",
            "students: roster.csv: nothing imported: line 2 has 4 fields, the header 3 (a ',' inside a name "
            "needs quotes)",
        ),
        (b"", "students: roster.csv: empty; needs a header line with id"),
        (
            "id,first_name\ncorrect_loops,Zoë\n".encode("latin-1"),
            'students: roster.csv: not UTF-8 text (byte 30); save it as "CSV UTF-8"',
        ),
    ],
    ids=["no-id-column", "rows-without-or-twice", "unquoted-comma", "empty", "latin-1"],
)
def test_a_roster_it_cannot_take_is_one_line_and_changes_nothing(checkout, roster, says):
    before = (checkout / "gradebook.db").read_bytes()
    done = _students_command(checkout, roster)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(says) and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stdout == ""
    assert (checkout / "gradebook.db").read_bytes() == before


def test_no_such_roster(checkout):
    done = staff_command(checkout, "students", "nowhere.csv")
    assert done.returncode == 2 and done.stderr == (
        "students: nowhere.csv: no such file (a CSV with the columns id,first_name,last_name,email)\n"
    )


def test_headers_are_matched_without_case_spaces_or_punctuation(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("Username,Given Name,Surname,Email Address,ID\ndoejane,Jane,Doe,jd@example.edu,7\n")
    found = admin.read_roster(roster)
    assert found.students == {"7": {"first_name": "Jane", "last_name": "Doe", "email": "jd@example.edu"}}
    assert found.ignored == ["Username"], "`id` itself wins over the other names an LMS gives it"
