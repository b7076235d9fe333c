"""make collect: an LMS zip into submitted/ with real nbgrader zip_collect; unknown names listed."""
from __future__ import annotations

import zipfile

import nbformat
import pytest

from staff.authoring import collect, samples

pytestmark = pytest.mark.notebooks  # real nbgrader
ASSIGNMENT = "01_attention"


def test_collect_imports_an_lms_zip_and_reports_unknown_names(make_course, tmp_path):
    course = make_course("collect")
    correct = next(s for s in samples.load(ASSIGNMENT) if s.student == "correct_loops")
    notebook = nbformat.writes(samples.fill(correct, course.release))
    names = {"doejane_LATE_12345_67890_01_attention.ipynb": "doejane",
             "smith_4_5_Copy of 01_attention.ipynb": "smith",
             "lee_9_01_attention (1).ipynb": "lee"}
    unknown = ["bob_homework.ipynb", "01_attention.ipynb", "readme.txt"]
    download = tmp_path / "download.zip"
    with zipfile.ZipFile(download, "w") as archive:
        for name in [*names, *unknown]:
            archive.writestr(name, notebook)
    found, unmatched = collect.collect(download, course=course)
    assert sorted(found[ASSIGNMENT]) == sorted(names.values())
    assert sorted(unmatched) == sorted(unknown)
    for student in names.values():
        path = course.submitted / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        assert nbformat.read(path, as_version=4).cells, path
