"""A stand-in Colab runtime, offline: for the Colab test (tests/e2e/test_colab.py) and `make compat`.

What a Colab kernel has that a local one lacks, as far as the notebooks can tell: an importable
``google.colab`` module, imported at kernel start (so ``"google.colab" in sys.modules``), and the
public student repository to clone, here the bundle ``make publish`` builds, committed to a local
git repository and given as ``COURSE_REPO``. And the one request to the frontend the course makes
(``course.submission``): ``_message.blocking_request("get_ipynb")``, answered with the notebook
"open in the browser", which a test writes to :data:`FRONTEND_NOTEBOOK` in the stand-in's folder
(without it the request times out, as Colab's does: ``None``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

#: The notebook the stand-in's frontend has open (what ``get_ipynb`` hands over), in ``folder``.
FRONTEND_NOTEBOOK = "colab-frontend.ipynb"
MESSAGE_MODULE = '''"""Stand-in for Colab's frontend messages."""
import json


def blocking_request(request_type, request="", timeout_sec=5, parent=None):
    """``get_ipynb``: the open notebook as Colab's frontend sends it; anything else times out."""
    try:
        with open({path!r}, encoding="utf-8") as file:
            return {{"ipynb": json.load(file)}} if request_type == "get_ipynb" else None
    except FileNotFoundError:
        return None
'''


def stand_in(folder: Path, bundle: Path) -> dict[str, str]:
    """Build the stand-in under ``folder`` (a copy of ``bundle`` as the public repository); returns
    the environment variables a kernel needs to look like Colab's."""
    repo = folder / "public-repo"
    shutil.copytree(bundle, repo)
    git = dict(
        os.environ,
        GIT_AUTHOR_NAME="course",
        GIT_AUTHOR_EMAIL="course@localhost",
        GIT_COMMITTER_NAME="course",
        GIT_COMMITTER_EMAIL="course@localhost",
    )
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "bundle"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=git)
    module = folder / "fake-colab" / "google" / "colab"
    module.mkdir(parents=True)
    (module.parent / "__init__.py").write_text("")
    (module / "__init__.py").write_text('"""Stand-in for Colab\'s module."""\n')
    (module / "_message.py").write_text(MESSAGE_MODULE.format(path=str(folder / FRONTEND_NOTEBOOK)))
    startup = folder / "ipython" / "profile_default" / "startup"  # Colab's kernel imports it
    startup.mkdir(parents=True)
    (startup / "00-colab.py").write_text("import google.colab\n")
    return {
        "PYTHONPATH": str(folder / "fake-colab"),
        "IPYTHONDIR": str(folder / "ipython"),
        "COURSE_REPO": repo.as_uri(),
    }
