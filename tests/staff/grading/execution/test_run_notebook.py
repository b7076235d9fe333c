"""The runner (a process per submission, run_notebook.py) imports nbgrader's own ``Execute``
without nbgrader's package ``__init__``s, which load its Jupyter server extensions and every
other preprocessor: CPU it spent again for every graded notebook."""

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
