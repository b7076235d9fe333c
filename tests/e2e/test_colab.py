"""The Colab path end to end, offline: a stand-in ``google.colab`` module, the public repository
given as a local ``file://`` clone of the bundle. The released notebook, filled with a correct
answer, fetches the bundle in its setup cell and runs top to bottom, passing its visible checks.
And a notebook saved by Colab autogrades exactly like the untouched one.
"""

from __future__ import annotations

import copy
import json
import os
import random
import string

import nbformat
import pytest
from nbclient import NotebookClient

from course import settings, submission
from staff.authoring import colab, publish, samples
from staff.grading import autograde
from staff.grading.results import report

pytestmark = pytest.mark.notebooks


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return publish.build(tmp_path_factory.mktemp("publish") / "bundle")


def test_colab_setup_cell_fetches_the_bundle_and_the_notebook_runs(bundle, tmp_path):
    """A released notebook with a correct answer, on a stand-in Colab, offline."""
    colab_env = colab.stand_in(tmp_path, bundle)
    content = tmp_path / "content"  # Colab's working directory
    content.mkdir()

    assignment = "01_attention"
    sample = next(
        s
        for s in samples.load(assignment)
        if s.expected_score == max(t.expected_score for t in samples.load(assignment))
    )
    nb = samples.fill(sample)
    # What Colab's frontend has open (the stand-in hands it to `get_ipynb`): the last cell checks it.
    (tmp_path / colab.FRONTEND_NOTEBOOK).write_text(json.dumps(colab_save(copy.deepcopy(nb))))
    nb.cells.append(nbformat.v4.new_code_cell("import course; print('COURSE FROM', course.__file__)"))
    env = {**os.environ, **colab_env, "COURSE_ONLINE": "0"}
    env.pop(settings.FIXTURES_VARIABLE, None)
    env.pop("NBGRADER_EXECUTION", None)
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        NotebookClient(
            nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(content)}}
        ).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    outputs = {c.id: "".join(o.get("text", "") for o in c.get("outputs", [])) for c in nb.cells}
    assert "setup (Colab)" in outputs["setup"]
    assert (content / "transformers-course" / "course" / "checks.py").is_file()
    assert f"COURSE FROM {content / 'transformers-course' / 'course'}" in outputs[nb.cells[-1].id]
    passed = [i for i, text in outputs.items() if "visible checks passed" in text]
    assert len(passed) == sum(1 for c in nb.cells if c.id.startswith("test_") and c.id.endswith("_visible"))
    # "Before you submit" on Colab: the open notebook, compared with the release, run again in a fresh kernel.
    check = outputs[submission.CELL_ID]
    for said in (
        "checked: the notebook open in Colab",
        "every graded cell in place, read-only cells unchanged",
        "within the grading limits",
        "every cell ran without an error",
        f"File > Download > Download .ipynb. The file must be named {assignment}.ipynb",
    ):
        assert said in check, check


def colab_save(nb: nbformat.NotebookNode, seed: int = 0) -> dict:
    """A notebook as Google Colab writes it back to Drive / downloads it (File → Download .ipynb).

    What Colab changes, as seen in Colab-saved files: ``nbformat_minor`` 0 with the cell ids
    moved from the top-level ``id`` field into ``metadata.id`` (random 12-character ids);
    ``metadata`` replaced by Colab's (``colab`` with ``provenance``, ``kernelspec`` without
    ``language``, ``language_info`` with the name only) plus ``accelerator``; every executed
    code cell gets ``metadata.outputId`` and ``metadata.colab``; sources written as lists of
    lines; key order changed. Unknown cell metadata (nbgrader's) is kept.
    """
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + "-_"
    saved = json.loads(nbformat.writes(nb))
    saved["nbformat_minor"] = 0
    saved["metadata"] = {
        "accelerator": "GPU",
        "colab": {"provenance": [], "gpuType": "T4"},
        "kernelspec": {"name": "python3", "display_name": "Python 3"},
        "language_info": {"name": "python"},
    }
    for cell in saved["cells"]:
        cell.pop("id", None)
        cell["metadata"] = {"id": "".join(rng.choice(alphabet) for _ in range(12)), **cell["metadata"]}
        if isinstance(cell["source"], str):
            cell["source"] = cell["source"].splitlines(keepends=True)
        if cell["cell_type"] == "code":
            cell["metadata"]["outputId"] = f"{rng.getrandbits(128):032x}"
            cell["metadata"]["colab"] = {"base_uri": "https://localhost:8080/"}
    saved["cells"] = [dict(reversed(list(c.items()))) for c in saved["cells"]]
    return dict(reversed(list(saved.items())))


def test_colab_saved_notebook_gets_the_same_score(make_course):
    course = make_course("colab-saved")
    assignment = "01_attention"
    partial = next(s for s in samples.load(assignment) if s.student == "partial")
    for student, transform in (("plain", lambda nb: json.loads(nbformat.writes(nb))), ("colab", colab_save)):
        folder = course.submitted / student / assignment
        folder.mkdir(parents=True)
        nb = samples.fill(partial, course.release)
        (folder / f"{assignment}.ipynb").write_text(json.dumps(transform(copy.deepcopy(nb)), indent=1))
    autograde.autograde([assignment], course=course)
    scores = {r.student: r.auto_score for r in report.rows([assignment], course=course)}
    assert scores == {"plain": partial.expected_score, "colab": partial.expected_score}
