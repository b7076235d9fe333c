"""Feedback HTML (real nbgrader generate_feedback on every graded sample) shows hidden tests only
as passed or failed with their points: no hidden source, no expected values."""
from __future__ import annotations

import html as htmllib
import json
import re

import pytest

from staff import course_dir
from staff.authoring import release, samples
from staff.grading import feedback

pytestmark = pytest.mark.notebooks
ASSIGNMENTS = course_dir.assignments()


def test_feedback_shows_hidden_tests_only_as_passed_or_failed(graded_course):
    feedback.feedback(course=graded_course)
    html = sorted(graded_course.feedback.rglob("*.html"))
    assert len(html) == sum(len(samples.load(a)) for a in ASSIGNMENTS)
    for path in html:
        assignment = path.parent.name
        visible = course_dir.release_notebook(assignment).read_text()
        hidden = {line for line in release.secret_lines(assignment, regions="HIDDEN TESTS")
                  if json.dumps(line)[1:-1] not in visible}
        assert hidden
        text = htmllib.unescape(re.sub(r"<[^>]+>", "", path.read_text()))
        student = path.parent.parent.name
        own = "\n".join(c for s in samples.load(assignment) if s.student == student for c in s.cells.values())
        leaked = [line for line in hidden if line in text and line not in own]  # not the student's own code
        assert not leaked, f"hidden test source in {path}: {leaked[:3]}"
        assert "BEGIN HIDDEN TESTS" not in text and "Hidden tests " in text
