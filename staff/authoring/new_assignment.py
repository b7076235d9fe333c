"""``make new-assignment NAME=NN_name``: a new assignment that already goes through the whole
workflow, for its author to replace exercise by exercise.

It writes the files of docs/ARCHITECTURE.md's checklist that can be written without the author
(the source notebook, the fixture recipe and its inputs' contract, the samples with their students,
the dates), each a
working example of its kind: one exercise (layer normalisation, in NumPy) with its visible check
and a hidden test the judge pays, one question graded by hand that needs the student's own
printout (its cell declared skipped when grading), and samples that must score full marks, none and none. ``make fixtures NAME`` and
``make release`` then work at once, and the samples grade at their expected scores
(tests/staff/authoring/test_new_assignment.py takes a scaffold through all of it).

It refuses a name that is taken or not ``NN_lowercase_words``, and changes nothing then.
"""

from __future__ import annotations

import csv
import re
from datetime import timedelta
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from course.settings import ROOT
from staff import calendar, course_dir
from staff.authoring import contracts, recipes
from staff.authoring.samples import ROSTER
from staff.grading.execution import skipping

NAME = re.compile(r"^(\d\d)_([a-z][a-z0-9]*(?:_[a-z0-9]+)*)$")
#: Libraries whose functions would be the exercise's answer (the integrity scan flags their use).
LIBRARY_ANSWERS = ["torch", "torch.*", "scipy", "scipy.*", "jax", "jax.*", "sklearn", "sklearn.*"]
#: What the example's answer may use (a NumPy exercise): any other module it reaches is flagged.
MAY_USE = ["numpy", "numpy.*"]
#: How long an assignment is open, and the sample students the scaffold adds to the roster.
OPEN_FOR = timedelta(days=14)
STUDENTS = {
    "correct": ("Katherine", "Johnson"),
    "stub": ("Charles", "Babbage"),
    "normalises_features": ("Hedy", "Lamarr"),
    "zero_work_tricks": ("Mallory", "Trickster"),
}


class NameRefused(ValueError):
    pass


def _cell(kind: str, grade_id: str, source: str, **nbgrader: object) -> NotebookNode:
    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    meta = {"grade": False, "grade_id": grade_id, "locked": True, "schema_version": 3, "solution": False}
    cell = make(source.strip("\n"), id=grade_id)
    cell.metadata["nbgrader"] = {**meta, "task": False, **nbgrader}
    return cell


def _title(name: str) -> str:
    return name[3:].replace("_", " ").capitalize()


def notebook(name: str) -> NotebookNode:
    number = int(NAME.match(name).group(1))
    setup = _cell(
        "code",
        "setup",
        """
# Setup: run this cell first. On Colab it fetches the course files and installs what Colab lacks;
# locally and in the autograder it downloads nothing.
import os, subprocess, sys
if "google.colab" in sys.modules and not os.path.isdir("transformers-course"):
    subprocess.run(["git", "clone", "--quiet", "--depth=1",
                    os.environ.get("COURSE_REPO", "{{PUBLIC_REPO}}"), "transformers-course"], check=True)
for folder in ("transformers-course", ".."):  # the Colab clone, or the bundle's root locally
    if os.path.isdir(os.path.join(folder, "course")):
        sys.path.insert(0, os.path.abspath(folder))
        break
from course import env
env.install_missing()  # on Colab: what the runtime lacks, before anything below imports it

import numpy as np

from course.checks import check_close, check_shape
from course.fixtures import load_cases

env.setup(0)
np.set_printoptions(precision=4, suppress=True)
""",
    )
    setup.metadata["tags"] = ["reference"]  # the fixture recipe runs it with the solution
    answer = _cell(
        "code",
        "layer_norm",
        """
def layer_norm(x, gamma, beta, eps=1e-5):
    '''Normalise each row of `x` (the last axis: one token's features) to mean 0 and variance 1,
    then scale by `gamma` and shift by `beta` (both of shape (d_model,)).'''
    ### BEGIN SOLUTION
    mean = x.mean(axis=-1, keepdims=True)
    variance = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * gamma + beta
    ### END SOLUTION
""",
        locked=False,
        solution=True,
    )
    answer.metadata["course"] = {"library_answers": LIBRARY_ANSWERS, "may_use": MAY_USE}
    question = _cell(
        "markdown",
        "q_rows",
        r"""
**Question 1 (2 points).** Use the numbers the cell above printed. What are the mean and the standard
deviation of each normalised row, and why is one of them below 1? What would they
be if you had normalised each *feature* (each column) instead?

### BEGIN SOLUTION
Every row has mean 0; the standard deviations are 1.0, 1.0 and 0.9973. They are $\sqrt{\sigma^2 /
(\sigma^2 + \epsilon)}$: `eps` is added to the variance, which matters only for the third row,
whose variance (0.0019) is not large next to $\epsilon = 10^{-5}$. Normalising each column would
centre each feature over the three tokens, and the rows would keep their very different means.

**Points.** 1 point for the printed numbers with the reason for the third row; 1 point for the columns.
### END SOLUTION
""",
        grade=True,
        locked=False,
        solution=True,
        points=2,
    )
    question.metadata["course"] = {"refers_to": ["look_at_rows"]}
    look = _cell(
        "code",
        "look_at_rows",
        """
# Run me: three tokens far from 0, before and after your layer_norm (gamma = 1, beta = 0).
x = np.array([[100.0, 102.0, 98.0, 104.0], [-3.0, 0.0, 3.0, 0.0], [0.5, 0.5, 0.5, 0.6]])
y = layer_norm(x, np.ones(4), np.zeros(4))
print("row means:", y.mean(axis=-1).round(4), " row std:", y.std(axis=-1).round(4))
""",
    )
    # It only teaches (the TA reads the student's own printout): graded runs leave it out.
    look.metadata["course"] = {skipping.KEY: True}
    cells = [
        _cell(
            "markdown",
            "header",
            f"""
# Assignment {number} — {_title(name)}

**[▶ Open in Colab]({{{{COLAB_URL}}}})**

(Scaffolded by `make new-assignment`: replace this text, the exercise and the question with yours.)

**How this is graded.** Write your code where it says `# YOUR CODE HERE` (delete the
`raise NotImplementedError()`). The visible check after the exercise is for you; the hidden test
after it carries the points, on inputs of other shapes. The question is graded by hand.

| Exercise | Points |
|---|---|
| 1. Layer normalisation | 3 |
| Question 1, graded by hand | 2 |
| **Total** | **5** |
""",
        ),
        setup,
        _cell(
            "markdown",
            "layer_norm_intro",
            """
## 1. Layer normalisation (3 points)

Each token's vector $x$ (a row) is normalised on its own: $\\mathrm{LN}(x) = \\gamma \\odot
\\frac{x - \\mu}{\\sqrt{\\sigma^2 + \\epsilon}} + \\beta$, with $\\mu$ and $\\sigma^2$ the mean and
the variance of that row's features. Derive every size from the arrays: the hidden test uses other
shapes, with any number of leading axes.
""",
        ),
        answer,
        _cell(
            "code",
            "test_layer_norm_visible",
            f"""
# Visible check (for you: no points; the hidden test below carries them): shape and a public example.
from course.checks import check_close, check_shape  # re-imported: redefining a check elsewhere cannot change this test
case = load_cases("{name}", "layer_norm")[0]
got = layer_norm(case["x"], case["gamma"], case["beta"])
check_shape("layer_norm(x)", got, case["x"].shape)
check_close("layer_norm(x)", got, case["expected"], atol=1e-6)
print("layer_norm: visible checks passed")
""",
        ),
        _cell(
            "code",
            "test_layer_norm_hidden",
            f"""
# Hidden tests (3 points): other shapes, with one and two leading axes.
### BEGIN HIDDEN TESTS
from course.checks import check_close  # re-imported: redefining a check elsewhere cannot change this test
for case in load_cases("{name}", "layer_norm", hidden=True):
    check_close(f"layer_norm(x of shape {{case['x'].shape}})", layer_norm(case["x"], case["gamma"], case["beta"]),
                case["expected"], atol=1e-6)
### END HIDDEN TESTS
""",
            grade=True,
            points=3,
        ),
        look,
        question,
        _cell(
            "code",
            "submission_check",
            f"""
# Before you submit: save the notebook (Ctrl+S; on Colab there is no need), then run this cell. It changes
# nothing and grades nothing: it compares your cells with the released notebook, runs a copy top to bottom in a
# fresh kernel within the grading time limit, and says what is left to fix and which file to hand in.
from course import submission
submission.check("{name}")
""",
        ),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return nb


CONTRACT_MODULE = '''"""What {name}'s released text promises about the inputs its hidden test feeds the exercise, in
its own words: `make fixtures` refuses a hidden case outside it (staff/authoring/contracts/).
Scaffolded by `make new-assignment`: replace with the real exercise's."""

from __future__ import annotations

from staff.authoring.contracts import floats, term


def _features(case) -> str | None:
    """x has one axis or more; gamma and beta one number per feature (x's last axis)."""
    if case["x"].ndim < 1 or case["x"].shape[-1] < 2:
        return f"x of shape {{case['x'].shape}} has no row of features to normalise"
    for key in ("gamma", "beta"):
        if case[key].shape != case["x"].shape[-1:]:
            return f"{{key}} has shape {{case[key].shape}}, x has {{case['x'].shape[-1]}} features"
    return None


CONTRACT = {{
    "layer_norm": (
        term("the hidden test uses other shapes, with any number of leading axes", ("x", "gamma", "beta"), _features),
        floats("then scale by `gamma` and shift by `beta` (both of shape (d_model,))", ("x", "gamma", "beta")),
    )
}}
'''


RECIPE = '''"""Fixtures for {name}: a public example for the visible check and hidden cases of other shapes
(one and two leading axes, other widths), so code that hard-codes the visible sizes fails them.
Scaffolded by `make new-assignment`: replace with the real exercise's."""

from __future__ import annotations

import numpy as np

from course.fixtures import pack_cases
from staff.authoring.reference import solution_namespace

ASSIGNMENT = "{name}"
#: The tolerances (atol, rtol) the notebook's tests compare these fixtures with.
TOLERANCES = {{"*": (1e-6, 1e-5)}}
#: The expected outputs in each fixture: a grading kernel never sees them, the judge compares with them.
OUTPUTS = {{"layer_norm": ("expected",)}}


def _case(layer_norm, rng: np.random.Generator, *shape: int) -> dict:
    x = rng.standard_normal(shape) * 3 + rng.standard_normal(shape[:-1] + (1,)) * 10
    gamma, beta = rng.standard_normal(shape[-1]), rng.standard_normal(shape[-1])
    return dict(x=x, gamma=gamma, beta=beta, expected=layer_norm(x, gamma, beta))


def build() -> dict:
    layer_norm = solution_namespace(ASSIGNMENT)["layer_norm"]
    public, hidden = np.random.default_rng({seed}), np.random.default_rng({seed} + 1)
    return {{
        ("public", "layer_norm"): pack_cases([_case(layer_norm, public, 4, 6)]),
        ("hidden", "layer_norm"): pack_cases(
            [_case(layer_norm, hidden, 7, 10), _case(layer_norm, hidden, 2, 5, 3), _case(layer_norm, hidden, 1, 16)]
        ),
    }}
'''

SAMPLES = {
    "correct": """# expected_score: 3
# Normalises each row (the last axis), as the exercise asks.
# %% layer_norm
def layer_norm(x, gamma, beta, eps=1e-5):
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + eps) * gamma + beta
# %% q_rows
Means 0, 0, 0; stds 1.0, 1.0 and 0.9973: eps is added to the variance, and the third row's variance
(0.0019) is small enough for it to show. Normalising columns would centre each feature over the three
tokens instead, and the rows would keep their very different means.
""",
    "stub": """# expected_score: 0
# The untouched released notebook: the answer still raises NotImplementedError.
""",
    "normalises_features": """# expected_score: 0
# Normalises each feature over the tokens (axis 0, batch normalisation's axis) instead of each token:
# right only where the rows happen to agree, so the visible check and every hidden case fail.
# %% layer_norm
def layer_norm(x, gamma, beta, eps=1e-5):
    mean, variance = x.mean(axis=0, keepdims=True), x.var(axis=0, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * gamma + beta
""",
    "zero_work_tricks": """# expected_score: 0
# expected_status: flagged
# based_on: stub
# include: zero_work_tricks.py
# Does no work and tries every trick against the grader at once (samples/zero_work_tricks.py).
# It must score 0; the integrity scan flags it for a TA.
# %% layer_norm
def layer_norm(x, gamma, beta, eps=1e-5):
    raise NotImplementedError()
""",
}


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
            f"{name!r}: a name is two digits, an underscore and lowercase words (e.g. 07_layer_norm)"
        )
    taken = [
        path
        for path in (
            course_dir.SOURCE / name,
            recipes.HERE / f"{name}.py",
            contracts.HERE / f"{name}.py",
            course_dir.samples_dir(name),
        )
        if path.exists()
    ]
    if name in calendar.due_dates():
        taken.append(calendar.DUE_DATES)
    if taken:
        raise NameRefused(f"{name} exists already: {', '.join(str(p.relative_to(ROOT)) for p in taken)}")


def scaffold(name: str) -> list[Path]:
    """Write the new assignment's files (see the module's docstring); return them."""
    check_name(name)
    number = int(NAME.match(name).group(1))
    written = []
    source = course_dir.source_notebook(name)
    source.parent.mkdir(parents=True)
    nbformat.write(notebook(name), source)
    written.append(source)
    recipe = recipes.HERE / f"{name}.py"
    recipe.write_text(RECIPE.format(name=name, seed=1000 * number + 7))
    written.append(recipe)
    contract = contracts.HERE / f"{name}.py"
    contract.write_text(CONTRACT_MODULE.format(name=name))
    written.append(contract)
    samples = course_dir.samples_dir(name)
    samples.mkdir(parents=True)
    for student, text in SAMPLES.items():
        (samples / f"{student}.py").write_text(text)
        written.append(samples / f"{student}.py")
    with ROSTER.open(newline="") as handle:
        known = {row["id"] for row in csv.DictReader(handle)}
    missing = [s for s in STUDENTS if s not in known]
    if missing:
        with ROSTER.open("a", newline="") as handle:
            for student in missing:
                first, last = STUDENTS[student]
                csv.writer(handle, lineterminator="\n").writerow(
                    [student, first, last, f"{first}.{last}@example.edu".lower()]
                )
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
Then write the real exercises (notebook, recipe, samples), add its reading list
(staff/authoring/reading_lists.py) and its drawing (staff/authoring/diagrams.py; `make figure`),
check its dates in due_dates.toml, and commit source/, fixtures/, release/ and samples/."""
