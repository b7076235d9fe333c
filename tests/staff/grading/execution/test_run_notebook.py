"""The runner (a process per submission, run_notebook.py) imports nbgrader's own ``Execute``
without nbgrader's and nbconvert's package ``__init__``s, which load nbgrader's Jupyter server
extensions and every other preprocessor, and nbconvert's exporters and filters: CPU it spent again
for every graded notebook."""

from __future__ import annotations

import json
import subprocess
import sys

from course.settings import ROOT

PROBE = """
import json, sys, inspect
from staff.grading.execution.run_notebook import nbgrader_execute
Execute = nbgrader_execute()
from nbconvert.preprocessors import ExecutePreprocessor
print(json.dumps({
    "file": inspect.getfile(Execute),
    "is_execute_preprocessor": issubclass(Execute, ExecutePreprocessor),
    "loaded": sorted(m for m in sys.modules if m.startswith("nbgrader")),
    "server": sorted(m for m in sys.modules if m.startswith("jupyter_server")),
    "rendering": sorted(m for m in sys.modules if m.startswith(("nbconvert.filters", "nbconvert.exporters.templateexporter", "jinja2", "mistune", "bleach", "bs4"))),
}))
"""


def test_the_runner_gets_nbgraders_execute_without_its_server_extensions():
    found = json.loads(
        subprocess.run(
            [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    )
    assert found["file"].endswith("nbgrader/preprocessors/execute.py")  # nbgrader's own class
    assert found["is_execute_preprocessor"]
    assert not [m for m in found["loaded"] if m.startswith(("nbgrader.server_extensions", "nbgrader.api"))]
    assert "nbgrader.preprocessors.saveautogrades" not in found["loaded"]
    assert not found["server"]
    assert not found["rendering"]


def test_the_warm_up_loads_what_a_from_import_takes_and_binds_no_name():
    """A kernel started ahead imports what the notebook imports, the names of a ``from`` import
    included (``import transformers`` alone loads almost nothing: a lazy module), and leaves the
    student's namespace as it found it; a name that is not there is left to the cell that imports it."""
    import nbformat

    from staff.grading.execution import run_notebook, worker

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "import os, json\nfrom transformers import DistilBertModel\nfrom course import variant\n"
                "from course.checks import check_close, no_such_name"
            ),
            nbformat.v4.new_code_cell("def broken(:"),  # unparsable: read past, never run
        ]
    )
    modules = worker.imports(nb)
    assert modules == [
        "os",
        "json",
        "transformers",
        "transformers.DistilBertModel",
        "course",
        "course.variant",
        "course.checks",
        "course.checks.check_close",
        "course.checks.no_such_name",
    ]
    probe = (
        "import sys\nbefore = set(globals())\n"
        + run_notebook.WARM.format(modules=json.dumps(modules))
        + "\nprint(json.dumps([sorted(set(globals()) - before - {'before'}),"
        " 'transformers.models.distilbert.modeling_distilbert' in sys.modules, 'course.variant' in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", "import json\n" + probe], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    bound, model_loaded, submodule_loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert bound == [] and model_loaded and submodule_loaded


def test_a_kernels_openmp_threads_are_the_jobs_and_wait_asleep(tmp_path):
    """A graded kernel shares its cores (with the next kernel warming up, with other workers'): its
    OpenMP threads are as many as the job says, and wait at a barrier asleep instead of spinning on
    a core another kernel needs (worker.Runner)."""
    import nbformat

    from staff.grading.execution import worker

    view = tmp_path / "view"
    view.mkdir()
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "import os\nprint(os.environ.get('OMP_NUM_THREADS'), os.environ.get('OMP_WAIT_POLICY'))"
            )
        ]
    )
    job = worker.Job("threads", "01_attention", nbformat.writes(nb), 120, 120, 4 << 30, threads=2)
    result = worker.execute(worker.Bundle.pack(view), job)
    assert result.error is None, result.error
    (cell,) = nbformat.reads(result.notebook, as_version=4).cells
    assert [o.get("text", "").split() for o in cell.outputs] == [["2", "PASSIVE"]]
