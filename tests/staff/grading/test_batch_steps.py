"""The batch's named steps, each on its own (staff/grading/autograde.py): prepare yields what is to be
sent and records the rest, Record logs each outcome at once, report says what was kept."""

from __future__ import annotations

from staff.course_dir import CourseDir
from staff.grading import autograde
from staff.grading.status import Outcome, load_status


def test_prepare_sends_what_changed_and_records_the_rest(tmp_path, monkeypatch, capsys):
    course = CourseDir(tmp_path)
    made = {
        "broken": Outcome("broken", "a1", "invalid notebook", "not JSON", 0.0),
        "same": autograde.Ready("same", "a1", None, "d1", [], [], 0.1),
        "new": autograde.Ready("new", "a1", None, "d2", [], [], 0.1),
    }
    monkeypatch.setattr(autograde, "ready", lambda course, student, assignment, limits, batch: made[student])
    previous = {("same", "a1"): {**Outcome("same", "a1", "graded", "", 3.0, digest="d1").__dict__}}
    record = autograde.Record(course, 3, show=False)
    todo = [("broken", "a1"), ("same", "a1"), ("new", "a1")]
    sent = list(autograde.prepare(course, todo, None, None, previous, record))
    assert [item.student for item in sent] == ["new"]
    assert [o.student for o in record.outcomes] == ["broken", "same"] and [
        o.student for o in record.kept
    ] == ["same"]
    # written at once: the invalid one; the unchanged one's entry stands as it was (not rewritten)
    assert set(load_status(course)) == {("broken", "a1")}
    assert [o.student for o in autograde.report(record)] == ["broken", "same"]
    assert "1 submission(s) unchanged since their last grade, kept" in capsys.readouterr().out
