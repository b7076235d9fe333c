"""The integrity scan's flags on the TA's grading page, beside the cell each one names."""

from __future__ import annotations

import nbformat

from staff.course_dir import CourseDir
from staff.grading.review.integrity_panel import AddIntegrityFlags
from staff.grading.status import Outcome, save_status


def _page(tmp_path, outcome):
    course = CourseDir(tmp_path)
    (tmp_path / "source").mkdir(parents=True)
    folder = course.autograded / "doejane" / "01_attention"
    folder.mkdir(parents=True)
    save_status(course, [outcome])
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("def softmax(x): ...", metadata={"nbgrader": {"grade_id": "softmax"}}),
            nbformat.v4.new_code_cell("check()", metadata={"nbgrader": {"grade_id": "test_softmax_hidden"}}),
        ]
    )
    resources = {
        "assignment_id": "01_attention",
        "notebook_id": "01_attention",
        "metadata": {"path": str(folder)},
    }
    return AddIntegrityFlags().preprocess(nb, resources)[0]


def test_flags_go_beside_their_cell_escaped_and_the_rest_on_top(tmp_path):
    flags = [
        "softmax: library: uses torch.softmax (line 3): an implementation of exercise 1 (Softmax), which asks "
        "for the student's own",
        "cell 9: imports <b>socket</b> (network) (line 1)",
    ]
    nb = _page(tmp_path, Outcome("doejane", "01_attention", "flagged", "for manual review", 1.0, flags))
    sources = [c.source for c in nb.cells]
    assert (
        "the whole submission" in sources[0]
        and "&lt;b&gt;socket&lt;/b&gt;" in sources[0]
        and "<b>" not in sources[0]
    )
    assert (
        sources[1] == "def softmax(x): ..."
        and "uses torch.softmax" in sources[2]
        and "cell softmax" in sources[2]
    )
    assert sources[3] == "check()" and len(sources) == 4


def test_a_submission_flagged_by_the_judge_shows_the_reason_and_a_graded_one_nothing(tmp_path):
    reason = "for manual review: test cells recorded checks their tests do not make, so they score 0 (...)"
    nb = _page(tmp_path / "a", Outcome("doejane", "01_attention", "flagged", reason, 1.0, []))
    assert "recorded checks their tests do not make" in nb.cells[0].source and len(nb.cells) == 3
    nb = _page(tmp_path / "b", Outcome("doejane", "01_attention", "graded", "", 1.0, []))
    assert len(nb.cells) == 2


def test_every_preprocessor_the_grading_page_names_imports():
    """conf.json names classes by dotted path: a move or a typo would fail only on a TA's page."""
    import importlib
    import json

    from staff import course_dir

    conf = course_dir.ROOT / "staff/grading/review/jupyter/nbconvert/templates/formgrade/conf.json"
    named = [p["type"] for p in json.loads(conf.read_text())["preprocessors"].values()]
    assert "staff.grading.review.integrity_panel.AddIntegrityFlags" in named
    for dotted in named:
        module, _, name = dotted.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), name), type), dotted
