"""The student bundle.

``make publish`` builds a bundle with nothing secret in it (scanned here, file by file), and the
released notebooks point at the public repository. (The Colab round trip is tests/e2e/test_colab.py.)
"""
from __future__ import annotations

import json

import pytest

from course import fixtures, paths, settings
from staff import course_dir
from staff.authoring import publish, release

ASSIGNMENTS = course_dir.assignments()


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return publish.build(tmp_path_factory.mktemp("publish") / "bundle")


def _secret_lines() -> set[str]:
    released = "".join(course_dir.release_notebook(a).read_text() for a in ASSIGNMENTS)
    return {line for a in ASSIGNMENTS for line in release.secret_lines(a, min_length=20)
            if json.dumps(line)[1:-1] not in released}


def test_bundle_holds_only_student_files(bundle):
    top = sorted(p.name for p in bundle.iterdir())
    assert top == sorted([*ASSIGNMENTS, "README.md", ".gitignore", "course", "data", "fixtures",
                          "requirements.txt", "requirements-nodeps.txt"])
    assert sorted(p.name for p in (bundle / "fixtures").iterdir()) == ["public"]
    shipped = {p.relative_to(bundle / "course") for p in (bundle / "course").rglob("*") if p.is_file()}
    package = {p.relative_to(paths.ROOT / "course") for p in (paths.ROOT / "course").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
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
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "hidden=True",
                       "CREATE TABLE", "source_cell", "grade_cell"):
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
    from staff.authoring import recipes

    heldout = recipes.load("05_decoder").HELDOUT.read_text().splitlines()
    lines = [line.strip() for line in heldout if len(line.strip()) > 30]
    reviews = [line.split("\t")[0] for line in recipes.load("04_finetuning").HELDOUT.read_text().splitlines()[1:]]
    shipped = "\n".join(p.read_text(errors="ignore") for p in bundle.rglob("*")
                        if p.is_file() and p.suffix in (".txt", ".md", ".py", ".ipynb", ".json", ".tsv"))
    assert len(lines) > 200 and (bundle / "data" / "lm" / "devils_dictionary.txt").is_file()
    assert len(reviews) == 128 and (bundle / "data" / "sentiment" / "validation.tsv").is_file()
    assert not [line for line in lines + reviews if line in shipped]
