"""make similarity on assignment 1: copies are flagged however they were disguised, independent
solutions, skeletons and empty notebooks are not, and the report shows the code side by side with
both students' scores. No kernels: notebooks are read, never run.

The cases (``similarity_cases/``, in the samples' format): ``independent`` is a correct solution
written apart from the course's (helpers, matmul, a loop over heads; checked against the
reference's outputs when it was written); the copies rename, reorder, move helpers between cells,
add comments and change a few lines of it or of the bundled ``correct_loops``."""

from __future__ import annotations

import html
from pathlib import Path

import nbformat
import pytest

from staff import cli, course_dir
from staff.authoring import samples
from staff.course_dir import CourseDir, nbgrader
from staff.grading.integrity import answer_code, similarity

A = "01_attention"
CASES = Path(__file__).parent / "similarity_cases"


def reference_solution() -> samples.Sample:
    """The source notebook's solution, as a student typing it into the release would hand it in."""
    nb = nbformat.read(course_dir.source_notebook(A), as_version=4)
    cells = {
        nbgrader(c)["grade_id"]: "\n".join(line for line in c.source.splitlines() if "### " not in line)
        for c in nb.cells
        if c.cell_type == "code" and nbgrader(c).get("solution")
    }
    return samples.Sample("reference", A, 23, "", cells)


def submit_all(root: Path) -> CourseDir:
    """A scratch course (the real release/) with the cases, the samples and the source's solution."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "release").symlink_to(course_dir.RELEASE, target_is_directory=True)
    course = CourseDir(root)
    reference = reference_solution()
    cases = [
        *samples.load(A),
        *(samples.parse(p, A) for p in sorted(CASES.glob("*.py"))),
        reference,
        samples.Sample("empty", A, 0, "", {grade_id: "" for grade_id in reference.cells}),
    ]
    for case in cases:
        samples.submit(case, course, case.student)
    return course


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> similarity.Result:
    course = submit_all(tmp_path_factory.mktemp("similar") / "course")
    return similarity.run(A, course)


def score(result: similarity.Result, a: str, b: str) -> float:
    return next(p.score for p in result.pairs if {p.a, p.b} == {a, b})


@pytest.mark.parametrize(
    "original, copy",
    [("independent", "independent_renamed_reordered"), ("correct_loops", "loops_renamed_reordered")],
)
def test_a_copy_with_renamed_names_and_reordered_functions_is_flagged(compared, original, copy):
    assert score(compared, original, copy) >= 0.95 > similarity.THRESHOLD


@pytest.mark.parametrize(
    "original, copy",
    [("independent", "independent_few_lines_changed"), ("correct_loops", "loops_few_lines_changed")],
)
def test_a_copy_with_a_few_lines_changed_is_flagged(compared, original, copy):
    assert score(compared, original, copy) >= 0.85 > similarity.THRESHOLD


@pytest.mark.parametrize(
    "a, b", [("correct_loops", "independent"), ("reference", "independent"), ("reference", "correct_loops")]
)
def test_two_independent_correct_solutions_are_not_flagged(compared, a, b):
    assert score(compared, a, b) < 0.3 < similarity.THRESHOLD


def variants_of(original: str) -> set[str]:
    """The bundled samples that state only their difference from ``original`` (``# based_on:``):
    copies of it as far as similarity can tell, whatever else they test."""
    return {
        p.stem for p in course_dir.samples_dir(A).glob("*.py") if f"# based_on: {original}\n" in p.read_text()
    }


def test_skeleton_only_and_empty_submissions_are_listed_not_compared(compared):
    assert set(compared.empty) == {"stub", "skeleton_touched", "empty"}
    assert not {p for p in compared.pairs for s in compared.empty if s in (p.a, p.b)}
    flagged = {frozenset((p.a, p.b)) for p in compared.flagged}
    families = [
        {"independent", "independent_renamed_reordered", "independent_few_lines_changed"},
        {
            "correct_loops",
            "loops_renamed_reordered",
            "loops_few_lines_changed",
            *variants_of("correct_loops"),
        },
    ]
    assert flagged == {frozenset((a, b)) for family in families for a in family for b in family if a != b}, (
        "only the copies, nothing else"
    )


def test_normalised_code_keeps_only_what_the_student_wrote():
    released = answer_code.release(course_dir.release_notebook(A))
    nb = samples.fill(
        samples.Sample(
            "s",
            A,
            0,
            "",
            {
                "softmax": (
                    "def softmax(x, axis=-1):\n"
                    "    '''Numerically stable softmax of `x` along `axis` (any number of dimensions).'''\n"
                    "    # YOUR CODE HERE\n"
                    "    %timeit np.exp(x)\n"
                    "    shifted = x - np.max(x,\n"
                    "                         axis=axis, keepdims=True)   # stable\n"
                    "    return np.exp(shifted) / np.exp(shifted).sum(axis=axis, keepdims=True)\n"
                    "    raise NotImplementedError()"
                ),
                "causal_mask": "def causal_mask(seq_len):\n    return np.tril(np.ones((seq_len, seq_len), dtype=bool)",
            },
        )
    )
    found = answer_code.answers(nb, released, "s")
    assert [(line.cell, line.first, line.last, line.text) for line in found.lines] == [
        ("softmax", 5, 6, "    v1 = x - np . max ( x , axis = axis , keepdims = True )"),
        (
            "softmax",
            7,
            7,
            "    return np . exp ( v1 ) / np . exp ( v1 ) . sum ( axis = axis , keepdims = True )",
        ),
        # a syntax error (the bracket never closes): still compared, line by line
        ("causal_mask", 2, 2, "    return np . tril ( np . ones ( ( seq_len , seq_len ) , dtype = bool )"),
    ]
    assert found.cells["causal_mask"].startswith("def causal_mask")


def test_renaming_and_reordering_leave_the_normalised_lines_alike():
    given = answer_code.release(course_dir.release_notebook(A)).given
    one = "def _helper(values):\n    total = values.sum()\n    return total\n\nimport math\n"
    two = "import math\n\n\ndef _aid(arr):  # renamed\n    s = arr.sum()\n    return s\n"
    lines = [sorted(text for text, *_ in answer_code.normalise(source, given)) for source in (one, two)]
    assert (
        lines[0] == lines[1] == ["    return v3", "    v3 = v2 . sum ( )", "def v1 ( v2 ) :", "import math"]
    )


def test_archive_submissions_are_compared_with_this_years_only(tmp_path):
    course = submit_all(tmp_path / "course")
    archive = tmp_path / "2025"
    for student in ("correct_loops", "independent"):
        folder = archive / student / A
        folder.mkdir(parents=True)
        (folder / f"{A}.ipynb").write_text((course.submitted / student / A / f"{A}.ipynb").read_text())
    result = similarity.run(A, course, archive=archive)
    old = [p for p in result.pairs if p.archive]
    assert result.archived == 2 and all(
        p.b.startswith("archive: ") and not p.a.startswith("archive") for p in old
    )
    assert score(result, "loops_few_lines_changed", "archive: correct_loops/01_attention") >= 0.85
    assert not [p for p in result.pairs if p.a.startswith("archive") and p.b.startswith("archive")]


def test_the_report_shows_pairs_side_by_side_escaped(tmp_path, monkeypatch, capsys):
    course = submit_all(tmp_path / "course")
    loops = samples.parse(course_dir.samples_dir(A) / "correct_loops.py", A)
    loops.cells["softmax"] += "\n    print('</pre><script>alert(1)</script>')"  # a copy of correct_loops
    samples.submit(loops, course, "x<u>y")  # markup in the student's folder name too
    monkeypatch.setattr(course_dir, "COURSE", course)
    assert cli.main(["similarity", "--assignment", A, "--top", "3"]) == 0
    printed = capsys.readouterr().out
    submitted = len(samples.load(A)) + len(list(CASES.glob("*.py"))) + 3  # the source's, an empty one, x<u>y
    nonempty = submitted - 3  # stub, skeleton_touched and the empty one: listed, not compared
    family = len(variants_of("correct_loops")) + 4  # correct_loops' family gains x<u>y
    copies = 3 + family * (family - 1) // 2
    assert (
        f"similarity: {A}: {submitted} submissions, {nonempty * (nonempty - 1) // 2} pairs compared, "
        f"{copies} at or above 0.6"
    ) in printed
    folder = course.root / "reports" / similarity.FOLDER
    index = (folder / "index.html").read_text()
    assert (folder / f"{A}.png").stat().st_size > 5000  # the histogram
    assert "changes no grade" in index and index.count("side by side</a>") == 3
    pages = sorted((folder / A).glob("*.html"))
    assert [p.name for p in pages] == ["1.html", "2.html", "3.html"]
    first = pages[0].read_text()
    assert "class='l hit'" in first and "def apply_self_attention" in html.unescape(first)
    written = "".join(p.read_text() for p in folder.rglob("*.html"))
    assert "<script>" not in written and "x<u>y" not in written and "x<u>y" in html.unescape(index)
    assert "</pre><script>alert(1)</script>" in html.unescape(written), "the student's code, as text"


@pytest.mark.notebooks  # a real nbgrader gradebook (nbgrader runs alembic to create it)
def test_the_report_gives_both_students_scores_and_the_instructor_report_links_it(tmp_path):
    from nbgrader.api import Gradebook

    from staff.grading.results import report

    course = submit_all(tmp_path / "course")
    with Gradebook(course.db_url) as gb:
        gb.add_assignment(A)
        gb.add_notebook(A, A)
        gb.add_grade_cell("auto", A, A, max_score=23, cell_type="code")
        gb.add_solution_cell("auto", A, A)
        for student, points in (("independent", 23.0), ("independent_renamed_reordered", 21.5)):
            gb.add_student(student)
            gb.add_submission(A, student)
            grade = gb.find_grade("auto", A, A, student)
            grade.auto_score, grade.needs_manual_grade = points, False
        gb.db.commit()
    results, index = similarity.report(course, [A], top=1)
    assert results[0].scores == {"independent": "23 / 23", "independent_renamed_reordered": "21.5 / 23"}
    page = (index.parent / A / "1.html").read_text()
    assert "23 / 23" in page and "21.5 / 23" in page
    assert "<td>23 / 23</td>" in index.read_text()
    assert "similarity/index.html" in report.write_report(course).read_text()
