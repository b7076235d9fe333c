"""Grading that survives a real class: a batch of bad submissions, each with its exact final
status and score, graded in parallel next to a correct one that must still get full marks.

Runs real nbgrader in a scratch course with short limits (10 s per cell, 60 s per notebook,
3 GiB of memory per grading process)."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from course.settings import ROOT
from staff.authoring import samples
from staff.grading import autograde
from staff.grading.results import export, report
from staff.grading.status import summary

# One worker grades the batch once for every test here (module fixture; `--dist loadgroup`).
pytestmark = [pytest.mark.notebooks, pytest.mark.xdist_group("bad_submissions")]
ASSIGNMENT = "01_attention"
BAD = Path(__file__).parent / "bad_submissions" / ASSIGNMENT
LIMITS = autograde.Limits(cell=10, wall=60, memory=3 * 2**30)


@pytest.fixture(scope="module")
def graded(make_course, damaged, samples1):
    course = make_course("bad-submissions")
    expected = {}
    batch = [
        samples1["correct_loops"],
        samples1["stub"],
        samples1["syntax_error"],
        *samples.load(ASSIGNMENT, BAD),
    ]
    for sample in batch:
        samples.submit(sample, course)
        expected[sample.student] = (sample.expected_status, sample.expected_score)
    for student, (notebook, status, score) in damaged.items():
        folder = course.submitted / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{ASSIGNMENT}.ipynb")
        expected[student] = (status, score)
    corrupt = course.submitted / "corrupt_json" / ASSIGNMENT
    corrupt.mkdir(parents=True)
    text = nbformat.writes(samples.fill(samples1["correct_loops"], course.release))
    (corrupt / f"{ASSIGNMENT}.ipynb").write_text(text[: len(text) // 2])  # a cut-off download
    expected["corrupt_json"] = ("invalid notebook", 0.0)
    before = tree_hashes(course.root)
    outcomes = autograde.autograde([ASSIGNMENT], course=course, jobs=2, limits=LIMITS, progress=False)
    print(summary(outcomes))
    trees = before, tree_hashes(course.root)
    with export.export(course).open() as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == ASSIGNMENT}
    # the gradebook's automatic points: a flagged submission's export leaves its score blank (held)
    for r in report.rows([ASSIGNMENT], course):
        rows[r.student]["auto"] = r.auto_score
    return course, outcomes, rows, expected, trees


#: What grading may write: nbgrader's own outputs and the gradebook (and its backups).
GRADING_OUTPUTS = ("submitted", "autograded", "feedback", "gradebook.db")


def tree_hashes(course_root: Path) -> dict[str, str]:
    """SHA-256 of every file of the scratch course outside grading's outputs, and of the repository's
    own course files (the kernels ran next to them)."""
    found = {}
    for root, top in (
        (course_root, None),
        (ROOT, ("course", "data", "fixtures", "source", "release", "staff", "samples")),
    ):
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if not path.is_file() or "__pycache__" in rel.parts or ".pytest_cache" in rel.parts:
                continue
            if root == course_root and rel.parts[0].startswith(GRADING_OUTPUTS):
                continue
            if top is not None and rel.parts[0] not in top:
                continue
            found[f"{root.name}/{rel}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def test_every_submission_gets_its_status_and_exact_score(graded):
    _, outcomes, rows, expected, _ = graded
    assert {o.student for o in outcomes} == set(expected)
    got = {s: (rows[s]["status"], float(rows[s].get("auto", 0))) for s in expected}
    assert got == expected, summary(outcomes)
    assert all(o.reason for o in outcomes if o.status != "graded")


def test_tampering_earns_no_more_than_its_trick_free_twin(graded):
    _, _, rows, _, _ = graded
    twin = rows["wrong_softmax"]["auto"]
    for trick in ("tampers_at_run_time", "swallows_errors", "forges_records"):
        assert rows[trick].get("auto", 0) <= twin, trick
        assert rows[trick]["raw_score"] == "" and rows[trick]["review"].startswith("held"), "flagged: held"
    assert rows["correct_loops"]["auto"] == 23.0  # same batch, full marks


def test_grading_leaves_the_course_tree_byte_identical(graded):
    before, after = graded[4]
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, changed[:20]


def test_flags_name_what_was_attempted(graded):
    _, outcomes, _, _, _ = graded
    flags = {o.student: " ".join(o.flags) for o in outcomes}
    assert "replaces np.allclose" in flags["patched_allclose"]
    assert "redefines check_close" in flags["patched_allclose"]
    assert "fixtures or notebook" in flags["reads_hidden_fixture"]
    assert not flags["correct_loops"] and not flags["huge_output"]


def test_rerun_keeps_manual_grades_and_backs_up_the_gradebook(graded):
    course, _, _, _, _ = graded
    with Gradebook(course.db_url) as gb:
        grade = gb.find_grade("q_scaling", ASSIGNMENT, ASSIGNMENT, "correct_loops")
        grade.manual_score = 1.5
        gb.find_comment("q_scaling", ASSIGNMENT, ASSIGNMENT, "correct_loops").manual_comment = "Good."
        gb.db.commit()
    backups_before = set(course.root.glob("gradebook.db.*.bak"))
    outcome = autograde.grade_one(course, "correct_loops", ASSIGNMENT, LIMITS)
    assert outcome.status == "graded"
    with Gradebook(course.db_url) as gb:
        assert gb.find_grade("q_scaling", ASSIGNMENT, ASSIGNMENT, "correct_loops").manual_score == 1.5
        assert gb.find_comment("q_scaling", ASSIGNMENT, ASSIGNMENT, "correct_loops").manual_comment == "Good."
        assert gb.find_submission(ASSIGNMENT, "correct_loops").score == 24.5
    assert backups_before, "autograde backs up the gradebook before writing to it"
