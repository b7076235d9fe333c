"""The "before you submit" cell as a student runs it: in a kernel of their own (nbclient here, as
Jupyter's), on their saved assignment 1 with correct answers, it runs a copy top to bottom in a
fresh kernel and reports success and the time against the grading limit."""

from __future__ import annotations

import os
import re

import nbformat
import pytest
from nbclient import NotebookClient

from course import settings, submission
from staff.authoring import samples

pytestmark = pytest.mark.notebooks
A = "01_attention"


def test_the_last_cell_runs_the_saved_notebook_in_a_fresh_kernel(tmp_path):
    sample = next(
        s for s in samples.load(A) if s.expected_score == max(t.expected_score for t in samples.load(A))
    )
    nb = samples.fill(sample)
    nb.cells.append(nbformat.v4.new_code_cell(submission.cell_source(A)))
    saved = tmp_path / f"{A}.ipynb"
    nbformat.write(nb, saved)
    # The student's kernel: Jupyter names its notebook; nothing says it is graded or run by a program.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NBGRADER_EXECUTION", settings.SKIP_FRESH_RUN_VARIABLE)
    }
    env["JPY_SESSION_NAME"] = str(saved)
    student = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                f"import sys\nsys.path.insert(0, {str(settings.ROOT)!r})\n" + submission.cell_source(A)
            )
        ]
    )
    NotebookClient(
        student, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(settings.ROOT)}}
    ).execute(env=env)
    out = "".join(o.get("text", "") for o in student.cells[0].outputs)
    assert not [o for o in student.cells[0].outputs if o.output_type == "error"], out
    assert f"checked: {saved}" in out
    seconds = re.search(r"Fresh run: (\d+) code cell\(s\) in ([\d.]+) s in a fresh kernel", out)
    assert seconds, out
    limit = settings.current().notebook_timeout
    assert (
        f"within the grading limits (limits: {limit} s for the notebook" in out and float(seconds[2]) < limit
    )
    assert "every cell ran without an error" in out
    assert "Visible checks in the fresh run: 6 of 6 passed" in out
    assert (
        "Ready to hand in: nothing above to fix. This is not a grade" in out
        and f"Upload this saved file to the learning platform: {saved}." in out
    )
    print(out)  # the report as the student sees it (pytest -s)
