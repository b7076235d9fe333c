"""Generate ``release/`` (student notebooks) with nbgrader, atomically.

``nbgrader generate_assignment --force`` deletes ``release/<assignment>`` before it can fail,
so a broken source notebook would leave students with nothing. Here nbgrader writes into a
staging folder next to ``release/``; only when every assignment generated cleanly are the
folders swapped in (a rename each, on the same filesystem).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
from nbgrader.utils import compute_checksum

from course import env, nbgrader_cli, paths

#: Placeholders in source notebooks' header and setup cells, filled from env.PUBLIC_REPO here,
#: so the public address lives in one place and a fork changes one line.
PLACEHOLDERS = ("{{PUBLIC_REPO}}", "{{COLAB_URL}}")


def colab_url(assignment: str, repo: str = env.PUBLIC_REPO) -> str:
    """Colab's "open from GitHub" address of an assignment in the published bundle."""
    github = repo.removeprefix("https://github.com/").removesuffix(".git")
    return f"https://colab.research.google.com/github/{github}/blob/main/{assignment}/{assignment}.ipynb"


def stamp(notebook: Path, assignment: str) -> None:
    """Fill the placeholders; recompute nbgrader's checksum of each changed locked cell so the
    released cell still counts as unmodified."""
    nb = nbformat.read(notebook, as_version=4)
    values = {"{{PUBLIC_REPO}}": env.PUBLIC_REPO, "{{COLAB_URL}}": colab_url(assignment)}
    for cell in nb.cells:
        if any(p in cell.source for p in PLACEHOLDERS):
            for placeholder, value in values.items():
                cell.source = cell.source.replace(placeholder, value)
            meta = cell.metadata.get("nbgrader", {})
            if "checksum" in meta:
                meta["checksum"] = compute_checksum(cell)
    nbformat.write(nb, notebook)


def generate(assignments: list[str] | None = None,
             course: paths.CourseDir = paths.COURSE) -> list[Path]:
    """Generate the student version of each assignment into ``course.release/<assignment>/``."""
    assignments = assignments or paths.assignments()
    release_root = course.release
    release_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".staging-", dir=release_root) as tmp:
        staging = Path(tmp)
        for assignment in assignments:
            nbgrader_cli.run("generate_assignment", assignment, "--log-level=WARN",
                             f"--CourseDirectory.release_directory={staging}", course=course)
            if not paths.release_notebook(assignment, staging).is_file():
                raise RuntimeError(f"nbgrader produced no {assignment}.ipynb in {staging / assignment}")
            stamp(paths.release_notebook(assignment, staging), assignment)
        for assignment in assignments:
            target, old = release_root / assignment, release_root / f".old-{assignment}"
            if target.exists():
                target.rename(old)
            (staging / assignment).rename(target)
            shutil.rmtree(old, ignore_errors=True)
    return [paths.release_notebook(a, release_root) for a in assignments]


def register(assignments: list[str], course: paths.CourseDir = paths.COURSE) -> None:
    """Make sure the gradebook knows each assignment (a fresh clone has no gradebook): generate
    into a throw-away folder, which records the source cells, and leave release/ alone."""
    from nbgrader.api import Gradebook, MissingEntry

    missing = []
    if course.gradebook.exists():
        with Gradebook(course.db_url) as gb:
            for assignment in assignments:
                try:
                    if not gb.find_assignment(assignment).notebooks:
                        missing.append(assignment)
                except MissingEntry:
                    missing.append(assignment)
    else:
        missing = list(assignments)
    with tempfile.TemporaryDirectory() as tmp:
        for assignment in missing:
            nbgrader_cli.run("generate_assignment", assignment, "--log-level=WARN",
                             f"--CourseDirectory.release_directory={tmp}", course=course)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.release", description=__doc__.split("\n")[0])
    parser.add_argument("assignments", nargs="*", help="default: every assignment in source/")
    args = parser.parse_args(argv)
    for notebook in generate(args.assignments or None):
        print(f"release: wrote {notebook.relative_to(paths.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
