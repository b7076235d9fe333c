"""Generate ``release/`` (student notebooks) with nbgrader, atomically.

``nbgrader generate_assignment --force`` deletes ``release/<assignment>`` before it can fail,
so a broken source notebook would leave students with nothing. Here nbgrader writes into a
staging folder next to ``release/``; only when every assignment generated cleanly are the
folders swapped in (a rename each, on the same filesystem).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode

from course.settings import PUBLIC_REPO
from staff import course_dir, nbgrader_cli

#: Placeholders in source notebooks' header and setup cells, filled from course.settings.PUBLIC_REPO here,
#: so the public address lives in one place and a fork changes one line.
PLACEHOLDERS = ("{{PUBLIC_REPO}}", "{{COLAB_URL}}")


def colab_url(assignment: str, repo: str = PUBLIC_REPO) -> str:
    """Colab's "open from GitHub" address of an assignment in the published bundle."""
    github = repo.removeprefix("https://github.com/").removesuffix(".git")
    return f"https://colab.research.google.com/github/{github}/blob/main/{assignment}/{assignment}.ipynb"


class StampPublicAddress(Preprocessor):
    """nbgrader preprocessor, first in ``generate_assignment`` (``nbgrader_config.py``): fills the
    placeholders before nbgrader computes checksums and saves the source cells in the gradebook,
    so the release, the gradebook and therefore every autograded notebook, feedback page and
    formgrader view show the real address, never ``{{PUBLIC_REPO}}``."""

    enabled = True  # nbconvert preprocessors are off unless enabled

    def preprocess(self, nb: NotebookNode, resources: dict):
        assignment = resources["nbgrader"]["assignment"]
        values = {"{{PUBLIC_REPO}}": PUBLIC_REPO, "{{COLAB_URL}}": colab_url(assignment)}
        for cell in nb.cells:
            for placeholder, value in values.items():
                cell.source = cell.source.replace(placeholder, value)
        return nb, resources


def generate(
    assignments: list[str] | None = None, course: course_dir.CourseDir = course_dir.COURSE
) -> list[Path]:
    """Generate the student version of each assignment into ``course.release/<assignment>/``."""
    assignments = assignments or course_dir.assignments()
    release_root = course.release
    release_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".staging-", dir=release_root) as tmp:
        staging = Path(tmp)
        nbgrader_cli.each_assignment(
            "generate_assignment",
            assignments,
            course_dir.with_notebooks(course.source),
            "--log-level=WARN",
            f"--CourseDirectory.release_directory={staging}",
            course=course,
        )
        for assignment in assignments:
            if not course_dir.release_notebook(assignment, staging).is_file():
                raise RuntimeError(f"nbgrader produced no {assignment}.ipynb in {staging / assignment}")
        for assignment in assignments:
            target, old = release_root / assignment, release_root / f".old-{assignment}"
            if target.exists():
                target.rename(old)
            (staging / assignment).rename(target)
            shutil.rmtree(old, ignore_errors=True)
    return [course_dir.release_notebook(a, release_root) for a in assignments]


def secret_lines(assignment: str, regions: str = "SOLUTION|HIDDEN TESTS", min_length: int = 12) -> set[str]:
    """Lines of the source notebook that occur only inside its solution / hidden-test regions
    (``### BEGIN SOLUTION`` ...): what must never reach a student, in the release, the bundle or
    feedback. A line that also appears in a visible cell (an import, say) is not a secret; lines of
    ``min_length`` characters or fewer are too generic to tell."""
    secret, public, inside = set(), set(), False
    for cell in nbformat.read(course_dir.source_notebook(assignment), as_version=4).cells:
        for line in cell.source.splitlines():
            if re.search(r"### (BEGIN|END) (SOLUTION|HIDDEN TESTS)", line):
                inside = "BEGIN" in line and bool(re.search(regions, line))
            elif len(line.strip()) > min_length:
                (secret if inside else public).add(line.strip())
    return secret - public
