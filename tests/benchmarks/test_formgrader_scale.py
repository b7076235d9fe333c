"""benchmarks/formgrader_scale.py's synthetic course, tiny: what nbgrader itself reads from it is a
class whose every submission of every assignment is submitted, autograded (timestamps agree),
named, scored, partly graded by a TA, and has its notebook where the grading page opens it. The
browser half (``measure``) runs in the benchmark; tests/e2e/test_formgrader.py times the same
pages at 300 submissions."""

from __future__ import annotations

from nbgrader.apps.api import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from staff import course_dir
from support import benchmark


def test_the_synthetic_class_is_what_nbgrader_lists(released, tmp_path):
    bench = benchmark("formgrader_scale")
    course = bench.build(tmp_path / "course", students=3, gradebook_from=released.gradebook)
    config = Config()
    config.CourseDirectory.root = str(course.root)
    config.CourseDirectory.db_url = course.db_url
    config.Exchange.root = str(tmp_path / "exchange")
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    students = [bench.student_id(i) for i in range(3)]
    assert sorted(s["id"] for s in api.get_students()) == students
    assert all(s["first_name"] and s["last_name"] for s in api.get_students())
    pending = 0
    for assignment in course_dir.assignments():
        submissions = api.get_submissions(assignment)
        assert [s["student"] for s in submissions] == students
        assert all(
            s["autograded"] and s["submitted"] and s["timestamp"] and s["max_score"] > 0 for s in submissions
        )
        pending += sum(s["needs_manual_grade"] for s in submissions)
        notebooks = api.get_notebook_submissions(assignment, assignment)
        assert len(notebooks) == 3 and all(
            nb["index"] is not None for nb in notebooks
        )  # files in autograded/
    assert 0 < pending < 3 * len(course_dir.assignments())  # some free-text answers wait for a TA, not all
    assert [name for name, _, _ in bench._pages(course)][-1] == "Manage Submissions: 01_attention"
