"""Late work with real nbgrader and a real gradebook (no kernel: nbgrader's saving step is given
the sanitized notebook as its "executed" one, so every test cell counts as passed): due dates from
due_dates.toml, timestamps from timestamp.txt, the LMS's LATE marker, the policy of
nbgrader_config.py through nbgrader's late-penalty plugin, and grades.csv."""

from __future__ import annotations

import csv
import re
from datetime import timedelta

import pytest
from nbgrader.api import Gradebook

from staff import calendar
from staff.authoring import samples
from staff.grading.gradebook import admin, late, nbgrader_steps
from staff.grading.results import export

pytestmark = pytest.mark.notebooks  # real nbgrader
ASSIGNMENT = "01_attention"
DAY = timedelta(days=1)


@pytest.fixture(scope="module")
def late_course(make_course, save_without_kernel):
    """The same correct notebook from on_time (a day early), three_days (2 days 1 hour late: three
    started days), marked (the LMS said LATE, gave no time) and untimed (no time, no marker)."""
    course = make_course("late")
    correct = next(s for s in samples.load(ASSIGNMENT) if s.student == "correct_loops")
    due = calendar.due_dates()[ASSIGNMENT]
    for student in ("on_time", "three_days", "marked", "untimed"):
        folder = samples.submit(correct, course, student).parent
        (folder / late.TIMESTAMP).unlink()
        if student == "on_time":
            late.write_timestamp(folder, due - DAY)
        elif student == "three_days":
            late.write_timestamp(folder, due + 2 * DAY + timedelta(hours=1))
        late.write_marker(
            folder,
            f"{student}_{'LATE_' if student == 'marked' else ''}1_2_{ASSIGNMENT}.ipynb",
            late=student == "marked",
        )
    admin.register([ASSIGNMENT], course)
    for student in ("on_time", "three_days", "marked", "untimed"):
        save_without_kernel(course, student)
    return course


def rows(course) -> dict[str, dict]:
    with export.export(course).open() as f:
        return {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == ASSIGNMENT}


def test_the_policy_is_nbgraders_plugin_configured_in_nbgrader_config():
    from nbgrader.preprocessors import AssignLatePenalties

    from staff.course_dir import COURSE

    step = AssignLatePenalties(config=nbgrader_steps.course_config(COURSE))
    step.init_plugin()
    assert isinstance(step.plugin_inst, late.CourseLatePenalty)
    charge = step.plugin_inst.late_submission_penalty
    assert charge("s", 20.0, 1) == 2.0  # one second late: one started day, 10 %
    assert charge("s", 20.0, 3 * 86400) == 6.0  # exactly three days
    assert charge("s", 20.0, 3 * 86400 + 1) == 8.0  # into the fourth
    assert charge("s", 20.0, 40 * 86400) == 10.0  # capped at half


def test_due_dates_need_a_time_zone_and_a_real_assignment(tmp_path):
    path = tmp_path / "due_dates.toml"
    path.write_text('"01_attention" = 2027-01-29T23:59:00+01:00\n')
    assert calendar.due_dates(path)[ASSIGNMENT].isoformat() == "2027-01-29T22:59:00+00:00"
    path.write_text('"01_attention" = 2027-01-29T23:59:00\n')
    with pytest.raises(calendar.DueDatesError, match="time zone"):
        calendar.due_dates(path)
    path.write_text('"01_atention" = 2027-01-29T23:59:00Z\n')
    with pytest.raises(calendar.DueDatesError, match="not an assignment"):
        calendar.due_dates(path)


def test_release_dates_sit_beside_due_dates(tmp_path):
    """due_dates.toml gives an assignment its due date alone, or its release and due dates together."""
    path = tmp_path / "due_dates.toml"
    path.write_text(
        '"01_attention" = { release = 2027-01-15T23:59:00Z, due = 2027-01-29T23:59:00+01:00 }\n'
        '"02_distilbert" = 2027-02-12T23:59:00Z\n'
    )
    assert calendar.due_dates(path)[ASSIGNMENT].isoformat() == "2027-01-29T22:59:00+00:00"
    assert calendar.release_dates(path) == {
        ASSIGNMENT: calendar.moment("2027-01-15T23:59:00Z")
    }  # 02: never published
    assert calendar.released(calendar.moment("2027-01-15"), path) == [ASSIGNMENT]  # a day means the end of it
    assert calendar.released(calendar.moment("2027-01-15T23:58:59Z"), path) == []
    for text, error in [
        ('"01_attention" = { release = 2027-01-30T00:00:00Z, due = 2027-01-29T23:59:00Z }', "after"),
        ('"01_attention" = { released = 2027-01-15T23:59:00Z }', "unknown key"),
        ('"01_attention" = { release = 2027-01-15T23:59:00 }', "time zone"),
    ]:
        path.write_text(text + "\n")
        with pytest.raises(calendar.DueDatesError, match=error):
            calendar.schedule(path)
    with pytest.raises(calendar.DueDatesError, match="time zone"):
        calendar.moment("2027-01-15T23:59:00")


def test_an_assignment_closes_when_the_late_penalty_reaches_its_cap():
    """Closed = due date + the late window, the started days until the penalty stops growing:
    nbgrader_config.py's 10 % a day up to 50 % gives 5 days."""
    assert late.policy().late_window == 5 * DAY
    assert late.CourseLatePenalty(per_day=1.0, cap=1.0).late_window == DAY  # late work scoring zero
    assert late.CourseLatePenalty(per_day=0.3, cap=0.5).late_window == 2 * DAY
    assert late.CourseLatePenalty(per_day=0.0).late_window is None  # no penalty: lateness never ends
    due = calendar.due_dates()
    closing = calendar.closing_dates(late.policy().late_window)
    assert closing[ASSIGNMENT] == due[ASSIGNMENT] + 5 * DAY
    assert ASSIGNMENT in calendar.open_at(
        closing[ASSIGNMENT] - timedelta(seconds=1), late.policy().late_window
    )
    assert ASSIGNMENT not in calendar.open_at(closing[ASSIGNMENT], late.policy().late_window)
    assert calendar.closing_dates(2 * DAY)[ASSIGNMENT] == due[ASSIGNMENT] + 2 * DAY


def test_grades_csv_shows_due_date_timestamp_lateness_and_penalty(late_course):
    found = rows(late_course)
    due = calendar.due_dates()[ASSIGNMENT].strftime("%Y-%m-%d %H:%M:%S UTC")
    assert {found[s]["duedate"] for s in found} == {due}
    on_time, three, marked, untimed = (found[s] for s in ("on_time", "three_days", "marked", "untimed"))
    assert on_time["timestamp"] == (calendar.due_dates()[ASSIGNMENT] - DAY).strftime("%Y-%m-%d %H:%M:%S UTC")
    assert (on_time["days_late"], on_time["lms_late"], float(on_time["late_submission_penalty"])) == (
        "0",
        "",
        0.0,
    )
    raw = float(three["raw_score"])
    assert raw > 0 and three["days_late"] == "3" and three["timestamp"].endswith(" UTC")
    assert float(three["late_submission_penalty"]) == pytest.approx(round(0.3 * raw, 2))
    assert float(three["score"]) == pytest.approx(raw - round(0.3 * raw, 2))
    # The LMS said LATE but gave no time: charged the least a late submission can be, one day.
    assert (marked["timestamp"], marked["lms_late"], marked["days_late"]) == ("", "LATE", "1")
    assert float(marked["late_submission_penalty"]) == pytest.approx(
        round(0.1 * float(marked["raw_score"]), 2)
    )
    assert (untimed["timestamp"], untimed["days_late"], float(untimed["late_submission_penalty"])) == (
        "",
        "",
        0.0,
    )


def test_the_penalty_follows_manual_points_and_a_corrected_timestamp(late_course):
    with Gradebook(late_course.db_url) as gb:
        gb.find_grade("q_scaling", ASSIGNMENT, ASSIGNMENT, "three_days").manual_score = 2.0
        gb.db.commit()
    three = rows(late_course)["three_days"]
    assert float(three["late_submission_penalty"]) == pytest.approx(round(0.3 * float(three["raw_score"]), 2))
    # A TA learns from the LMS that "marked" came in 5 days late: the real time, into timestamp.txt.
    folder = late_course.submitted / "marked" / ASSIGNMENT
    late.write_timestamp(folder, calendar.due_dates()[ASSIGNMENT] + 5 * DAY)
    marked = rows(late_course)["marked"]
    assert marked["days_late"] == "5" and marked["timestamp"]
    assert float(marked["late_submission_penalty"]) == pytest.approx(
        round(0.5 * float(marked["raw_score"]), 2)
    )


def test_feedback_shows_the_penalty_on_the_points_as_they_are_now(late_course):
    """nbgrader's feedback page shows the late penalty; a TA's points given since the last export
    count in it (ChargeLatePenalty runs before nbgrader's GetGrades)."""
    from staff import nbgrader_cli

    with Gradebook(late_course.db_url) as gb:
        gb.find_grade("q_values", ASSIGNMENT, ASSIGNMENT, "three_days").manual_score = 1.0
        gb.db.commit()
        notebook = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, "three_days")
        stale, score = notebook.late_submission_penalty, notebook.score
    expected = round(0.3 * score, 2)
    assert stale != pytest.approx(expected)  # the TA's point is not in the penalty yet
    nbgrader_cli.run(
        "generate_feedback",
        ASSIGNMENT,
        "--force",
        "--log-level=WARN",
        "--student=three_days",
        course=late_course,
    )
    page = (late_course.feedback / "three_days" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    shown = re.search(r"Late submission penalty \(Score: -([\d.]+)\)", page)
    assert shown and float(shown.group(1)) == pytest.approx(expected), shown
