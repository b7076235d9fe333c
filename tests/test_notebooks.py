"""The notebooks, end to end with real nbgrader: source passes, release fails only on stubs,
release/ is in sync and leaks nothing, samples get their exact scores, feedback and export work.

These execute notebooks (a few seconds each); the expensive grading runs once per session in
the ``scratch_course`` fixture (tests/conftest.py)."""
from __future__ import annotations

import csv
import html as htmllib
import json
import re

import nbformat
import pytest

from course import fixtures, grading, paths, release, report, samples, validate

pytestmark = pytest.mark.notebooks
ASSIGNMENTS = paths.assignments()


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebook_passes_all_its_tests(assignment):
    assert validate.validate_source(paths.source_notebook(assignment)) == []


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_released_notebook_fails_only_with_not_implemented(assignment):
    assert validate.validate_release(paths.release_notebook(assignment)) == []


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_committed_release_is_in_sync_with_source(scratch_course, assignment):
    fresh = json.loads(paths.release_notebook(assignment, scratch_course.release).read_text())
    committed = json.loads(paths.release_notebook(assignment).read_text())
    assert fresh == committed, f"release/{assignment} is stale: run `make release` and commit it"
    assert sorted(p.name for p in (paths.RELEASE / assignment).iterdir()) == [f"{assignment}.ipynb"]


def _solution_lines(notebook, kinds: str = "SOLUTION|HIDDEN TESTS") -> set[str]:
    """Lines that occur only inside solution / hidden-test regions of the source (a line such as
    an import that also appears in a visible cell is not a secret)."""
    secret, public, inside = set(), set(), False
    for cell in notebook:
        for line in cell.source.splitlines():
            if re.search(r"### (BEGIN|END) (SOLUTION|HIDDEN TESTS)", line):
                inside = "BEGIN" in line and re.search(kinds, line)
            elif len(line.strip()) > 12:
                (secret if inside else public).add(line.strip())
    return secret - public


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_leaks_no_solution_hidden_test_or_fixture(assignment):
    text = paths.release_notebook(assignment).read_text()
    secret = _solution_lines(nbformat.read(paths.source_notebook(assignment), as_version=4).cells)
    assert secret, "expected solution and hidden-test lines in the source"
    leaked = [line for line in secret if line in text]
    assert not leaked, f"solution or hidden-test text in release/: {leaked[:3]}"
    assert "BEGIN HIDDEN" not in text and "BEGIN SOLUTION" not in text and "hidden=True" not in text
    hidden_names = {p.stem for p in (paths.fixtures_dir() / "hidden" / assignment).glob("*")}
    public_names = {p.stem for p in (paths.fixtures_dir() / "public" / assignment).glob("*")}
    for name in hidden_names - public_names:
        assert f'"{name}"' not in text and f"\\\"{name}\\\"" not in text, f"hidden fixture name {name}"


def test_release_folder_holds_no_gradebook_or_hidden_fixture():
    files = [p for p in paths.RELEASE.rglob("*") if p.is_file()]
    assert files and all(p.suffix == ".ipynb" for p in files), files
    hidden = {fixtures.sha256(p) for p in (paths.fixtures_dir() / "hidden").rglob("*.safetensors")}
    assert not [p for p in files if fixtures.sha256(p) in hidden]


@pytest.mark.parametrize("notebook", [paths.source_notebook(a) for a in ASSIGNMENTS]
                         + [paths.release_notebook(a) for a in ASSIGNMENTS], ids=str)
def test_outputs_cleared_and_cell_ids_stable(notebook):
    cells = nbformat.read(notebook, as_version=4).cells
    for cell in cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{notebook}: outputs in {cell.id}"
        assert cell.id == cell.metadata["nbgrader"]["grade_id"], f"{notebook}: cell id {cell.id}"


def test_failed_generation_leaves_release_untouched(scratch_course):
    before = {p: p.read_bytes() for p in scratch_course.release.rglob("*.ipynb")}
    with pytest.raises(RuntimeError, match="nbgrader generate_assignment"):
        release.generate(["no_such_assignment"], course=scratch_course)
    after = {p: p.read_bytes() for p in scratch_course.release.rglob("*.ipynb")}
    assert after == before and before
    assert not list(scratch_course.release.glob(".staging-*"))


@pytest.mark.parametrize("sample", [s for a in ASSIGNMENTS for s in samples.load(a)],
                         ids=lambda s: f"{s.assignment}-{s.student}")
def test_sample_gets_its_exact_expected_score(scratch_course, sample):
    found = {(r.student, r.assignment): r for r in report.rows(course=scratch_course)}
    row = found[(sample.student, sample.assignment)]
    assert row.auto_score == sample.expected_score, f"{sample.student}: {sample.description}"


def test_feedback_shows_hidden_tests_only_as_passed_or_failed(scratch_course):
    grading.feedback(course=scratch_course)
    html = sorted(scratch_course.feedback.rglob("*.html"))
    assert len(html) == sum(len(samples.load(a)) for a in ASSIGNMENTS)
    for path in html:
        assignment = path.parent.name
        visible = paths.release_notebook(assignment).read_text()
        hidden = {line for line in _solution_lines(
            nbformat.read(paths.source_notebook(assignment), as_version=4).cells, kinds="HIDDEN TESTS")
            if json.dumps(line)[1:-1] not in visible}
        assert hidden
        text = htmllib.unescape(re.sub(r"<[^>]+>", "", path.read_text()))
        student = path.parent.parent.name
        own = "\n".join(c for s in samples.load(assignment) if s.student == student for c in s.cells.values())
        leaked = [line for line in hidden if line in text and line not in own]  # not the student's own code
        assert not leaked, f"hidden test source in {path}: {leaked[:3]}"
        assert "BEGIN HIDDEN TESTS" not in text and "Hidden tests " in text


def test_export_lists_every_submission(scratch_course):
    csv_path = grading.export(course=scratch_course)
    with csv_path.open() as f:
        rows = list(csv.DictReader(f))
    scores = {(r["student_id"], r["assignment"]): float(r["raw_score"]) for r in rows}
    for a in ASSIGNMENTS:
        for s in samples.load(a):
            assert (s.student, a) in scores


def test_samples_refuse_unknown_answer_cells(tmp_path):
    path = tmp_path / "typo.py"
    path.write_text("# expected_score: 0\n# %% softmaxx\nx = 1\n")
    sample = samples.parse(path, "01_attention")
    with pytest.raises(KeyError, match="softmaxx"):
        samples.fill(sample)


def test_samples_need_an_expected_score(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("# %% softmax\nx = 1\n")
    with pytest.raises(ValueError, match="expected_score"):
        samples.parse(path, "01_attention")
