"""Feedback HTML (real nbgrader generate_feedback on every graded sample) shows hidden tests only
as passed or failed with their points: no hidden source, no expected values; and never the model
answers the formgrader shows TAs (staff/grading/review/model_answers.py)."""

from __future__ import annotations

import html as htmllib
import json
import re

import nbformat
import pytest

from course import paths
from staff import course_dir
from staff.authoring import release, samples
from staff.course_dir import nbgrader
from staff.grading.execution import skipping
from staff.grading.gradebook import flag_decisions
from staff.grading.results import feedback, report
from staff.grading.review import formgrader, model_answers

pytestmark = pytest.mark.notebooks
ASSIGNMENTS = course_dir.assignments()


def _flat(text: str) -> str:
    return " ".join(text.replace("`", "").replace("*", "").split())


def _model_answer_sentences(assignment: str) -> list[str]:
    """Sentences of the instructor's answers to the free-text questions, read off the source."""
    sentences = []
    for cell in nbformat.read(course_dir.source_notebook(assignment), as_version=4).cells:
        meta = course_dir.nbgrader(cell)
        if cell.cell_type == "markdown" and meta.get("solution") and meta.get("grade"):
            solution = cell.source.split("BEGIN SOLUTION", 1)[-1].split("END SOLUTION")[0]
            sentences += [_flat(s) for s in solution.split(". ") if len(s) > 40]
    return sentences


#: What a failed check's reason may say, by kind of check: where and how much, in the exercise's terms
#: (values and tolerances, entries and their index, characters), never a withheld value.
REASON_FORMS = {
    "close": r"\d+ of \d+ values out of tolerance(; the first at index \([\d, ]+\))?; the largest error is "
    r"([\d,.e+]+|inf) times the tolerance \(atol=\S+, rtol=\S+\)",
    "equal": r"\d+ of \d+ entries differ; the first at index \([\d, ]*\)",
    # a whole test cell: it recorded nothing, or records its tests do not make (a flagged submission)
    "cell": r"(nothing was recorded while this test cell ran \(it makes \d+ checks\).*|the cell recorded \d+ "
    r"checks, its tests make \d+|its records are not the checks its tests make .*)",
    "text": r"(got an empty text, expected \d+ character\(s\)|\d+ character\(s\) (short at the end|too many at the "
    r"(end|start)|missing at the start) \(got \d+, expected \d+\)|differs from character \d+ on \(got \d+ "
    r"characters, expected \d+\))",
}
REASON_FORMS["parity"] = REASON_FORMS["close"]
REASON_FORMS |= {
    "perplexity": r"perplexity [\d.]+ on \d+ tokens; it must be at most \S+|expected log-probabilities of shape .*"
    r"|not log-probabilities: .*|a target id is outside the vocabulary of \d+",
    "accuracy": r"accuracy [\d.]+% \(\d+ of \d+\); it must be at least \d+%|predictions must be class ids .*",
    "best_accuracy": r"the best of \d+ \(\d+\) gets [\d.]+% \(\d+ of \d+\); it must be at least \d+%"
    r"|expected predictions of shape \(alternatives, .*|predictions must be class ids .*",
    "progress": r"the parameters moved \d+% of the way from where training started to where it should end; .*"
    r"|the parameters contain NaN or inf",
}
#: Reasons any kind may give: the cell stopped before the check, or the answer has the wrong shape
#: (then the label names the sizes the exercise's text gives, as "q (3, 4, 6, 8)" does).
ANY_KIND = r"not recorded.*|contains NaN or inf.*|expected shape \([\d, ]*\), got \([\d, ]*\)"


def failed_checks(text: str, assignment: str) -> list[tuple[str, str, str]]:
    """(kind, label, reason) of every failed check a feedback page lists, its kind from the judge's file."""
    specs = [
        s
        for cell in json.loads((paths.fixtures_dir() / "judge" / f"{assignment}.json").read_text())[
            "cells"
        ].values()
        for s in cell
    ]
    found = []
    for line in re.findall(r"^\s*✗ (.+)$", text, re.M):
        if re.fullmatch(REASON_FORMS["cell"], line):
            found.append(("cell", "", line))
            continue
        spec = max(
            (s for s in specs if line.startswith(s["label"] + ": ")),
            key=lambda s: len(s["label"]),
            default=None,
        )
        assert spec, f"a failed check no test cell makes: {line[:120]}"
        # the judge's note on a check that pays nothing itself (staff/grading/judging/points.py) is not the reason
        reason = re.split(r" \((?:checked first|a condition)[,:] ", line[len(spec["label"]) + 2 :])[0]
        found.append((spec["kind"], spec["label"], reason))
    return found


def test_feedback_says_which_answers_wait_for_a_ta_and_can_refuse_until_graded(graded_course, tmp_path):
    """No TA has graded the graded course's free-text answers: feedback with ``complete`` writes
    nothing and names them; the points it names are the report's pending points."""
    before = sorted(graded_course.feedback.rglob("*")) if graded_course.feedback.exists() else []
    with pytest.raises(feedback.ManualGradesPending, match="no TA has graded yet") as refused:
        feedback.feedback(course=graded_course, complete=True)
    assert (sorted(graded_course.feedback.rglob("*")) if graded_course.feedback.exists() else []) == before
    pending = feedback.pending_manual(ASSIGNMENTS, graded_course)
    expected = {
        (r.student, r.assignment): r.manual_pending
        for r in report.rows(course=graded_course)
        if r.manual_pending
    }
    assert pending and {(s, a): p for s, a, p in pending} == expected
    student, assignment, points = pending[0]
    assert f"{student}/{assignment} ({points:g} pts)" in str(refused.value)


def test_feedback_shows_hidden_tests_as_the_judges_points_and_reasons_and_pending_answers_as_pending(
    graded_course, capsys
):
    assert feedback.feedback(course=graded_course)  # answers still wait for a TA: written, with a warning
    assert "feedback: warning:" in capsys.readouterr().out
    html = sorted(graded_course.feedback.rglob("*.html"))
    reasons = set()
    rows = {(r.student, r.assignment): r for r in report.rows(course=graded_course)}
    held = flag_decisions.held(graded_course)
    assert held, "the flagged samples are held until a TA decides"
    for path in html:
        text = htmllib.unescape(re.sub(r"<[^>]+>", "", path.read_text()))
        row = rows[(path.parent.parent.name, path.parent.name)]
        if (path.parent.parent.name, path.parent.name) in held:  # under review: no points, no checks
            assert "under review: no score yet" in text and "Under review." in text, path
            assert "Score:" not in text and "Hidden tests" not in text and "✓" not in text, path
            continue
        judged = re.findall(r"Hidden tests: ([0-9.]+) / ([0-9.]+) points\.", text)
        assert judged and abs(sum(float(s) for s, _ in judged) - row.auto_score) < 1e-6, path
        assert re.search(r"^\s*[✓✗] ", text, re.M), f"no per-check line in {path}"
        # the given cells that only teach were left out of the graded run, and say so
        source = nbformat.read(course_dir.source_notebook(path.parent.name), as_version=4)
        assert text.count(skipping.NOTE.strip()) == len(skipping.declared(source)) > 0, path
        # a written answer no TA has graded: pending, its points out of the total, never "0.0 / 2.0"
        assert ("points are still pending" in text) == bool(row.manual_pending), path
        if row.manual_pending:
            assert f"{row.manual_pending:g} points are still pending" in text
            # each pending answer has its note (an answer left empty is nbgrader's real 0, not pending)
            notes = re.findall(r"Not graded yet: a TA will grade this answer \(([0-9.]+) points\)", text)
            assert sum(map(float, notes)) == row.manual_pending, path
        else:
            notes = []
        # the summary at the top lists each written answer with its score, or not at all while it is pending
        written = [
            c
            for c in nbformat.read(course_dir.release_notebook(path.parent.name), as_version=4).cells
            if c.cell_type == "markdown" and nbgrader(c).get("grade") and nbgrader(c).get("solution")
        ]
        assert len(re.findall(r": written answer \(Score: ", text)) + len(notes) == len(written), path
        # the contents name each graded cell's exercise, never nbgrader's "Test cell"
        assert "Test cell" not in text and re.search(
            r"Exercise \d+ \([^)]+\): (hidden )?tests \(Score: ", text
        ), path
        # every failed check's reason in its exercise's terms: a text in characters, never in bytes'
        # shapes; a shape only where the label gives the sizes the text states
        for kind, label, reason in failed_checks(text, path.parent.name):
            form = REASON_FORMS.get(kind)
            assert re.fullmatch(ANY_KIND, reason) or (form and re.fullmatch(form, reason)), (
                path,
                label,
                reason,
            )
            assert kind != "text" or "shape" not in reason, (path, label, reason)
            if reason.startswith("expected shape"):
                assert re.search(r"\(\d+(, \d+)*\)|\(\w+(, \w+)+\)", label), (path, label, reason)
            reasons.add(kind)
    assert len(html) == sum(len(samples.load(a)) for a in ASSIGNMENTS)
    assert reasons >= {"close", "equal", "text"}, reasons  # the failing samples exercise every kind's reason
    for path in html:
        assignment = path.parent.name
        visible = course_dir.release_notebook(assignment).read_text()
        hidden = {
            line
            for line in release.secret_lines(assignment, regions="HIDDEN TESTS")
            if json.dumps(line)[1:-1] not in visible
        }
        assert hidden
        text = htmllib.unescape(re.sub(r"<[^>]+>", "", path.read_text()))
        student = path.parent.parent.name
        own = "\n".join(c for s in samples.load(assignment) if s.student == student for c in s.cells.values())
        leaked = [line for line in hidden if line in text and line not in own]  # not the student's own code
        assert not leaked, f"hidden test source in {path}: {leaked[:3]}"
        assert "BEGIN HIDDEN TESTS" not in text
        assert ("Hidden tests " in text) != ((student, assignment) in held), path
        model = _model_answer_sentences(assignment)
        assert model, f"no free-text model answer found in source/{assignment}"
        shown = [s for s in model if s in _flat(text) and s not in _flat(own)]
        assert not shown, f"model answer in {path}: {shown[:2]}"
        assert "model-answer" not in path.read_text() and "Model answer" not in text


def test_model_answers_are_added_by_the_formgrader_template_only(monkeypatch):
    """The preprocessor comes with nbgrader's grading-page template (``formgrade``), never with its
    ``feedback`` one, even where the formgrader's JUPYTER_PATH is set (a terminal in its JupyterLab)."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader.handlers import template_path

    monkeypatch.setenv("JUPYTER_PATH", str(formgrader.JUPYTER_DATA))

    def adds_model_answers(template: str) -> bool:
        exporter = HTMLExporter(template_name=template, extra_template_basedirs=[template_path])
        return any(isinstance(p, model_answers.AddModelAnswers) for p in exporter._preprocessors)

    assert adds_model_answers("formgrade")
    assert not adds_model_answers("feedback")
