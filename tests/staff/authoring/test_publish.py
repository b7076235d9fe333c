"""The student bundle.

``make publish`` builds a bundle with nothing secret in it (scanned here, file by file), and the
released notebooks point at the public repository. (The Colab round trip is tests/e2e/test_colab.py.)
On the course's schedule (``due_dates.toml``), the bundle published at every release date, and just
before it, ships exactly the assignments released by then, and no line of the solution or hidden
tests of an assignment that has not closed (its due date plus the late window). No notebook runs:
each bundle is copied and read (about 1 s each).
"""

from __future__ import annotations

import ast
import json
import re
from datetime import timedelta
from pathlib import Path

import nbformat
import pytest

from course import fixtures, paths, settings
from staff import calendar, course_dir
from staff.authoring import publish, release
from staff.grading.gradebook import late

ASSIGNMENTS = course_dir.assignments()
RELEASES = calendar.release_dates()
#: Every release date, and a second before it (the bundle then, and the assignments open then).
MOMENTS = sorted({when for r in RELEASES.values() for when in (r, r - timedelta(seconds=1))})


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return publish.build(tmp_path_factory.mktemp("publish") / "bundle")


def _secret_lines() -> set[str]:
    released = "".join(course_dir.release_notebook(a).read_text() for a in ASSIGNMENTS)
    return {
        line
        for a in ASSIGNMENTS
        for line in publish.secret_lines(a)
        if json.dumps(line)[1:-1] not in released
    }


def test_bundle_holds_only_student_files(bundle):
    top = sorted(p.name for p in bundle.iterdir())
    assert top == sorted(
        [
            *ASSIGNMENTS,
            "README.md",
            ".gitignore",
            "course",
            "data",
            "fixtures",
            "requirements.txt",
            "requirements-nodeps.txt",
        ]
    )
    assert sorted(p.name for p in (bundle / "fixtures").iterdir()) == ["public"]
    shipped = {p.relative_to(bundle / "course") for p in (bundle / "course").rglob("*") if p.is_file()}
    package = {
        p.relative_to(paths.ROOT / "course")
        for p in (paths.ROOT / "course").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert shipped == package, "the student package ships whole, nothing else"
    assert fixtures.verify_tree(bundle / "fixtures" / "public") == []


def test_bundle_leaks_nothing(bundle):
    hidden_files = list((paths.fixtures_dir() / "hidden").rglob("*.safetensors"))
    hidden_hashes = {fixtures.sha256(p) for p in hidden_files}
    public_names = {p.name for p in (paths.fixtures_dir() / "public").rglob("*.safetensors")}
    hidden_only = {f"{p.parent.name}/{p.name}" for p in hidden_files if p.name not in public_names}
    secret = _secret_lines()
    assert hidden_only and secret
    for path in (p for p in bundle.rglob("*") if p.is_file()):
        data = path.read_bytes()
        assert fixtures.sha256(path) not in hidden_hashes, f"hidden fixture bytes in {path}"
        assert not data.startswith(b"SQLite format"), f"a database in the bundle: {path}"
        text = data.decode("utf-8", errors="ignore")
        for marker in (
            "BEGIN SOLUTION",
            "END SOLUTION",
            "BEGIN HIDDEN TESTS",
            "hidden=True",
            "CREATE TABLE",
            "source_cell",
            "grade_cell",
        ):
            assert marker not in text, f"{marker!r} in {path}"
        for name in hidden_only:
            assert name not in text, f"hidden fixture {name} named in {path}"
        leaked = [line for line in secret if line in text or json.dumps(line)[1:-1] in text]
        assert not leaked, f"solution or hidden-test text in {path}: {leaked[:2]}"


def test_badges_and_setup_point_at_the_public_repository():
    for assignment in ASSIGNMENTS:
        text = course_dir.release_notebook(assignment).read_text()
        assert release.colab_url(assignment) in text
        assert settings.PUBLIC_REPO in text and "{{" not in text
        assert release.colab_url(assignment).startswith("https://colab.research.google.com/github/")


def test_bundle_leaves_out_the_held_out_text(bundle):
    """Assignment 5's model is scored on dictionary entries students never get (W-Z), assignment 4's
    fine-tuned model on review sentences that are in neither shipped split."""
    from staff.authoring import assignments

    heldout = assignments.recipe("05_decoder").HELDOUT.read_text().splitlines()
    lines = [line.strip() for line in heldout if len(line.strip()) > 30]
    reviews = [
        line.split("\t")[0]
        for line in assignments.recipe("04_finetuning").HELDOUT.read_text().splitlines()[1:]
    ]
    shipped = "\n".join(
        p.read_text(errors="ignore")
        for p in bundle.rglob("*")
        if p.is_file() and p.suffix in (".txt", ".md", ".py", ".ipynb", ".json", ".tsv")
    )
    assert len(lines) > 200 and (bundle / "data" / "lm" / "devils_dictionary.txt").is_file()
    assert len(reviews) == 128 and (bundle / "data" / "sentiment" / "validation.tsv").is_file()
    assert not [line for line in lines + reviews if line in shipped]


# ---- the schedule: what ships when, and no answer before its assignment closes -------------------


def _without_comment(line: str) -> str:
    """A line of the notebooks' code without its comment (they start two spaces after the code)."""
    code = line.partition("  #")[0]
    code = code if code.count('"') % 2 == 0 and code.count("'") % 2 == 0 else line
    return "" if code.strip().startswith("#") else code.strip()


def answer_lines(assignment: str) -> set[str]:
    """What would give ``assignment`` away: each line of code (without its comment) or text between
    its source notebook's ``### BEGIN SOLUTION``/``### BEGIN HIDDEN TESTS`` and ``### END ...``,
    longer than 20 characters, except imports, code that computes nothing (no call, index,
    assignment or operator: ``except Exception as error:``) and what its own released notebook
    shows anyway (written here apart from publish.secret_lines, which the bundle's guard uses)."""
    shown = course_dir.release_notebook(assignment).read_text()
    lines, inside = set(), False
    for cell in nbformat.read(course_dir.source_notebook(assignment), as_version=4).cells:
        for line in cell.source.splitlines():
            marker = re.match(r"\s*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)", line)
            if marker:
                inside = marker[1] == "BEGIN"
                continue
            text = _without_comment(line) if cell.cell_type == "code" else line.strip()
            if (
                inside
                and len(text) > 20
                and not re.match(r"(from\s+\S+\s+)?import\s", text)
                and (cell.cell_type != "code" or re.search(r"[(\[=@+\-*/%<>]", text))
                and text not in shown
                and json.dumps(text)[1:-1] not in shown
                and (assignment, text) not in publish.IDIOMS
            ):
                lines.add(text)
    return lines


ANSWERS = {a: answer_lines(a) for a in ASSIGNMENTS}
_BUNDLES: dict[tuple[str, ...], tuple[Path, dict[str, set[str]]]] = {}


def _scheduled(moment, tmp_path_factory) -> tuple[Path, dict[str, set[str]]]:
    """The bundle ``make publish`` writes at ``moment`` (built once per set of released assignments),
    and where each answer line of any assignment occurs in it (line -> files)."""
    shipped = tuple(calendar.released(moment))
    if shipped not in _BUNDLES:
        out, got, _ = publish.publish(tmp_path_factory.mktemp("scheduled") / "bundle", moment)
        assert tuple(got) == shipped
        texts = {
            p: p.read_text(encoding="utf-8", errors="ignore")
            for p in out.rglob("*")
            if p.is_file() and p.suffix != ".safetensors"
        }
        found = {
            line: {
                str(p.relative_to(out))
                for p, text in texts.items()
                if line in text or json.dumps(line)[1:-1] in text
            }
            for lines in ANSWERS.values()
            for line in lines
        }
        _BUNDLES[shipped] = out, {line: where for line, where in found.items() if where}
    return _BUNDLES[shipped]


def test_every_assignment_has_a_release_date_before_its_due_date():
    dates = calendar.schedule()
    assert sorted(dates) == ASSIGNMENTS
    assert all(d.release is not None and d.due is not None and d.release < d.due for d in dates.values())
    assert len(MOMENTS) == 2 * len(set(RELEASES.values()))
    # what the answers are is not empty: the scan below would pass vacuously otherwise
    assert all(len(lines) > 30 for lines in ANSWERS.values()), {a: len(v) for a, v in ANSWERS.items()}
    assert "position_ids = torch.arange(seq, device=input_ids.device)" in ANSWERS["02_distilbert"]


@pytest.mark.parametrize("moment", MOMENTS, ids=lambda m: m.strftime("%Y-%m-%dT%H:%M:%S"))
def test_the_bundle_ships_only_what_is_released(moment, tmp_path_factory):
    shipped = calendar.released(moment)
    if not shipped:
        with pytest.raises(publish.NothingToPublish):
            publish.publish(tmp_path_factory.mktemp("nothing") / "bundle", moment)
        return
    bundle, _ = _scheduled(moment, tmp_path_factory)
    unreleased = [a for a in ASSIGNMENTS if a not in shipped]
    top = sorted(p.name for p in bundle.iterdir())
    assert top == sorted(
        [
            *shipped,
            "README.md",
            ".gitignore",
            "course",
            "data",
            "fixtures",
            "requirements.txt",
            "requirements-nodeps.txt",
        ]
    )
    public = bundle / "fixtures" / "public"
    assert sorted(p.name for p in public.iterdir() if p.is_dir()) == [
        a for a in shipped if (paths.fixtures_dir() / "public" / a).is_dir()
    ]
    assert fixtures.verify_tree(public) == []
    readme = (bundle / "README.md").read_text()
    assert readme.count("colab-badge.svg") == len(shipped)
    assert all(release.colab_url(a) in readme for a in shipped) and not any(a in readme for a in unreleased)
    headers = {
        a: nbformat.read(course_dir.release_notebook(a), as_version=4).cells[0].source.splitlines()[0]
        for a in unreleased
    }
    for path in (p for p in bundle.rglob("*") if p.is_file()):
        assert not any(a in path.parts or path.name.startswith(a) for a in unreleased), path
        if path.suffix != ".safetensors":
            text = path.read_text(encoding="utf-8", errors="ignore")
            leaked = [
                a for a, header in headers.items() if header in text or json.dumps(header)[1:-1] in text
            ]
            assert not leaked, f"{path}: the notebook of unreleased {leaked}"


@pytest.mark.parametrize("moment", MOMENTS, ids=lambda m: m.strftime("%Y-%m-%dT%H:%M:%S"))
def test_the_bundle_holds_no_answer_of_an_assignment_still_open(moment, tmp_path_factory):
    if not calendar.released(moment):
        return
    _, found = _scheduled(moment, tmp_path_factory)
    still_open = calendar.open_at(moment, late.policy().late_window)
    assert still_open, "every moment of the schedule has an assignment open"
    leaked = {(a, line): sorted(found[line]) for a in still_open for line in ANSWERS[a] if line in found}
    assert not leaked, f"answers of open assignments in the bundle of {moment}: {list(leaked.items())[:3]}"


def test_published_as_of_11_february_2027_ships_assignments_1_and_2_without_a_line_of_2(tmp_path):
    """``make publish AS_OF=2027-02-11``: the day before assignment 2 is due."""
    out, shipped, still_open = publish.publish(tmp_path / "bundle", "2027-02-11")
    assert shipped == ["01_attention", "02_distilbert"] and "02_distilbert" in still_open
    texts = [
        p.read_text(errors="ignore") for p in out.rglob("*") if p.is_file() and p.suffix != ".safetensors"
    ]
    assert not [
        line
        for line in ANSWERS["02_distilbert"]
        if any(line in t or json.dumps(line)[1:-1] in t for t in texts)
    ]
    assert "Two notebooks" in (out / "README.md").read_text()


def test_each_idiom_is_still_a_solution_line_another_notebook_shows():
    """publish.IDIOMS exempts a few solution lines that recur in other notebooks' given code; each
    must still be one (else it goes), and each says why it is no answer."""
    for (assignment, line), why in publish.IDIOMS.items():
        source = course_dir.source_notebook(assignment).read_text()
        others = [
            a for a in ASSIGNMENTS if a != assignment and line in course_dir.release_notebook(a).read_text()
        ]
        assert json.dumps(line)[1:-1] in source and others and why, (assignment, line)


def test_publish_refuses_a_bundle_that_would_leak_and_keeps_the_last_one(tmp_path):
    out = publish.build(tmp_path / "bundle", ["01_attention"])
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    with pytest.raises(publish.Leak, match="03_visualising_attention"):
        publish.build(out, ["01_attention"], {"03_visualising_attention": {"def load_cases("}})  # in course/
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert not out.with_name(out.name + ".staging").exists()


def test_the_course_package_renames_no_weights_into_assignment_2s_layout():
    """Assignment 2's exercise 4 is the renaming of transformers' parameters into the notebook's flat
    layout (``layers.<i>.q_lin.weight``); the student package ships from the day assignment 2 opens,
    so no module of it may name that layout (the instructor's copy is the recipe's ``course_layout``)."""
    from course import models

    assert not hasattr(models, "state_dict_for_course_model")
    layout = re.compile(r"(?<![\w.])layers\.(\d|\{|\\)")
    for path in sorted((paths.ROOT / "course").rglob("*.py")):
        strings = [
            node.value
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        ]
        named = [s for s in strings if layout.search(s)]
        assert not named, f"{path.name} names assignment 2's parameter layout: {named[:2]}"
