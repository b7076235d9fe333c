"""The notebooks' "before you submit" cell (course.submission): each way a student's copy of the
released assignment 1 can go wrong is named in the report, by the cell the student sees and with
what to do; nothing is run for the static part (the fresh run has its own tests below and in
tests/e2e/test_submission_check.py)."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
import time
import types

import nbformat
import pytest
from nbgrader.utils import compute_checksum

from course import cell_audit, fresh_run, settings, submission
from staff import course_dir
from staff.authoring import colab
from staff.grading.integrity import static_scan

A = "01_attention"
RELEASED = json.loads(course_dir.release_notebook(A).read_text())


def at(nb: dict, grade_id: str) -> int:
    return next(
        i for i, c in enumerate(nb["cells"]) if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id
    )


def solved() -> dict:
    """The released notebook with every answer written (no stub left)."""
    nb = copy.deepcopy(RELEASED)
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["metadata"]["nbgrader"].get("solution"):
            cell["source"] = source.replace(cell_audit.CODE_STUB, "return None").replace(
                cell_audit.TEXT_STUB, "An answer."
            )
    return nb


def report_of(tmp_path, nb: dict, name: str = f"{A}.ipynb") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(nb))
    return submission.report(A, path, fresh=False, progress=False)


def test_an_untouched_solved_notebook_has_no_problem_and_the_static_part_is_instant(tmp_path):
    start = time.perf_counter()
    text = report_of(tmp_path, solved())
    assert time.perf_counter() - start < 1.0
    assert "every graded cell in place, read-only cells unchanged" in text
    assert "Answers still as released: none" in text
    assert f"Upload this saved file to the learning platform: {tmp_path / (A + '.ipynb')}" in text


def test_the_released_stubs_are_listed_by_exercise():
    found = cell_audit.stubs(
        RELEASED | {"cells": [dict(c, source="".join(c["source"])) for c in RELEASED["cells"]]}
    )
    softmax = next(s for s in found if s.startswith("cell 5, your answer `softmax` in “1. Softmax”: line "))
    line = int(softmax.split(": line ")[1].split()[0])
    released = "".join(RELEASED["cells"][4]["source"]).splitlines()
    assert released[line - 1].strip() == cell_audit.CODE_STUB and "delete that line" in softmax
    assert any("written answer to Question 1" in s and "replace it with your answer" in s for s in found)
    assert len(found) == 10


def test_a_deleted_test_cell_is_named(tmp_path):
    nb = solved()
    del nb["cells"][at(nb, "test_softmax_hidden")]
    text = report_of(tmp_path, nb)
    assert (
        "the hidden-test cell of “1. Softmax” (empty in your copy: the tests are added at grading) is missing"
        in text
    )
    assert "copy the cell back from a fresh copy of the released notebook" in text


def test_a_duplicated_answer_cell_is_named(tmp_path):
    nb = solved()
    index = at(nb, "softmax")
    nb["cells"].insert(index + 1, copy.deepcopy(nb["cells"][index]))
    text = report_of(tmp_path, nb)
    assert (
        f"cell {index + 1} is a second copy of your answer `softmax` in “1. Softmax” (same grade id `softmax` as cell {index + 2})"
        in text
    )


def test_an_answer_pasted_over_another_is_named_twice(tmp_path):
    nb = solved()
    nb["cells"][at(nb, "multihead_attention")] = copy.deepcopy(nb["cells"][at(nb, "softmax")])
    text = report_of(tmp_path, nb)
    assert "your answer `apply_multihead_attention` in “3. Multi-head attention” is missing" in text
    assert "is a second copy of your answer `softmax`" in text


def test_a_renamed_grade_id_is_named(tmp_path):
    nb = solved()
    nb["cells"][at(nb, "test_pe_visible")]["metadata"]["nbgrader"]["grade_id"] = "my_check"
    text = report_of(tmp_path, nb)
    assert (
        "the visible check of “4. Positional encoding”, has grade id `my_check` instead of `test_pe_visible`"
        in text
    )


def test_an_edited_read_only_cell_is_named(tmp_path):
    nb = solved()
    cell = nb["cells"][at(nb, "test_softmax_visible")]
    cell["source"] = "".join(cell["source"]).replace("atol=1e-8", "atol=1.0")
    text = report_of(tmp_path, nb)
    # A note, not a thing to fix: the grader puts the released cell back (a mid-term re-release
    # changes read-only cells in every student's copy).
    assert (
        "! cell 6, the visible check of “1. Softmax”, differs from the release (edited, or from an earlier "
        "release): it is read-only and the grader uses the released version, so nothing to fix"
    ) in text
    assert "1 read-only cell(s) differ from the release (restored at grading)" in text
    assert "6 thing(s) above to fix" in text  # the six visible checks not run: the edit is not one


def test_stripped_metadata_is_named(tmp_path):
    nb = solved()
    index = at(nb, "self_attention")
    nb["cells"][index]["metadata"].pop("nbgrader")
    text = report_of(tmp_path, nb)
    assert (
        f"cell {index + 1}, your answer `apply_self_attention` in “2. Scaled dot-product self-attention”, "
        f"lost its nbgrader metadata"
    ) in text


def test_a_failing_visible_check_in_the_saved_outputs_is_named_with_its_message(tmp_path):
    nb = solved()
    for cell in nb["cells"]:
        if cell_audit.is_visible_check(dict(cell, source="".join(cell["source"]))):
            cell["execution_count"] = 1
    failing = nb["cells"][at(nb, "test_mask_visible")]
    failing["outputs"] = [
        {
            "output_type": "error",
            "ename": "AssertionError",
            "traceback": [],
            "evalue": "\x1b[0;31mcausal_mask(4): differs at [0, 1]: got True, expected False",
        }
    ]
    text = report_of(tmp_path, nb)
    assert "Visible checks as saved (their outputs in the file): 5 of 6 passed" in text
    assert (
        "✗ cell 32, the visible check of “6. Causal mask”: failed: AssertionError: causal_mask(4): differs "
        "at [0, 1]: got True, expected False"
    ) in text
    assert "✓ cell 6, the visible check of “1. Softmax”: passed" in text


def test_without_a_released_copy_nbgraders_checksums_still_catch_an_edit():
    nb = json.loads(json.dumps(RELEASED))
    for cell in nb["cells"]:
        cell["source"] = "".join(cell["source"])
    assert all(cell_audit.checksum(c) == compute_checksum(nbformat.from_dict(c)) for c in nb["cells"])
    nb["cells"][at(nb, "plot_pe")]["source"] += "\nprint('mine')"
    audit = cell_audit.audit(nb, None)
    assert any(
        "the read-only code cell “# Look at it: a few dimensions" in p and "was edited" in p
        for p in audit.restored
    )
    assert audit.problems == []
    assert "cannot be seen" in audit.notes[0]


def test_a_file_that_is_not_a_notebook_gets_a_report_not_an_error(tmp_path, monkeypatch, capsys):
    path = tmp_path / f"{A}.ipynb"
    path.write_text('{"cells": [')
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    submission.check(A, fresh=False)
    out = capsys.readouterr().out
    assert "cannot be read as a notebook" in out and "start again from a fresh copy" in out


def test_the_kernels_notebook_is_found_through_jupyter_and_misnamed_files_are_named(tmp_path, monkeypatch):
    path = tmp_path / "01_attention-Copy1.ipynb"
    path.write_text(json.dumps(solved()))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    text = submission.report(A, fresh=False)
    assert f"checked: {path}" in text and f"Rename it to {A}.ipynb first" in text


def test_a_student_working_in_the_released_file_is_compared_with_gits_copy():
    released = course_dir.release_notebook(A)
    nb, _, path = submission.student_notebook(A, released)
    assert cell_audit.compare(nb, submission.released_notebook(A, path)) == ([], [])


def test_a_file_saved_before_the_last_runs_is_named(tmp_path, monkeypatch):
    nb = solved()
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for count, cell in enumerate(code):
        cell["execution_count"] = count + 1
    monkeypatch.setattr(submission, "_kernel_count", lambda: 40)  # this cell is [39]: the last run was [38]
    text = report_of(tmp_path, nb)
    assert (
        f"is older than your last runs (it holds runs up to [{len(code)}], this kernel has run up to [38])"
        in text
    )
    monkeypatch.setattr(submission, "_kernel_count", lambda: len(code) + 2)  # saved right after the last run
    assert "older than your last runs" not in report_of(tmp_path, nb)


def test_on_colab_the_open_notebook_is_asked_for_and_a_colab_save_compares_clean(tmp_path, monkeypatch):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "README.md").write_text("bundle")
    colab.stand_in(tmp_path / "colab", bundle)
    spec = importlib.util.spec_from_file_location(
        "google.colab._message", tmp_path / "colab" / "fake-colab" / "google" / "colab" / "_message.py"
    )
    message = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(message)
    monkeypatch.setitem(sys.modules, "google.colab", types.SimpleNamespace(_message=message))
    monkeypatch.setitem(sys.modules, "google.colab._message", message)
    saved = solved()  # as Colab saves it: ids in the metadata, format 4.0, sources as lists of lines
    saved["nbformat_minor"] = 0
    for cell in saved["cells"]:
        cell["metadata"]["id"] = cell.pop("id")
        cell["source"] = "".join(cell["source"]).splitlines(keepends=True)
    (tmp_path / "colab" / colab.FRONTEND_NOTEBOOK).write_text(json.dumps(saved))
    text = submission.report(A, fresh=False)
    assert "checked: the notebook open in Colab" in text
    assert "every graded cell in place, read-only cells unchanged" in text
    assert f"File > Download > Download .ipynb. The file must be named {A}.ipynb" in text


def test_under_grading_it_prints_one_line_and_reads_nothing(monkeypatch, capsys):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    monkeypatch.setattr(submission, "report", lambda *a, **k: pytest.fail("the report ran under grading"))
    submission.check(A)
    assert capsys.readouterr().out == "submission check: skipped (this notebook is being run by nbgrader)\n"


def test_programs_that_execute_notebooks_skip_the_fresh_run(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.SKIP_FRESH_RUN_VARIABLE, "1")
    monkeypatch.setattr(fresh_run, "run", lambda *a, **k: pytest.fail("a fresh run started"))
    path = tmp_path / f"{A}.ipynb"
    path.write_text(json.dumps(solved()))
    assert "Fresh run: skipped (COURSE_SKIP_FRESH_RUN=1" in submission.report(A, path)


def test_the_cell_passes_the_graders_integrity_scan():
    source = submission.cell_source(A)
    assert static_scan.scan_source(source) == []
    nb = nbformat.reads(json.dumps(RELEASED), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(source))  # no grade id (metadata stripped): scanned too
    assert static_scan.scan(nb, nbformat.reads(json.dumps(RELEASED), as_version=4)) == []


@pytest.mark.notebooks
def test_the_fresh_run_names_the_first_error_and_a_cell_over_the_limit(monkeypatch):
    monkeypatch.setenv("CELL_TIMEOUT", "2")
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(s)
            for s in (
                "import os, sys, time\nassert os.environ['NBGRADER_EXECUTION'] == 'autograde'\n"
                "sys.path.insert(0, 'transformers-course')  # as the setup cell finds the course files",
                "from course import submission\n"
                + 'submission.check("01_attention")',  # the copy's own last cell
                "print(undefined_name)",
                "time.sleep(60)",
                "print('never')",
            )
        ]
    )
    # The kernel's own view of its sockets: ZMQ ipc files, no TCP port (and no warning about one)
    nb.cells.insert(
        1,
        nbformat.v4.new_code_cell(
            "from ipykernel.kernelapp import IPKernelApp\nprint(IPKernelApp.instance().transport)"
        ),
    )
    ran = fresh_run.run(nb, progress=False)
    assert ran.nb.cells[1].outputs[0].text == "ipc\n"
    del ran.nb.cells[1]
    assert (
        ran.nb.cells[1].outputs[0].text
        == "submission check: skipped (this notebook is being run by nbgrader)\n"
    )
    assert ran.first_error()[:2] == (2, "NameError")
    assert ran.stopped == "cell 5 was still running when the per-cell limit (2 s) ran out"
    assert ran.cells_run == 4 and ran.seconds < 30


def test_the_fresh_run_leaves_out_the_cells_the_grader_skips():
    """A given cell declared `skip_when_grading` (a full training run) is not run, as in the graded run;
    an answer or a test cell carrying the same declaration still runs."""
    skipped = {"course": {"skip_when_grading": True}, "nbgrader": {"locked": True, "grade_id": "run"}}
    answer = {"course": {"skip_when_grading": True}, "nbgrader": {"solution": True, "grade_id": "answer"}}
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("x = 1"),
            nbformat.v4.new_code_cell("import time\ntime.sleep(120)", metadata=skipped),
            nbformat.v4.new_code_cell("print(x + 1)", metadata=answer),
        ]
    )
    ran = fresh_run.run(nb, progress=False)
    assert ran.cells_run == 2 and ran.stopped is None and ran.seconds < 60
    assert ran.nb.cells[1].get("outputs") == [] and ran.nb.cells[2].outputs[0].text == "2\n"
