"""``make new-assignment NAME=NN_name``: a new assignment that already goes through the whole
workflow, for its author to replace exercise by exercise.

It copies the template folder, ``staff/authoring/assignments/_template/`` (a real notebook, real
modules the linter and the tests read like any other, and samples), into the places of
docs/ARCHITECTURE.md's checklist ("A new assignment"), which are all it writes:

- ``notebook.ipynb`` to ``source/NN_name/NN_name.ipynb``, its placeholders filled: ``{{ASSIGNMENT}}``,
  ``{{NUMBER}}``, ``{{TITLE}}``, and ``{{SETUP}}`` with the lines every source notebook's setup cell
  opens with (:func:`course_setup`, read from those notebooks: the template holds no second copy);
- its modules (``recipe.py``, ``contract.py``, ``diagram.py``, ``reading.py``) to
  ``staff/authoring/assignments/NN_name/``, where the recipe takes its assignment's name from its folder;
- ``samples/*.py`` to ``samples/NN_name/``, and the students of its ``samples/roster.csv`` that the
  course's ``samples/roster.csv`` lacks;
- a line of dates to ``due_dates.toml``.

The example: one exercise (layer normalisation, in NumPy) with its visible check and a hidden test
the judge pays, one question graded by hand that needs the student's own printout (its cell
declared skipped when grading), and samples that must score full marks, none and none, and the
zero-work tricks, flagged. ``make fixtures ASSIGNMENT=NN_name`` and ``make release`` then work at
once, and the samples grade at their expected scores (tests/staff/authoring/test_new_assignment.py
takes a scaffold through all of it, and holds the checklist to what the scaffold writes).

It refuses a name that is taken or not ``NN_lowercase_words``, and changes nothing then.
"""

from __future__ import annotations

import csv
import re
import shutil
from datetime import timedelta
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from course.settings import ROOT
from staff import calendar, course_dir
from staff.authoring import assignments
from staff.authoring.samples import ROSTER

NAME = re.compile(r"^(\d\d)_([a-z][a-z0-9]*(?:_[a-z0-9]+)*)$")
#: How long an assignment is open.
OPEN_FOR = timedelta(days=14)
#: The setup cell's course lines end with this call (what Colab lacks is installed before any import).
SETUP_ENDS = "env.install_missing()"


class Refused(ValueError):
    """The scaffold writes nothing: why."""


class NameRefused(Refused):
    pass


def course_setup(source: Path = course_dir.SOURCE) -> str:
    """The lines every source notebook's setup cell opens with after its comment, through
    ``env.install_missing()`` (on Colab: clone the course, put it on ``sys.path``, install what the
    runtime lacks). Read from the course's notebooks, so a change made to all of them reaches new
    ones too."""
    cells = []
    for notebook in sorted(source.glob("*/*.ipynb")):
        setup = [c for c in nbformat.read(notebook, as_version=4).cells if c.get("id") == "setup"]
        if setup:  # its own comment first (what this notebook's setup installs), then the course's lines
            lines = setup[0].source.splitlines()
            cells.append(lines[next((i for i, line in enumerate(lines) if not line.startswith("#")), 0) :])
    shared = []
    for lines in zip(*cells):
        if len(set(lines)) > 1:
            break
        shared.append(lines[0])
    ends = [i for i, line in enumerate(shared) if line.startswith(SETUP_ENDS)]
    if not cells or not ends:
        raise Refused(
            f"the setup cells of {source} do not all open with the same lines through `{SETUP_ENDS}`: "
            "make them agree, the scaffold copies those lines"
        )
    return "\n".join(shared[: ends[0] + 1])


def _title(name: str) -> str:
    return name[3:].replace("_", " ").capitalize()


def notebook(name: str, setup: str) -> NotebookNode:
    """The template's notebook for assignment ``name``, ``setup`` opening its setup cell."""
    nb = nbformat.read(assignments.TEMPLATE / "notebook.ipynb", as_version=4)
    values = {
        "{{ASSIGNMENT}}": name,
        "{{NUMBER}}": str(int(NAME.match(name).group(1))),
        "{{TITLE}}": _title(name),
        "{{SETUP}}": setup,
    }
    for cell in nb.cells:
        for placeholder, value in values.items():
            cell.source = cell.source.replace(placeholder, value)
    return nb


def _due_line(name: str) -> str:
    """Released when the last dated assignment is due, due :data:`OPEN_FOR` later."""
    last = max(calendar.due_dates().values(), default=None)
    if last is None:
        return f'"{name}" = {{ }}  # no dates yet: never published, never late\n'
    due = last + OPEN_FOR
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return f'"{name}" = {{ release = {last.strftime(stamp)}, due = {due.strftime(stamp)} }}\n'


def check_name(name: str) -> None:
    if not NAME.match(name):
        raise NameRefused(
            f"{name!r}: a name is two digits, an underscore and lowercase words (e.g. 08_layer_norm)"
        )
    places = (course_dir.SOURCE / name, assignments.folder(name), course_dir.samples_dir(name))
    taken = [path for path in places if path.exists()]
    if name in calendar.due_dates():
        taken.append(calendar.DUE_DATES)
    if taken:
        raise NameRefused(f"{name} exists already: {', '.join(str(p.relative_to(ROOT)) for p in taken)}")


def _copy(files: list[Path], to: Path) -> list[Path]:
    to.mkdir(parents=True)
    return [Path(shutil.copyfile(path, to / path.name)) for path in files]


def _add_students(roster: Path) -> bool:
    """Append the template's sample students the course's roster lacks; whether it did."""
    with ROSTER.open(newline="") as handle:
        known = {row["id"] for row in csv.DictReader(handle)}
    with roster.open(newline="") as handle:
        missing = [row for row in csv.DictReader(handle) if row["id"] not in known]
    with ROSTER.open("a", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerows([row["id"], row["first_name"], row["last_name"], row["email"]] for row in missing)
    return bool(missing)


def scaffold(name: str) -> list[Path]:
    """Write the new assignment's files (see the module's docstring); return them."""
    check_name(name)
    template = assignments.TEMPLATE
    source = course_dir.source_notebook(name)
    nb = notebook(name, course_setup())  # before anything is written: it may refuse
    source.parent.mkdir(parents=True)
    nbformat.write(nb, source)
    written = [source]
    written += _copy([template / f"{part}.py" for part in assignments.PARTS], assignments.folder(name))
    written += _copy(sorted((template / "samples").glob("*.py")), course_dir.samples_dir(name))
    if _add_students(template / "samples" / "roster.csv"):
        written.append(ROSTER)
    with calendar.DUE_DATES.open("a") as handle:
        handle.write(_due_line(name))
    written.append(calendar.DUE_DATES)
    return written


def next_steps(name: str) -> str:
    return f"""Next (docs/ARCHITECTURE.md, "A new assignment"):
  make fixtures ASSIGNMENT={name}   its saved tensors and the judge's file, from the notebook's solution
  make release                       release/{name}/, checked (the stub fails only with NotImplementedError)
  make demo                          the samples must get their expected scores
Then write the real exercises: the notebook, samples/{name}/, and in staff/authoring/assignments/{name}/
its recipe, contract, diagram and reading list (`make figures` draws the diagram into the notebook);
check its dates in due_dates.toml, and commit source/, fixtures/, release/, samples/ and its folder."""
