"""Run nbgrader's own command line, as an instructor would, from the course root.

nbgrader runs the ``alembic`` executable from PATH when it creates a gradebook, so the
virtualenv's ``bin/`` must be on PATH even when nbgrader is called by absolute path.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from course import paths


def run(*args: str, course: paths.CourseDir = paths.COURSE, check: bool = True,
        quiet: bool = False) -> subprocess.CompletedProcess:
    """``nbgrader <args>`` on ``course`` (nbgrader_config.py is always the real course's)."""
    bindir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    command = [str(bindir / "nbgrader"), *args, *course.nbgrader_args()]
    result = subprocess.run(command, cwd=paths.ROOT, env=env, text=True,
                            capture_output=quiet)
    if check and result.returncode != 0:
        detail = f"\n{result.stdout}\n{result.stderr}" if quiet else ""
        raise RuntimeError(f"`nbgrader {' '.join(args)}` failed with exit code {result.returncode}{detail}")
    return result
