"""Written answers about another variant (staff/grading/integrity/variants.py): the published worked
example's numbers, a classmate's, or a run on another id's variant are noticed; an honest answer,
whatever it quotes of its own run, is not."""

from __future__ import annotations

import nbformat
import pytest

from course import variant
from staff import course_dir
from staff.course_dir import CourseDir
from staff.grading.integrity import variants
from staff.grading.results import report

ASSIGNMENT = "01_attention"


def _cell(kind: str, grade_id: str, text: str = "", output: str | None = None):
    if kind == "code":
        cell = nbformat.v4.new_code_cell("pass", id=grade_id)
        if output is not None:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=output)]
    else:
        cell = nbformat.v4.new_markdown_cell(text, id=grade_id)
    cell.metadata.nbgrader = {"grade_id": grade_id, "schema_version": 3}
    return cell


def _submit(course: CourseDir, student: str, table: str, answer: str, printed: str | None = None) -> None:
    line = printed or f"Your {variant.of(ASSIGNMENT, student).describe()}"
    nb = nbformat.v4.new_notebook(
        cells=[
            _cell("code", "setup", output=f"setup (local): seed 0\n{line}\n"),
            _cell("code", "scaling_experiment", output=table),
            _cell("markdown", "q_scaling", f"**Question 3.** ...\n\n{answer}"),
        ]
    )
    path = course.submitted / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)


@pytest.fixture
def course(tmp_path) -> CourseDir:
    (tmp_path / "source").symlink_to(course_dir.SOURCE, target_is_directory=True)
    course = CourseDir(tmp_path)
    _submit(
        course, "honest", "   64       63.41   0.871   0.311\n", "Var 63.41 at 64; peaks 0.871 and 0.311."
    )
    _submit(
        course,
        "rounded",
        "   64       58.02   0.802   0.274\n",
        "About 58.0, i.e. 58.02; 0.802 vs 0.274 (1/0.274).",
    )
    _submit(
        course,
        "published",
        "   64       60.88   0.905   0.190\n",
        "I measured 62.7 and 1019.3; peaks 0.963 and 0.247.",
    )
    _submit(
        course, "classmate", "   64       61.20   0.840   0.222\n", "Variance 63.41, and 0.871 against 0.311."
    )
    _submit(
        course,
        "elsewhere",
        "   64       64.05   0.799   0.402\n",
        "64.05 and 0.402.",
        printed=f"Your {variant.of(ASSIGNMENT, 'honest').describe()} (kept in .course-student; delete that file)",
    )
    return course


def test_answers_quoting_someone_elses_numbers_and_runs_of_another_variant_are_noticed(course):
    found = {(f.student, f.question): f.reason for f in variants.findings(course, [ASSIGNMENT])}
    assert set(found) == {("published", "q_scaling"), ("classmate", "q_scaling"), ("elsewhere", "setup")}
    assert found[("published", "q_scaling")] == (
        "quotes the worked example's numbers, which its own run did not print: 0.247, 0.963, 1019.3, 62.7"
    )
    assert found[("classmate", "q_scaling")] == (
        "quotes numbers its own run did not print but honest's did: 0.311, 0.871, 63.41"
    )
    assert (
        found[("elsewhere", "setup")]
        == f"its own run used another {variant.of(ASSIGNMENT, 'honest').describe()}"
    )


def test_the_report_lists_them_as_text(course):
    page = (report.write_report(course, course.root / "reports")).read_text()
    section = page.split("<h2 id='variants'>")[1].split("<h2")[0]
    assert section.startswith("Answers about another variant (3)")
    assert section.count("<tr><td>01_attention</td>") == 3


def test_only_numbers_with_three_significant_digits_count():
    assert variants.numbers("d_k = 64, 0.5, 1/16 = 0.0625, 62.7, 1019.3, 0.25, v1.2.3") == {
        "0.0625",
        "62.7",
        "1019.3",
    }
