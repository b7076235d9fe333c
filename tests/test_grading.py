"""Grading that survives a real class: a batch of bad submissions, each with its exact final
status and score, graded in parallel next to a correct one that must still get full marks.

Runs real nbgrader in a scratch course with short limits (10 s per cell, 120 s per notebook,
3 GiB of memory per grading process)."""
from __future__ import annotations

import copy
import csv
import json
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from course import grading, integrity, paths, release, repair, samples

pytestmark = pytest.mark.notebooks
ASSIGNMENT = "01_attention"
BAD = Path(__file__).parent / "bad_submissions" / ASSIGNMENT
LIMITS = grading.Limits(cell=10, wall=120, memory=3 * 2**30)


def _by_name(name: str) -> samples.Sample:
    return next(s for s in samples.load(ASSIGNMENT) if s.student == name)


def _delete_tests(nb):
    nb.cells = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("grade")
                or c.cell_type == "markdown"]
    return nb


def _strip_metadata(nb):
    """As a copy-paste into a fresh notebook leaves it: no nbgrader metadata, new cell ids."""
    for i, cell in enumerate(nb.cells):
        cell.metadata = {}
        cell.id = f"pasted-{i}"
    return nb


#: student -> (notebook builder, expected status, expected score)
TRANSFORMED = {
    "deleted_tests": (lambda: _delete_tests(samples.fill(_by_name("correct_loops"))), "repaired", 20.0),
    "stripped_metadata": (lambda: _strip_metadata(samples.fill(_by_name("correct_loops"))), "repaired", 20.0),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("grading")
    (root / "source").symlink_to(paths.SOURCE, target_is_directory=True)
    course = paths.CourseDir(root)
    release.generate([ASSIGNMENT], course=course)
    expected = {}
    batch = [_by_name("correct_loops"), _by_name("stub"), _by_name("syntax_error"),
             *samples.load(ASSIGNMENT, BAD)]
    for sample in batch:
        folder = course.submitted / sample.student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(samples.fill(sample, course.release), folder / f"{ASSIGNMENT}.ipynb")
        expected[sample.student] = (sample.expected_status, sample.expected_score)
    for student, (build, status, score) in TRANSFORMED.items():
        folder = course.submitted / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(build(), folder / f"{ASSIGNMENT}.ipynb")
        expected[student] = (status, score)
    corrupt = course.submitted / "corrupt_json" / ASSIGNMENT
    corrupt.mkdir(parents=True)
    text = nbformat.writes(samples.fill(_by_name("correct_loops"), course.release))
    (corrupt / f"{ASSIGNMENT}.ipynb").write_text(text[: len(text) // 2])  # a cut-off download
    expected["corrupt_json"] = ("invalid notebook", 0.0)
    outcomes = grading.autograde([ASSIGNMENT], course=course, jobs=2, limits=LIMITS, progress=False)
    print(grading.summary(outcomes))
    with grading.export(course).open() as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    return course, outcomes, rows, expected


def test_every_submission_gets_its_status_and_exact_score(graded):
    _, outcomes, rows, expected = graded
    assert {o.student for o in outcomes} == set(expected)
    got = {s: (rows[s]["status"], float(rows[s]["raw_score"] or 0)) for s in expected}
    assert got == expected, grading.summary(outcomes)
    assert all(o.reason for o in outcomes if o.status != "graded")


def test_flags_name_what_was_attempted(graded):
    _, outcomes, _, _ = graded
    flags = {o.student: " ".join(o.flags) for o in outcomes}
    assert "replaces np.allclose" in flags["patched_allclose"]
    assert "redefines check_close" in flags["patched_allclose"]
    assert "fixtures or notebook" in flags["reads_hidden_fixture"]
    assert not flags["correct_loops"] and not flags["huge_output"]


def test_rerun_keeps_manual_grades_and_backs_up_the_gradebook(graded):
    course, _, _, _ = graded
    with Gradebook(course.db_url) as gb:
        grade = gb.find_grade("q_scaling", ASSIGNMENT, ASSIGNMENT, "correct_loops")
        grade.manual_score = 1.5
        gb.find_comment("q_scaling", ASSIGNMENT, ASSIGNMENT, "correct_loops").manual_comment = "Good."
        gb.db.commit()
    backups_before = set(course.root.glob("gradebook.db.*.bak"))
    outcome = grading.grade_one(course, "correct_loops", ASSIGNMENT, LIMITS)
    assert outcome.status == "graded"
    with Gradebook(course.db_url) as gb:
        assert gb.find_grade("q_scaling", ASSIGNMENT, ASSIGNMENT, "correct_loops").manual_score == 1.5
        assert gb.find_comment("q_scaling", ASSIGNMENT, ASSIGNMENT, "correct_loops").manual_comment == "Good."
        assert gb.find_submission(ASSIGNMENT, "correct_loops").score == 21.5
    assert backups_before, "autograde backs up the gradebook before writing to it"


def test_repair_restores_deleted_and_stripped_cells():
    released = nbformat.read(paths.release_notebook(ASSIGNMENT), as_version=4)
    graded_ids = {c.metadata["nbgrader"]["grade_id"] for c in released.cells if c.metadata.get("nbgrader")}
    for build in (TRANSFORMED["deleted_tests"][0], TRANSFORMED["stripped_metadata"][0]):
        fixed, notes = repair.repair(build(), released)
        assert notes
        ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in fixed.cells]
        assert set(graded_ids) <= set(ids) and len([i for i in ids if i]) == len(graded_ids)
        order = [i for i in ids if i]
        assert order == [c.metadata["nbgrader"]["grade_id"] for c in released.cells if c.metadata.get("nbgrader")]
    untouched, notes = repair.repair(released, released)
    assert notes == [] and untouched == released


def test_repair_keeps_the_latest_copy_of_a_duplicated_cell():
    nb = samples.fill(_by_name("correct_loops"))
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "softmax")
    duplicate = copy.deepcopy(answer)
    duplicate.id = "copy"
    nb.cells.insert(nb.cells.index(answer) + 1, duplicate)
    fixed, notes = repair.repair(nb, nbformat.read(paths.release_notebook(ASSIGNMENT), as_version=4))
    assert any("duplicate" in n for n in notes)
    assert [c.id for c in fixed.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "softmax"] == ["copy"]


@pytest.mark.parametrize("source, flagged", [
    ("np.allclose = lambda *a, **k: True", True),
    ("setattr(torch, 'allclose', f)", True),
    ("import builtins\nbuiltins.abs = abs", True),
    ("import socket", True),
    ("!pip install something", True),
    ("import json\nnb = json.load(open('01_attention.ipynb'))", True),
    ("def softmax(x, axis=-1):\n    e = np.exp(x - x.max(axis, keepdims=True))\n    return e / e.sum(axis, keepdims=True)", False),
    ("weights = np.zeros((3, 3))\nweights[0] += 1\nwith open('notes.txt', 'w') as f: f.write('hi')", False),
])
def test_integrity_scan(source, flagged):
    assert bool(integrity.scan_source(source)) == flagged


def test_collect_imports_an_lms_zip_and_reports_unknown_names(tmp_path):
    import zipfile

    from course import collect

    root = tmp_path / "course"
    root.mkdir()
    (root / "source").symlink_to(paths.SOURCE, target_is_directory=True)
    course = paths.CourseDir(root)
    release.generate([ASSIGNMENT], course=course)
    notebook = nbformat.writes(samples.fill(_by_name("correct_loops"), course.release))
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


def test_redefining_a_given_helper_is_flagged():
    nb = samples.fill(_by_name("correct_loops"))
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "softmax")
    answer.source += "\n\ndef load_cases(*args, **kwargs):\n    return []\n"
    assert any("redefines load_cases" in flag for flag in integrity.scan(nb))
    assert integrity.scan(samples.fill(_by_name("correct_loops"))) == []
