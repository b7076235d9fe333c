"""The judge's verdicts where people look: points in nbgrader's gradebook, reasons in the notebook.

:func:`score` is each judged cell's points (its points times the share of its checks that
passed, :attr:`judge.Verdict.fraction`), saved as nbgrader's ``auto_score``
(:class:`nbgrader_steps.SaveJudged`), so the formgrader, ``grades.csv`` and the feedback all show
the same number. The judge alone decides them: whatever
the kernel printed or raised, a cell earns what its recorded values earn against the withheld
ones (a cell that stopped at an error keeps the checks it made before it).

:func:`annotate` appends the judge's output to each judged cell of the graded notebook: the points
and one line per check (passed, or failed with a reason that names the case and the kind of
failure, never an expected value). It is a ``display_data`` output marked with :data:`MARK` in
its metadata; a kernel can print an output with the same mark, so every marked output the kernel
left is removed first, and the feedback (:mod:`feedback`) trusts the mark only after this.
"""

from __future__ import annotations

from staff.course_dir import nbgrader
from staff.grading.execution.cells import graded_test
from staff.grading.judging.judge import Verdict

#: Metadata key of the judge's own output in a graded notebook.
MARK = "course_judge"


def score(points: float, verdict: Verdict) -> float:
    """A cell's points under ``verdict`` (to the hundredth, as the gradebook shows them)."""
    return round(points * verdict.fraction, 2)


def lines(verdict: Verdict) -> list[str]:
    """One line per check ("✓ label" or "✗ reason"), or the reason the whole cell failed."""
    if verdict.problem:
        return [f"✗ {verdict.problem}"]
    out = []
    for check in verdict.checks:
        passed = check.reason is None
        if check.paid:
            note = ""
        elif check.gate:  # e.g. the model computes the grader's logits before its trained results count
            note = (
                " (checked first, no points of its own)"
                if passed
                else " (checked first: the test's other checks count once this one passes, so for now "
                "the test earns 0; fix this one first)"
            )
        else:
            note = (
                " (a condition, no points of its own)" if passed else " (a condition: this costs its share)"
            )
        out.append(f"✓ {check.label}{note}" if passed else f"✗ {check.reason}{note}")
    return out


def summary(verdict: Verdict, points: float | None) -> str:
    passed = sum(c.reason is None for c in verdict.checks)
    earned = f"{score(points, verdict):g} of {points:g} points, " if points is not None else ""
    return f"Judged outside the kernel: {earned}{passed} of {len(verdict.checks)} checks passed."


def annotate(nb, verdicts: dict[str, Verdict]) -> None:
    """Remove every output a kernel marked as the judge's, then append the judge's own to each
    judged cell (what the TA sees in the formgrader and the student in the feedback)."""
    from nbformat.v4 import new_output

    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.outputs = [o for o in cell.get("outputs", []) if MARK not in o.get("metadata", {})]
        grade_id = graded_test(cell)
        if grade_id not in verdicts:
            continue
        verdict = verdicts[grade_id]
        points = nbgrader(cell).get("points")
        text = "\n".join([summary(verdict, points), *(f"  {line}" for line in lines(verdict))]) + "\n"
        cell.outputs.append(
            new_output(
                "display_data",
                data={"text/plain": text},
                metadata={MARK: {"fraction": verdict.fraction, "lines": lines(verdict)}},
            )
        )


def judged_output(cell):
    """The judge's output of a graded notebook's cell (after :func:`annotate`), or None."""
    found = [o for o in cell.get("outputs", []) if MARK in o.get("metadata", {})]
    return found[-1] if found else None
