"""An author adds an assignment: ``make new-assignment`` in a scratch copy of the course writes the
places docs/ARCHITECTURE.md's checklist lists, no more, no fewer; then the workflow on it alone
(its diagram, fixtures, release, publish, samples, autograde, feedback), with every sample at its
expected score and status. The copy is graded by this virtualenv, whose editable install is
this checkout's: its kernels and nbgrader must still import the copy's packages (staff/__init__.py,
the sandbox's PYTHONPATH), or the new assignment's fixtures and judge file would not be found."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from course.settings import ROOT
from staff import course_dir
from staff.authoring import assignments, new_assignment
from staff.course_dir import CourseDir
from staff.grading.status import load_status

NAME = "08_layer_norm"
#: What a checkout holds that the workflow reads (the rest: docs, tests, benchmarks).
FOLDERS = ("course", "staff", "source", "fixtures", "samples", "release", "data")


def _copy_course(to: Path) -> Path:
    to.mkdir()
    for name in FOLDERS:
        shutil.copytree(ROOT / name, to / name, ignore=shutil.ignore_patterns("__pycache__"))
    for path in ROOT.iterdir():  # the configuration: due dates, nbgrader's, requirements, Makefile
        if path.is_file() and not path.name.startswith(("gradebook.db", ".")):
            shutil.copy2(path, to / path.name)
    return to


def _staff(copy: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """``python -m staff <args>`` as `make` runs it, from the copy, with none of this process's
    course settings: loading nbgrader_config.py here sets COURSE_FIXTURES to this checkout's
    fixtures, and the copy's commands would then write there."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("COURSE_")}
    done = subprocess.run(
        [sys.executable, "-m", "staff", *args], cwd=copy, env=env, capture_output=True, text=True, timeout=900
    )
    if check:
        assert done.returncode == 0, f"staff {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    return _copy_course(tmp_path_factory.mktemp("new-assignment") / "course")


@pytest.fixture(scope="module")
def scaffolded(copy) -> list[str]:
    """``make new-assignment NAME`` in the copy: the files it says it wrote, relative to the copy."""
    made = _staff(copy, "new-assignment", NAME).stdout
    assert f"wrote source/{NAME}/{NAME}.ipynb" in made and "make fixtures ASSIGNMENT=" in made
    return re.findall(r"^new-assignment: wrote (\S+)$", made, flags=re.MULTILINE)


def checklist() -> list[tuple[list[str], str]]:
    """docs/ARCHITECTURE.md's "A new assignment" list: each item's places (the paths before its
    colon, for ``NAME``) and its text."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    section = text.partition("## A new assignment: the places it touches")[2].partition("\n## ")[0]
    items = re.findall(r"^\d+\. (.*?)(?=^\d+\. |^$)", section, flags=re.MULTILINE | re.DOTALL)
    assert items, "docs/ARCHITECTURE.md lost its checklist of a new assignment's places"
    return [
        ([p.replace("NN_name", NAME) for p in re.findall(r"`([^`]+)`", item.partition("`:")[0] + "`")], item)
        for item in items
    ]


def _within(path: str, place: str) -> bool:
    return path == place or (place.endswith("/") and path.startswith(place))


def test_the_scaffold_writes_exactly_the_places_of_the_checklist(scaffolded):
    places = [place for item_places, _ in checklist() for place in item_places]
    outside = [f for f in scaffolded if not any(_within(f, p) for p in places)]
    assert not outside, f"the scaffold wrote outside docs/ARCHITECTURE.md's checklist: {outside}"
    untouched = [p for p in places if not any(_within(f, p) for f in scaffolded)]
    assert not untouched, (
        f"docs/ARCHITECTURE.md's checklist lists places the scaffold does not write: {untouched}"
    )
    # The assignment's folder holds a module per part, each named in the checklist's item.
    folder = f"staff/authoring/assignments/{NAME}/"
    modules = {f.removeprefix(folder) for f in scaffolded if f.startswith(folder)}
    assert modules == {f"{part}.py" for part in assignments.PARTS}
    (item,) = [text for item_places, text in checklist() if folder in item_places]
    assert modules == set(re.findall(r"`(\w+\.py)`", item)), item


def test_the_template_setup_cell_opens_with_the_course_lines_every_notebook_shares(scaffolded, copy):
    """The template holds no copy of the setup cell's course lines: the scaffold takes them from the
    source notebooks, which must all share them."""
    setup = new_assignment.course_setup()
    assert setup.startswith("import os, subprocess, sys")
    assert setup.splitlines()[-1].startswith(new_assignment.SETUP_ENDS)
    assert "install_missing" not in (assignments.TEMPLATE / "notebook.ipynb").read_text()
    for assignment in course_dir.assignments():
        cell = next(
            c
            for c in nbformat.read(course_dir.source_notebook(assignment), as_version=4).cells
            if c.id == "setup"
        )
        assert setup in cell.source, assignment
    made = nbformat.read(copy / "source" / NAME / f"{NAME}.ipynb", as_version=4)
    assert setup in next(c for c in made.cells if c.id == "setup").source
    assert "{{" not in re.sub(r"\{\{(PUBLIC_REPO|COLAB_URL)\}\}", "", "".join(c.source for c in made.cells))


def test_a_taken_or_malformed_name_is_refused_and_nothing_is_written(copy):
    before = _tree(copy / "source"), (copy / "due_dates.toml").read_text()
    for name, says in (("01_attention", "exists already: source/01_attention"), ("7_Norm", "two digits")):
        done = _staff(copy, "new-assignment", name, check=False)
        assert done.returncode == 1 and says in done.stderr and "nothing written" in done.stderr
    assert (_tree(copy / "source"), (copy / "due_dates.toml").read_text()) == before


def test_a_scaffolded_assignment_goes_through_the_workflow_at_its_expected_scores(copy, scaffolded, tmp_path):
    ours = {name: _tree(ROOT / name) for name in ("fixtures", "source", "samples", "release")}
    fixtures_before = _tree(copy / "fixtures")
    release_before = _tree(copy / "release")
    assert f'"{NAME}" = {{ release = 2027-04-19T23:59:00Z' in (copy / "due_dates.toml").read_text()

    # Its diagram and reading list, from its folder, into the notebook's first cells.
    drawn = _staff(copy, "figure", "--architecture").stdout
    assert f"source/{NAME}: architecture cell embedded" in drawn
    assert (copy / "docs" / "figures" / f"architecture_{NAME}.png").is_file()
    cells = nbformat.read(copy / "source" / NAME / f"{NAME}.ipynb", as_version=4).cells
    assert [c.id for c in cells[:2]] == ["header", "architecture"] and "Layer Normalization" in cells[
        1
    ].source

    # Fixtures of the new assignment alone: no other assignment's tensors or judge file move.
    built = _staff(copy, "fixtures", NAME).stdout
    assert f"fixtures/judge/{NAME}.json: 3 checks in 1 judged cells" in built
    after = _tree(copy / "fixtures")
    changed = {k for k in fixtures_before if after[k] != fixtures_before[k]}
    assert changed <= {"public/MANIFEST.json", "hidden/MANIFEST.json", "judge/outputs.json"}, changed
    assert {k.split("/")[1] for k in set(after) - set(fixtures_before)} == {NAME, f"{NAME}.json"}

    # The release: checked by `validate` (source passes, the stub fails only with NotImplementedError).
    released = _staff(copy, "release", NAME).stdout
    assert f"validate: release {NAME}: OK" in released
    assert _tree(copy / "release") == {**release_before, **_tree(copy / "release")}  # others untouched
    student = nbformat.read(copy / "release" / NAME / f"{NAME}.ipynb", as_version=4)
    text = "\n".join(cell.source for cell in student.cells)
    assert "raise NotImplementedError()" in text and "np.sqrt(variance + eps)" not in text
    assert "HIDDEN TESTS" not in text and "load_cases" in text

    # Published from its release date on, never before; its answers never shipped while it is open.
    _staff(copy, "publish", "--out", str(tmp_path / "before"), "--as-of", "2027-04-18")
    shipped = _staff(copy, "publish", "--out", str(tmp_path / "after"), "--as-of", "2027-04-20").stdout
    assert not (tmp_path / "before" / NAME).exists()
    assert (tmp_path / "after" / NAME / f"{NAME}.ipynb").is_file() and f"{NAME}; not closed yet" in shipped
    assert not (tmp_path / "after" / "fixtures" / "hidden").exists()

    # Its samples graded by the real grader (sandbox, canary, judge) at their promised scores.
    _staff(copy, "samples", NAME)
    graded = _staff(copy, "autograde", NAME)
    assert "canary: the instructor's solution got full marks" in graded.stderr + graded.stdout
    course = CourseDir(copy)
    # as the scaffold's samples promise in their headers (the zero-work one is flagged for a TA)
    expected = {
        "correct": ("graded", 3.0),
        "stub": ("graded", 0.0),
        "normalises_features": ("graded", 0.0),
        "zero_work_tricks": ("flagged", 0.0),
    }
    assert {p.stem for p in (copy / "samples" / NAME).glob("*.py")} == set(expected)
    status = load_status(course)
    with Gradebook(course.db_url) as gb:
        got = {s: (status[(s, NAME)]["status"], gb.find_submission(NAME, s).score) for s in expected}
        pending = gb.find_submission(NAME, "correct").needs_manual_grade
    assert got == expected
    assert pending  # its written answer waits for a TA

    _staff(copy, "feedback", NAME)
    page = (copy / "feedback" / "correct" / NAME / f"{NAME}.html").read_text()
    assert "layer_norm" in page and "BEGIN HIDDEN TESTS" not in page and "BEGIN SOLUTION" not in page
    assert "Not run by the grader" in page  # look_at_rows only teaches: left out of the graded run
    # and nothing of it reached this checkout
    assert {name: _tree(ROOT / name) for name in ours} == ours
    assert (
        not assignments.folder(NAME).exists()
        and not (ROOT / "docs" / "figures" / f"architecture_{NAME}.png").exists()
    )
