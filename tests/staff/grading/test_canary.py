"""The preflight canary: a grading set-up that cannot give the instructor's solution full marks
grades nobody, and says why (instead of grading every student wrong in the same way)."""

from __future__ import annotations

import shutil

import pytest
from nbgrader.api import Gradebook, MissingEntry
from safetensors.numpy import load_file, save_file

from course.settings import ROOT
from staff.grading import autograde, canary

pytestmark = [pytest.mark.notebooks]
ASSIGNMENT = "01_attention"
LIMITS = autograde.Limits(cell=60, wall=300, memory=3 * 2**30)


def test_a_set_up_that_fails_the_solution_grades_nobody(make_course, samples1, tmp_path, monkeypatch):
    """One hidden expected value moved past its tolerance, as a fixture built wrong (or a CPU far
    from the one that built it) would: the solution loses that cell, so no student is graded."""
    broken = tmp_path / "fixtures"
    shutil.copytree(ROOT / "fixtures", broken)
    path = broken / "hidden" / ASSIGNMENT / "softmax.safetensors"
    arrays = load_file(str(path))
    arrays["0.expected"] = arrays["0.expected"] + 1e-3
    save_file(arrays, str(path))
    monkeypatch.setenv("COURSE_FIXTURES", str(broken))
    course = make_course("canary")
    from staff.authoring import samples

    students = ("correct_loops", "stub", "partial")
    for student in students:
        samples.submit(samples1[student], course)
    # Two workers: the students' submissions execute beside the canary, and are discarded with it.
    with pytest.raises(
        canary.CanaryFailed,
        match=r"01_attention on .*test_softmax_hidden: .*values out of tolerance"
        r".*\(\d submission\(s\) executed beside the canary were discarded",
    ):
        autograde.autograde([ASSIGNMENT], course=course, jobs=2, limits=LIMITS, progress=False)
    with Gradebook(course.db_url) as gb:
        for student in students:
            with pytest.raises(MissingEntry):
                gb.find_submission(ASSIGNMENT, student)
    assert not any((course.autograded / student).exists() for student in students)
    assert not autograde.load_status(course)
