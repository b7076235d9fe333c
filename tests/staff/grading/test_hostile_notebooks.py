"""No notebook can stop a batch (issue 49). Hypothesis generates notebooks nbformat reads but no
editor should write (metadata of every JSON type or none, ``nbgrader`` null, a list, a string, a
number or nested; duplicated and odd grade ids, the release's grade ids on the wrong cell type;
code too deep for a recursive reader, huge sources, up to 10,000 cells, control characters, lone
surrogates and other odd unicode; outputs of odd shapes; the schema errors editors do write) and
hostile records for the judge, and runs them through every step the grader runs in its own
process, each under autograde's guard (:func:`autograde.step`): each example either goes through
or ends as an Outcome with a status of :data:`status.STATUSES` and one printable line of reason;
none is a ``grader error`` of the steps that read, repair or sanitize a notebook, and none raises
an error that stops a batch. Then a real batch: hostile submissions beside an honest one that
still gets full marks. ``pytest -s`` prints how many examples each property ran, per step."""

from __future__ import annotations

import collections
import copy
import json
import re
import sys

import nbformat
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from nbgrader.api import Gradebook, MissingEntry

from course import checks
from staff import cli, course_dir
from staff.authoring import samples
from staff.course_dir import CourseDir, nbgrader
from staff.grading import autograde, repair, status
from staff.grading.batch import Batch
from staff.grading.execution import worker
from staff.grading.execution.records import NUMERIC, Record
from staff.grading.integrity import static_scan
from staff.grading.judging import judge, points
from staff.grading.results import feedback, report

# One worker runs them all (`--dist loadgroup`): the scratch course and the batch are built once.
pytestmark = pytest.mark.xdist_group("hostile_notebooks")
ASSIGNMENT = "01_attention"
RELEASED = nbformat.read(course_dir.release_notebook(ASSIGNMENT), as_version=4)
RELEASED_CELLS = [json.loads(json.dumps(cell)) for cell in RELEASED.cells]
GRADE_IDS = [nbgrader(c)["grade_id"] for c in RELEASED.cells if nbgrader(c).get("grade_id")]
#: Examples per property, within the minute the three properties may take in `make test` (measured
#: there on 2 cores beside the other test process: 45 s for 800 and 37 s for 120 of the first two, the
#: 10,000-cell example included; a one-off run of 4,000 and 500 found nothing these miss).
EXAMPLES = {"read, repair": 480, "every step here (ready)": 72, "judge": 400}
#: What each property ran, per step, quoted by the closing note (printed with -s).
TRIED: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)


def hostile(examples: int) -> settings:
    """Hypothesis's settings here: ``examples`` each, no deadline (a 10,000-cell notebook takes a
    second), no example database (nothing written into the shared tree), slow and large examples
    allowed (they are the point)."""
    return settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )


# -- generated notebooks ---------------------------------------------------------------------------

#: Cell metadata keys nbformat's schema types (they get no random values: the notebook must stay
#: one nbformat accepts); ``nbgrader`` has its own strategy.
TYPED_KEYS = {"collapsed", "scrolled", "deletable", "editable", "format", "name", "tags", "jupyter"}
TYPED_KEYS |= {"execution", "nbgrader"}
#: Text no editor writes: control characters, terminal escapes, bidirectional overrides, zero-width
#: and combining characters, other planes, markup.
NASTY = [
    "",
    " ",
    "\x00",
    "\x1b[31mred\x1b[0m",
    "\u202eevil",
    "\u200b",
    "a\nb\r\nc",
    "\t\x0b\x0c",
    "\ufeff",
    "\u2028\u2029",
    "e\u0301",
    "\U0010ffff",
    "🙂",
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "![x](/hub/logout)",
    "$x$",
    "x" * 1000,
    "softmax",
    "null",
    "NaN",
    "\x7f\x80\x9f",
]
#: Any character as well (Hypothesis's own text, any category but surrogates), or one of NASTY. A
#: lone surrogate (no file can hold one) makes a whole notebook unreadable: only some get one
#: (:func:`notebooks`).
text = st.sampled_from(NASTY) | st.text(st.characters(codec="utf-8"), max_size=12)
keys = text.filter(lambda k: k not in TYPED_KEYS)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=6,
)
grade_ids = st.sampled_from(GRADE_IDS) | text | st.sampled_from(["", " ", "a\nb", "x" * 300, "../../x"])
nbgrader_metadata = st.one_of(
    json_values,  # null, a list, a string, a number, nested
    st.fixed_dictionaries(
        {},
        optional={
            key: st.booleans() | json_values
            for key in ("grade", "solution", "locked", "task", "points", "schema_version", "cell_type")
        }
        | {"grade_id": grade_ids | json_values, "checksum": text},
    ),
    st.sampled_from([nbgrader(c) for c in RELEASED.cells if nbgrader(c)]).map(copy.deepcopy),  # anywhere
)


def _elif_chain(n: int) -> str:
    return "x = 0\nif x == 0:\n    y = 0\n" + "".join(f"elif x == {i}:\n    y = {i}\n" for i in range(1, n))


def _nested_blocks(n: int) -> str:
    return "\n".join("    " * i + "for _ in ():" for i in range(n)) + "\n" + "    " * n + "pass"


deep_code = st.one_of(
    st.integers(1, 1500).map(_elif_chain),
    st.integers(1, 400).map(lambda n: "x = " + "(" * n + "1" + ")" * n),
    st.integers(1, 400).map(lambda n: "x = " + "[" * n + "]" * n),
    st.integers(1, 40).map(_nested_blocks),
    st.integers(1, 5000).map(lambda n: "x = " + " + ".join(["1"] * n)),
    st.integers(1, 5000).map(lambda n: "x = " + "not " * n + "1"),
    st.integers(1, 600).map(lambda n: "f = " + "lambda: " * n + "1"),
    st.integers(1, 2000).map(lambda n: "%%time\n" * n + "x = 1"),
    st.integers(1, 300).map(lambda n: 'exec("' + "exec(" * n + "1" + ")" * n + '")'),
)
sources = st.one_of(
    text,
    st.lists(text, max_size=5).map("\n".join),
    st.sampled_from([c["source"] for c in RELEASED_CELLS]),
    deep_code,
    st.integers(1000, 5000).map(lambda n: "x = 1\n" * n),  # many lines
    st.integers(1000, 300_000).map(lambda n: f"x = '{'a' * n}'"),  # one huge line
)
cell_ids = st.from_regex(r"\A[a-zA-Z0-9_-]{1,64}\Z") | st.sampled_from(["dup", "header"])
bundle = st.dictionaries(
    st.sampled_from(["text/plain", "text/html", "image/png", "text/x-odd", "text/markdown"]),
    text | st.lists(text, max_size=3),
    max_size=3,
) | st.dictionaries(st.sampled_from(["application/json", "application/x.odd+json"]), json_values, max_size=2)
outputs = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"output_type": st.just("stream"), "name": text, "text": text | st.lists(text, max_size=3)}
        ),
        st.fixed_dictionaries(
            {
                "output_type": st.just("display_data"),
                "data": bundle,
                "metadata": st.dictionaries(keys, json_values, max_size=2),
            }
        ),
        st.fixed_dictionaries(
            {
                "output_type": st.just("execute_result"),
                "execution_count": st.none() | st.integers(0, 2**40),
                "data": bundle,
                "metadata": st.dictionaries(keys, json_values, max_size=2),
            }
        ),
        st.fixed_dictionaries(
            {
                "output_type": st.just("error"),
                "ename": text,
                "evalue": text,
                "traceback": st.lists(text, max_size=3),
            }
        ),
    ),
    max_size=3,
)


@st.composite
def metadata(draw) -> dict:
    found = draw(st.dictionaries(keys, json_values, max_size=2))
    if draw(st.booleans()):
        found["nbgrader"] = draw(nbgrader_metadata)
    if draw(st.booleans()):
        found["id"] = draw(json_values)  # where Colab keeps a cell's id
    if draw(st.integers(1, 10)) == 7:  # nested deeper than Python's recursion limit, at times
        found["deep"] = f"@@deep:{draw(st.integers(1, 2000))}@@"
    return found


def _as(cell: dict, kind: str) -> dict:
    """``cell`` as a cell of type ``kind`` (the fields nbformat's schema allows it)."""
    cell = {k: v for k, v in cell.items() if k in ("id", "metadata", "source", "attachments")}
    cell["cell_type"] = kind
    if kind == "code":
        cell.pop("attachments", None)
        cell.update(execution_count=None, outputs=[])
    return cell


@st.composite
def cells(draw) -> dict:
    kind = draw(st.sampled_from(["code", "markdown", "raw"]))
    cell = _as({"id": draw(cell_ids), "metadata": draw(metadata()), "source": draw(sources)}, kind)
    if kind == "code":
        cell["execution_count"] = draw(st.none() | st.integers(0, 10**9))
        cell["outputs"] = draw(outputs)
    elif draw(st.booleans()):
        cell["attachments"] = draw(st.dictionaries(text, bundle, max_size=2))
    return cell


#: Schema errors editors are known to write (VS Code: outputs on a markdown cell, metadata on a
#: stream output; nbconvert bundlers: a cell's own keys), per cell type.
QUIRKS = {
    "code": [
        {"outputs": [{"output_type": "stream", "name": "stdout", "text": "x\n", "metadata": {}}]},
        {"transient": {"remove_source": True}},
    ],
    "markdown": [{"outputs": [], "execution_count": None}, {"transient": {}}],
    "raw": [{"outputs": [], "execution_count": 1}],
}


@st.composite
def notebooks(draw) -> dict:
    """The release damaged (cells deleted, duplicated, inserted, retyped, their metadata or source
    replaced), or cells of no release at all; odd notebook metadata."""
    found = copy.deepcopy(RELEASED_CELLS) if draw(st.booleans()) else draw(st.lists(cells(), max_size=6))
    changes = st.sampled_from(
        ["delete", "duplicate", "insert", "retype", "metadata", "source", "strip", "quirk"]
    )
    for change, where in draw(st.lists(st.tuples(changes, st.integers(0, 10**6)), max_size=5)):
        i = where % len(found) if found else 0
        if change == "insert" or not found:
            found.insert(i, draw(cells()))
        elif change == "delete":
            del found[i]
        elif change == "duplicate":
            found.insert(i, copy.deepcopy(found[i]))
        elif change == "retype":  # the release's grade ids on the wrong cell type
            found[i] = _as(found[i], draw(st.sampled_from(["code", "markdown", "raw"])))
        elif change == "metadata":
            found[i]["metadata"] = draw(metadata())
        elif change == "source":
            found[i]["source"] = draw(sources)
        elif change == "quirk":  # schema errors editors write, which nbformat reads (and logs)
            found[i].update(draw(st.sampled_from(QUIRKS[found[i]["cell_type"]])))
        else:
            found[i]["metadata"] = {}
    if found and draw(st.integers(1, 20)) == 13:  # a lone surrogate, escaped in the JSON (one in 20)
        found[draw(st.integers(0, len(found) - 1))]["source"] += draw(st.sampled_from(["\ud800", "\udfff"]))
    minor = draw(st.sampled_from([4, 5]))
    if minor == 4:  # cells carry ids from 4.5 on
        found = [{k: v for k, v in c.items() if k != "id"} for c in found]
    typed = ("kernelspec", "language_info", "orig_nbformat", "title", "authors")  # nbformat's schema's
    top = draw(st.dictionaries(keys.filter(lambda k: k not in typed), json_values, max_size=3))
    return {"cells": found, "metadata": top, "nbformat": 4, "nbformat_minor": minor}


def _many_cells(count: int = 10_000) -> dict:
    """The release with cells added up to ``count``; every third with ``"nbgrader": null``-like metadata."""
    odd = [None, [], "grade", 3, {"grade_id": ["x"]}]
    extra = [
        {
            "cell_type": "code",
            "id": f"extra-{i}",
            "metadata": {"nbgrader": odd[i % len(odd)]} if i % 3 == 0 else {},
            "source": f"x{i} = {i}",
            "execution_count": None,
            "outputs": [],
        }
        for i in range(count - len(RELEASED_CELLS))
    ]
    return {"cells": RELEASED_CELLS + extra, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


# -- the properties ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def course(make_course) -> CourseDir:
    return make_course("hostile")


@pytest.fixture(scope="module")
def batch():
    made = Batch([ASSIGNMENT])
    yield made
    made.close()


def _proper(outcome: status.Outcome) -> None:
    """An Outcome as the batch records it: a known status, one printable line of reason (short,
    and saying why, when nobody could grade it)."""
    assert outcome.status in status.STATUSES, outcome
    assert outcome.reason == status.printable(outcome.reason), outcome.reason
    if outcome.status in status.NOT_GRADED:
        assert outcome.reason and len(outcome.reason) <= 300, outcome.reason


def _submit(course: CourseDir, nb: dict, student: str = "hostile") -> None:
    """``nb`` as a submitted file: lone surrogates escaped (json.dumps), ``@@deep:N@@`` as N nested
    arrays (written as text: json.dumps itself would stop at Python's recursion limit)."""
    folder = course.submitted / student / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    text = re.sub(r'"@@deep:(\d+)@@"', lambda m: "[" * int(m[1]) + "]" * int(m[1]), json.dumps(nb))
    (folder / f"{ASSIGNMENT}.ipynb").write_text(text)


def _tried(name: str) -> int:
    """Print what a property's examples did, per step; how many examples it ran (Hypothesis's own
    and the explicit ones)."""
    counts = TRIED[name]
    examples = counts.pop("examples")
    print(f"\n{name}: {examples} examples; " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    sys.stdout.flush()
    return examples


def test_reading_and_repairing_survive_hostile_notebooks(course, batch):
    """nbformat's read and validation, then the repair against the real release: through, or an
    ``invalid notebook`` (never a grader error); after the repair every cell's nbgrader metadata is
    an object with a string grade id, and a dropped one is noted."""
    released = batch.released(course, ASSIGNMENT)
    path = course.submitted / "hostile" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    counts = TRIED["read, repair"]

    @hostile(EXAMPLES["read, repair"])
    @given(nb=notebooks())
    @example(nb=_many_cells())
    def run(nb):
        counts["examples"] += 1
        _submit(course, nb)
        try:
            found = autograde._read(path)
        except autograde.NotGraded as stopped:
            outcome = stopped.outcome("hostile", ASSIGNMENT, 0.0)
            _proper(outcome)
            assert outcome.status == "invalid notebook", outcome.reason
            counts["read: invalid notebook"] += 1
            return
        counts["read"] += 1
        with autograde.step("repair"):  # NotGraded here fails the test
            fixed, notes = repair.repair(found, released)
        counts["repaired" if notes else "needed no repair"] += 1
        if any(not isinstance(c.metadata.get("nbgrader", {}), dict) for c in found.cells):
            assert any("not an object" in note for note in notes)
        assert all(isinstance(c.metadata.get("nbgrader", {}), dict) for c in fixed.cells)
        assert all(isinstance(nbgrader(c).get("grade_id", ""), str) for c in fixed.cells)

    run()
    assert _tried("read, repair") > EXAMPLES["read, repair"]


#: Where a submission stopped in autograde.ready, from its reason.
STEP_OF_REASON = {"cannot read": "read", "no ": "read", "nbgrader cannot read it": "sanitize"}


@pytest.mark.notebooks  # nbgrader's sanitizing, on the scratch course's gradebook
def test_every_step_here_ends_in_a_job_or_an_outcome(course, batch, tmp_path):
    """autograde.ready (read, repair, scan, nbgrader's sanitizing against the scratch course's
    gradebook, the job for a worker), then what the writer does with the notebook it sent (the
    judge's lines without records, feedback's redaction) or with its Outcome (the status log and
    the summary table). No grader error in read, repair or sanitize: a notebook nbgrader cannot
    take is an invalid notebook."""
    limits = autograde.Limits(cell=10, wall=60, memory=2**30)
    log = CourseDir(tmp_path)
    counts = TRIED["every step here (ready)"]

    @hostile(EXAMPLES["every step here (ready)"])
    @given(nb=notebooks())
    @example(nb=_many_cells())
    def run(nb):
        counts["examples"] += 1
        _submit(course, nb)
        item = autograde.ready(course, "hostile", ASSIGNMENT, limits, batch)
        if isinstance(item, status.Outcome):
            _proper(item)
            assert item.status in status.NOT_GRADED
            step = next((s for k, s in STEP_OF_REASON.items() if item.reason.startswith(k)), None)
            step = step or item.reason.removeprefix("grader error in ").split(":")[0]
            assert step not in ("repair", "sanitize") or item.status == "invalid notebook", item.reason
            counts[f"{step}: {item.status}"] += 1
            status.status_file(log).unlink(missing_ok=True)
            status.save_status(log, [item])
            assert status.load_status(log)[("hostile", ASSIGNMENT)]["reason"] == item.reason
            assert len(status.summary([item]).splitlines()) == 4  # counts, header, rule, one line
            return
        counts["read, repaired, scanned, sanitized, sent"] += 1
        counts["flagged by the scan"] += bool(item.flags)
        sent = nbformat.reads(item.job.notebook, as_version=4)
        with autograde.step("judge"):
            points.annotate(sent, judge.judge_notebook({}, batch.checks[ASSIGNMENT], batch.fixtures))
        redact = feedback.RedactHiddenTests()
        for index, cell in enumerate(sent.cells):
            redact.preprocess_cell(cell, {}, index)

    run()
    assert _tried("every step here (ready)") > EXAMPLES["every step here (ready)"]


#: What a kernel's record can hold in place of a check's value: numbers off by a little or by no
#: number at all, another type, a scalar, an empty array, another shape.
ODD_VALUES = ["exact", 1e-6, 1e-3, np.nan, np.inf, -np.inf, "int8", "bool", "scalar", "empty", "transposed"]
odd_arrays = hnp.arrays(
    st.sampled_from(sorted(NUMERIC, key=str)), hnp.array_shapes(min_dims=0, max_dims=3, max_side=3)
)


def _odd(value: np.ndarray, how) -> np.ndarray:
    if how == "exact":
        return value
    if how in ("int8", "bool"):
        return value.astype(how)
    if how == "scalar":
        return np.asarray(value.ravel()[0] if value.size else 0.0)
    if how == "empty":
        return value[:0]
    if how == "transposed":
        return value.T
    return value + np.asarray(how, dtype=value.dtype) if np.issubdtype(value.dtype, np.floating) else value


def _records(draw, specs: dict, fixtures: judge.Fixtures) -> dict[str, list[Record]]:
    """What a hostile kernel could leave per test cell (records.py lets through any known kind,
    label, reference, index and numeric array): each cell's own checks in their order with odd
    values, sometimes one missing, one too many, or one that is some other check."""
    found = {}
    for grade_id, cell_specs in specs.items():
        how = draw(st.sampled_from(ODD_VALUES))
        cell = []
        for spec in cell_specs:
            value = fixtures.value(spec["ref"], spec["index"]) if spec.get("ref") else np.zeros(3)
            tolerance = {k: spec[k] for k in ("atol", "rtol", "limit", "minimum", "weight") if k in spec}
            cell.append(
                Record(
                    spec["kind"], spec["label"], spec["ref"], spec["index"], tolerance, _odd(value, how), None
                )
            )
        change = draw(st.sampled_from(["none"] * 6 + ["drop", "extra", "foreign", "odd array", "no value"]))
        if change == "drop" and cell:
            del cell[draw(st.integers(0, len(cell) - 1))]
        elif change in ("extra", "foreign") and cell:
            odd = Record(
                draw(st.sampled_from(sorted(checks.KINDS))),
                draw(text),
                draw(st.none() | text),
                draw(st.lists(json_values, max_size=2)),
                draw(st.dictionaries(st.sampled_from(["atol", "rtol", "limit"]), st.floats(), max_size=2)),
                draw(st.none() | odd_arrays),
                None,
            )
            where = draw(st.integers(0, len(cell) - 1))
            cell[where : where + (change == "foreign")] = [odd]
        elif change == "odd array" and cell:
            cell[draw(st.integers(0, len(cell) - 1))].got = draw(odd_arrays)
        elif change == "no value" and cell:
            cell[draw(st.integers(0, len(cell) - 1))].got = None
        found[grade_id] = cell
    return found


def test_the_judge_takes_any_records(batch):
    """The judge on hostile records, then its lines in the graded notebook (the writer's side):
    verdicts, never an error out of its step; a cell's points stay between none and all."""
    specs = batch.checks[ASSIGNMENT]
    counts = TRIED["judge"]

    @hostile(EXAMPLES["judge"])
    @given(data=st.data())
    def run(data):
        records = _records(data.draw, specs, batch.fixtures)
        guard = data.draw(st.dictionaries(text, text, max_size=2)) if not data.draw(st.integers(0, 9)) else {}
        result = worker.Result("{}", records=records, guard=guard)
        with autograde.step("judge"):  # NotGraded here fails the test
            verdicts = judge.judge_notebook(result.records, specs, batch.fixtures)
            distrusted = autograde._distrusted(result, verdicts)
            points.annotate(copy.deepcopy(RELEASED), verdicts)
        counts["examples"] += 1
        counts["flagged" if distrusted else "judged"] += 1
        counts["cells"] += len(verdicts)
        counts["cells paid in full"] += sum(v.fraction == 1.0 for v in verdicts.values())
        assert all(0.0 <= verdict.fraction <= 1.0 for verdict in verdicts.values())

    run()
    assert _tried("judge") >= EXAMPLES["judge"]


def test_a_too_deep_notebook_is_flagged_and_an_error_becomes_one_line(monkeypatch):
    """The scan step: a RecursionError or MemoryError is a flag a TA reads (the grade is held for
    them), any other error a grader error of that step, in one line."""
    for error in (RecursionError("maximum recursion depth exceeded"), MemoryError()):

        def deep(*args, error=error):
            raise error

        monkeypatch.setattr(static_scan, "scan", deep)
        assert autograde._scan(RELEASED, RELEASED, frozenset())[0].startswith("too deep to read")
    with pytest.raises(autograde.NotGraded) as stopped:
        with autograde.step("scan"):
            raise ValueError("first line\n  Traceback (most recent call last):\n\x1b[31mred")
    assert (stopped.value.status, stopped.value.reason) == (
        "grader error",
        "grader error in scan: ValueError: first line",
    )
    for stops in autograde.STOPS_THE_BATCH:  # the course's errors are not a notebook's
        with pytest.raises(stops), autograde.step("scan"):
            raise stops("the course")


# -- a batch -----------------------------------------------------------------------------------


#: The batch's hostile submissions: student -> (status, score, what the reason says).
HOSTILE_SUBMISSIONS = {
    "null_metadata": ("repaired", 23.0, "not an object"),
    "deep_elif": ("graded", 23.0, ""),  # read whole by the scan (flagged, still graded, if it could not)
    "scan_breaks": ("grader error", None, "grader error in scan: RuntimeError: the scan broke"),
    "judge_breaks": ("grader error", None, "grader error in judge: KeyError: 'the judge broke'"),
}


@pytest.fixture(scope="module")
def graded_batch(make_course, samples1):
    """Assignment 1's honest sample beside hostile ones, through autograde.autograde: one with
    ``"nbgrader": null`` on a cell, one with a 600-branch elif chain, and two whose scan or judge
    raises (patched here: no notebook makes them raise today)."""
    course = make_course("hostile-batch")
    honest = samples1["correct_loops"]
    samples.submit(honest, course)
    for student in HOSTILE_SUBMISSIONS:
        nb = samples.fill(honest, course.release)
        answer = next(c for c in nb.cells if nbgrader(c).get("grade_id") == "softmax")
        if student == "null_metadata":
            answer.metadata["nbgrader"] = None
        elif student == "deep_elif":
            answer.source += "\n\n\ndef lookup(x):\n    " + _elif_chain(600).replace("\n", "\n    ")
        else:
            answer.source += f"\n# {student}"
        folder = course.submitted / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{ASSIGNMENT}.ipynb").write_text(json.dumps(nb))
    scan, judged = static_scan.scan, autograde._judge

    def breaking_scan(nb, *args):
        if any("# scan_breaks" in c.source for c in nb.cells):
            raise RuntimeError("the scan broke\nTraceback (most recent call last): ...")
        return scan(nb, *args)

    def breaking_judge(batch, assignment, result):
        if "# judge_breaks" in (result.notebook or ""):
            raise KeyError("the judge broke")
        return judged(batch, assignment, result)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(static_scan, "scan", breaking_scan)
        patch.setattr(autograde, "_judge", breaking_judge)
        outcomes = autograde.autograde(
            [ASSIGNMENT], course=course, jobs=2, limits=autograde.Limits(cell=10, wall=60), progress=False
        )
    print(status.summary(outcomes))
    return course, {o.student: o for o in outcomes}


@pytest.mark.notebooks
def test_hostile_submissions_get_their_status_and_the_batch_goes_on(graded_batch):
    course, outcomes = graded_batch
    assert set(outcomes) == {"correct_loops", *HOSTILE_SUBMISSIONS}
    assert (outcomes["correct_loops"].status, outcomes["correct_loops"].reason) == ("graded", "")
    with Gradebook(course.db_url) as gb:

        def score(student):
            try:
                return gb.find_submission(ASSIGNMENT, student).score
            except MissingEntry:
                return None

        assert score("correct_loops") == 23.0  # full marks, in the same batch
        for student, (state, points_, says) in HOSTILE_SUBMISSIONS.items():
            outcome = outcomes[student]
            _proper(outcome)
            if student == "deep_elif" and outcome.status == "flagged":  # a scan that cannot read it whole
                state, says = "flagged", "for manual review"
            assert outcome.status == state, outcome
            assert says in outcome.reason and "\n" not in outcome.reason and "Traceback" not in outcome.reason
            assert score(student) == points_, student  # a grader error writes nothing
    statuses = status.load_status(course)
    assert {k[0]: v["status"] for k, v in statuses.items()} == {s: o.status for s, o in outcomes.items()}
    page = report.write_report(course=course).read_text()
    assert page.count("grader error in") == 2  # the report lists them


@pytest.mark.notebooks
def test_make_autograde_exits_1_and_counts_what_it_could_not_grade(graded_batch, monkeypatch, capsys):
    _, outcomes = graded_batch
    monkeypatch.setattr(autograde, "autograde", lambda *args, **kwargs: sorted(outcomes.values(), key=str))
    assert cli.main(["autograde"]) == 1
    line = capsys.readouterr().err.strip()
    assert line == (
        "autograde: 2 of 5 submission(s) could not be graded (2 grader error); the other 3 are graded and saved"
    )
