"""What the gradebook says: the per-student score table, and the instructor report.

The table (``make demo``'s last step) shows automatic points and pending manual grades apart,
so a free-text answer that no TA has graded yet is never mistaken for a zero; bundled samples
are compared with the score their file promises. The report (``reports/report.html`` with PNG
figures) shows the score distribution of each assignment, the pass rate of every graded test
(which exercise the class struggles with), grading time per submission, and every submission
whose status needs a human (flagged, repaired, timeout, kernel died, disk quota, invalid notebook),
and the regrade log (:mod:`regrade`); it links ``make similarity``'s report when there is one.
"""
from __future__ import annotations

import html
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from staff import course_dir, text_table
from staff.authoring import samples
from staff.course_dir import CourseDir
from staff.grading import similarity
from staff.grading.status import load_status


@dataclass
class Row:
    student: str
    assignment: str
    auto_score: float
    auto_max: float
    manual_pending: float   # points of free-text answers still waiting for a TA
    expected: float | None  # for bundled samples


def rows(assignments: list[str] | None = None, course: CourseDir = course_dir.COURSE) -> list[Row]:
    expected = {(s.student, s.assignment): s.expected_score
                for a in assignments or course_dir.assignments() for s in samples.load(a)}
    out = []
    with Gradebook(course.db_url) as gb:
        for assignment in assignments or course_dir.assignments():
            try:
                gb.find_assignment(assignment)
            except MissingEntry:
                continue
            for student in sorted(s.id for s in gb.students):
                try:
                    submission = gb.find_submission(assignment, student)
                except MissingEntry:
                    continue
                auto, auto_max, pending = 0.0, 0.0, 0.0
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        if grade.cell.cell_type == "code":
                            auto += grade.score
                            auto_max += grade.max_score
                        elif grade.needs_manual_grade:
                            pending += grade.max_score
                # partial credit: cells score to the hundredth; their sum, not float noise, is the score
                out.append(Row(student, assignment, round(auto, 2), auto_max, pending,
                               expected.get((student, assignment))))
    return out


def table(found: list[Row]) -> str:
    rows = [[r.assignment, r.student, f"{r.auto_score:g} / {r.auto_max:g}",
             f"{r.manual_pending:g} pts" if r.manual_pending else "-",
             "" if r.expected is None else f"{r.expected:g} {'ok' if r.expected == r.auto_score else 'MISMATCH'}"]
            for r in found]
    return text_table.render(["assignment", "student", "auto score", "manual pending", "expected"], rows,
                             right=frozenset({2, 3, 4}))


def trust_notes(assignments: list[str] | None = None) -> str:
    """Which test cells' points do not come from a comparison with a withheld fixture value
    (empty: `make fixtures` refuses such cells; an out-of-date judge file would show them here)."""
    from course import settings
    from staff.grading import cell_checks

    lines = []
    for assignment in assignments or course_dir.assignments():
        try:
            specs = cell_checks.load_checks(assignment, settings.current().fixtures)
        except cell_checks.ChecksUnavailable as error:
            lines.append(f"{assignment}: {error}")
            continue
        cells = cell_checks.unpaid_cells(specs)
        if cells:
            lines.append(f"{assignment}: test cells whose points a kernel could influence (no withheld value): "
                         f"{', '.join(cells)}")
    return "\n".join(lines)


def test_pass_rates(course: CourseDir = course_dir.COURSE) -> dict[str, dict[str, tuple[int, int]]]:
    """assignment -> graded test cell -> (submissions with full points, submissions graded)."""
    rates: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    with Gradebook(course.db_url) as gb:
        for assignment in gb.assignments:
            for submission in assignment.submissions:
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        if grade.cell.cell_type != "code" or grade.auto_score is None:
                            continue
                        counts = rates[assignment.name][grade.name]
                        counts[0] += grade.score >= grade.max_score
                        counts[1] += 1
    return {a: {t: (c[0], c[1]) for t, c in tests.items()} for a, tests in rates.items()}


def write_report(course: CourseDir = course_dir.COURSE, out: Path | None = None) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = out or course.root / "reports"
    out.mkdir(parents=True, exist_ok=True)
    found, status, rates = rows(course=course), load_status(course), test_pass_rates(course)
    assignments = sorted({r.assignment for r in found} | set(rates))
    figures = []

    fig, axes = plt.subplots(1, max(1, len(assignments)), figsize=(4.2 * max(1, len(assignments)), 3.2),
                             squeeze=False)
    for ax, assignment in zip(axes[0], assignments):
        scores = [r.auto_score for r in found if r.assignment == assignment]
        top = max((r.auto_max for r in found if r.assignment == assignment), default=1) or 1
        ax.hist(scores, bins=min(10, max(1, len(set(scores)))), range=(0, top), color="#4c72b0")
        ax.set(title=f"{assignment}: automatic score", xlabel=f"points (of {top:g})", ylabel="submissions")
    fig.tight_layout()
    figures.append(("Score distribution per assignment", "scores.png", fig))

    labels = [(a, t) for a in assignments for t in rates.get(a, {})]
    fig, ax = plt.subplots(figsize=(8, 0.28 * len(labels) + 1.2))
    share = [rates[a][t][0] / rates[a][t][1] for a, t in labels]
    ax.barh(range(len(labels)), share, color=["#c44e52" if v < 0.5 else "#55a868" for v in share])
    ax.set_yticks(range(len(labels)), [f"{a} · {t}" for a, t in labels], fontsize=8)
    ax.invert_yaxis()
    ax.set(xlim=(0, 1), xlabel="share of submissions with full points", title="Pass rate of every graded test")
    fig.tight_layout()
    figures.append(("Pass rate of every graded test", "pass_rates.png", fig))

    timed = sorted(status.values(), key=lambda o: -o["seconds"])
    fig, ax = plt.subplots(figsize=(8, 0.25 * len(timed) + 1.2))
    ax.barh(range(len(timed)), [o["seconds"] for o in timed], color="#8172b2")
    ax.set_yticks(range(len(timed)), [f"{o['assignment']} · {o['student']}" for o in timed], fontsize=8)
    ax.invert_yaxis()
    ax.set(xlabel="seconds", title="Grading time per submission")
    fig.tight_layout()
    figures.append(("Grading time per submission", "grading_time.png", fig))

    parts = ["<!doctype html><meta charset='utf-8'><title>Instructor report</title>",
             "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}</style>",
             "<h1>Instructor report</h1>"]
    if (out / similarity.FOLDER / "index.html").exists():  # `make similarity` has been run
        parts.append(f"<p><a href='{similarity.FOLDER}/index.html'>Similar submissions</a> (<code>make "
                     "similarity</code>): pairs whose code is alike, flagged for a human; no grade is changed.</p>")
    attention = [o for o in status.values() if o["status"] != "graded"]
    parts.append(f"<h2>Submissions to look at ({len(attention)})</h2>")
    if attention:
        parts.append("<table><tr><th>assignment</th><th>student</th><th>status</th><th>reason</th></tr>")
        parts += [f"<tr><td>{html.escape(o['assignment'])}</td><td>{html.escape(o['student'])}</td>"
                  f"<td>{html.escape(o['status'])}</td><td>{html.escape(o['reason'])}</td></tr>"
                  for o in sorted(attention, key=lambda o: (o["status"] != "flagged", o["assignment"], o["student"]))]
        parts.append("</table>")
    else:
        parts.append("<p>None: every submission graded normally.</p>")
    for title, name, fig in figures:
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        parts.append(f"<h2>{html.escape(title)}</h2><img src='{name}' alt='{html.escape(title)}'>")
    parts.append("<h2>Scores</h2><pre>" + html.escape(table(found)) + "</pre>")
    from staff.grading import regrade  # make autograde STUDENT=... ASSIGNMENT=...: who regraded what, and the score change

    regrades = regrade.entries(course)
    parts.append(f"<h2>Regrades ({len(regrades)})</h2>" + (f"<pre>{html.escape(regrade.table(regrades))}</pre>"
                                                           if regrades else "<p>None.</p>"))
    report = out / "report.html"
    report.write_text("\n".join(parts) + "\n")
    return report
