"""benchmarks/scale.py (`make bench-scale`), small: 3 students x 5 assignments of synthetic results
through the real writer into a real PostgreSQL gradebook. The grades are right, each submission
costs a bounded number of SQL statements (a regression to nbgrader's gradebook per step, or a query
per cell, multiplies them), and the status log grows by one line per submission."""

from __future__ import annotations

import postgres_server as postgres
import pytest
from nbgrader.api import Gradebook

from staff import course_dir
from staff.grading.status import load_status, status_file
from support import benchmark

pytestmark = pytest.mark.notebooks
STUDENTS = 3
#: SQL statements per submission: 49 measured (nbgrader's own flow sent about 255).
MAX_STATEMENTS = 80


def test_the_writer_grades_synthetic_results_into_postgresql_with_few_statements(tmp_path, capsys):
    scale = benchmark("scale")
    with postgres.temporary_server("scale") as url:
        made = scale.course(tmp_path / "course", STUDENTS, url)
        found = scale.write_all(made, STUDENTS, progress=False)
        with Gradebook(url) as gb:
            scores = {
                (s.student.id, a): (s.code_score, s.max_code_score)
                for a in course_dir.assignments()
                for s in gb.assignment_submissions(a)
            }
    with capsys.disabled():
        scale.report(found)
    n = STUDENTS * len(course_dir.assignments())
    assert found["n"] == n and found["statuses"] == ["graded"]
    assert len(scores) == n
    for (student, assignment), (score, most) in scores.items():
        if student == "student0000":  # every record right: full automatic points
            assert score == most > 0, (assignment, score, most)
        assert 0 <= score <= most
    assert any(score < most for score, most in scores.values()), "no wrong record cost a point"
    assert found["statements"] / n <= MAX_STATEMENTS, found["statements"] / n
    assert len(status_file(made).read_text().splitlines()) == n
    assert len(load_status(made)) == n
