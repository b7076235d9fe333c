"""What the gradebook says: the per-student score table, and the instructor report.

The report opens with a summary (when it was written, from which commit of the course, and per
assignment how many submissions are graded, held for a TA's decision on flags, need a look or could
not be graded, with the mean score); every submission it lists links to its grading page in the
formgrader (``FORMGRADER_URL``), the page where a TA decides on its flags, and its feedback page.
Its charts stay readable at any class size (distributions, never a bar per submission).

The table (``make demo``'s last step) shows automatic points and pending manual grades apart,
so a free-text answer that no TA has graded yet is never mistaken for a zero; bundled samples
are compared with the score their file promises. The report (``reports/report.html`` with PNG
figures) shows the score distribution of each assignment, the pass rate of every graded test
(which exercise the class struggles with), grading time per submission, and every submission
whose status needs a human (flagged, repaired, timeout, kernel died, disk quota, invalid notebook,
grader error) with its reasons one per line, the scores as a table (one row per submission,
sortable, filtered by assignment and status), the written answers that quote another variant's
numbers than the student's own (:mod:`staff.grading.integrity.variants`) and the regrade log
(:mod:`regrade`); it links
``make similarity``'s report when there is one. The page fits a laptop's window
(tests/e2e/test_report.py, in Chromium).
Student ids and reasons (which quote what students wrote) are shown as text, each reason's item
cut at a length (:func:`staff.grading.student_text.inert_html`).
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import (
    Assignment,
    BaseCell,
    Grade,
    Gradebook,
    MissingEntry,
    SubmittedAssignment,
    SubmittedNotebook,
)

from course import settings
from staff import course_dir, text_table
from staff.course_dir import CourseDir
from staff.grading.gradebook import flag_decisions
from staff.grading.integrity import similarity
from staff.grading.status import load_status
from staff.grading.student_text import inert_html


@dataclass
class Row:
    student: str
    assignment: str
    auto_score: float
    auto_max: float
    manual_pending: float  # points of free-text answers still waiting for a TA
    expected: float | None  # for bundled samples


def _grades(course: CourseDir, assignments: list[str] | None = None) -> list[tuple]:
    """(assignment, student, graded cell, its type, score, maximum, automatic score, needs a TA) of
    every grade of every submission, in one query; a submission with no grade yet is one row of
    Nones after its assignment and student. Walking nbgrader's objects instead loads each
    submission's notebooks, grades and cells one query at a time: 1,926 queries for the 61 bundled
    samples (0.43 s of CPU against 0.01 s), each a round trip when the gradebook is PostgreSQL."""
    with Gradebook(course.db_url) as gb:
        query = (
            gb.db.query(
                Assignment.name,
                SubmittedAssignment.student_id,
                BaseCell.name,
                Grade.cell_type,
                Grade.score,
                Grade.max_score,
                Grade.auto_score,
                Grade.needs_manual_grade,
            )
            .select_from(SubmittedAssignment)
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
            .outerjoin(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .outerjoin(Grade, Grade.notebook_id == SubmittedNotebook.id)
            .outerjoin(BaseCell, Grade.cell_id == BaseCell.id)
        )
        if assignments is not None:
            query = query.filter(Assignment.name.in_(assignments))
        return query.all()


def rows(
    assignments: list[str] | None = None,
    course: CourseDir = course_dir.COURSE,
    expected: Mapping[tuple[str, str], float] | None = None,
) -> list[Row]:
    """Each submission's automatic and pending manual points; ``expected``: {(student, assignment):
    score} of the bundled samples, joined where the demo's table is printed (staff/cli.py)."""
    expected = expected or {}
    names = assignments or course_dir.assignments()
    points: dict[tuple[str, str], list[float]] = {}
    for assignment, student, _, cell_type, score, max_score, _, needs_manual in _grades(course, names):
        total = points.setdefault((assignment, student), [0.0, 0.0, 0.0])  # auto, its maximum, pending
        if cell_type == "code":
            total[0] += score
            total[1] += max_score
        elif cell_type is not None and needs_manual:  # None: a submission with no grade yet
            total[2] += max_score
    order = {name: i for i, name in enumerate(names)}
    return [
        # partial credit: cells score to the hundredth; their sum, not float noise, is the score
        Row(student, assignment, round(auto, 2), auto_max, pending, expected.get((student, assignment)))
        for (assignment, student), (auto, auto_max, pending) in sorted(
            points.items(), key=lambda item: (order[item[0][0]], item[0][1])
        )
    ]


def table(found: list[Row]) -> str:
    rows = [
        [
            r.assignment,
            r.student,
            f"{r.auto_score:g} / {r.auto_max:g}",
            f"{r.manual_pending:g} pts" if r.manual_pending else "-",
            ""
            if r.expected is None
            else f"{r.expected:g} {'ok' if r.expected == r.auto_score else 'MISMATCH'}",
        ]
        for r in found
    ]
    return text_table.render(
        ["assignment", "student", "auto score", "manual pending", "expected"],
        rows,
        right=frozenset({2, 3, 4}),
    )


def trust_notes(assignments: list[str] | None = None) -> str:
    """Which test cells' points do not come from a comparison with a withheld fixture value
    (empty: `make fixtures` refuses such cells; an out-of-date judge file would show them here)."""
    from course import settings
    from staff.grading.judging import cell_checks

    lines = []
    for assignment in assignments or course_dir.assignments():
        try:
            specs = cell_checks.load_checks(assignment, settings.current().fixtures)
        except cell_checks.ChecksUnavailable as error:
            lines.append(f"{assignment}: {error}")
            continue
        cells = cell_checks.unpaid_cells(specs)
        if cells:
            lines.append(
                f"{assignment}: test cells whose points a kernel could influence (no withheld value): "
                f"{', '.join(cells)}"
            )
    return "\n".join(lines)


def test_pass_rates(course: CourseDir = course_dir.COURSE) -> dict[str, dict[str, tuple[int, int]]]:
    """assignment -> graded test cell -> (submissions with full points, submissions graded)."""
    rates: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for assignment, _, cell, cell_type, score, max_score, auto_score, _ in _grades(course):
        if cell_type != "code" or auto_score is None:
            continue
        counts = rates[assignment][cell]
        counts[0] += score >= max_score
        counts[1] += 1
    return {a: {t: (c[0], c[1]) for t, c in tests.items()} for a, tests in rates.items()}


#: The scores table sorts on a click of its header and filters by assignment and status (no
#: library: the page is a file an instructor opens from disk, offline).
_TABLE_SCRIPT = """
document.querySelectorAll('table.sortable').forEach(table => {
  const body = table.tBodies[0];
  table.tHead.querySelectorAll('th').forEach((th, column) => th.addEventListener('click', () => {
    const down = th.dataset.order !== 'up', numeric = th.classList.contains('num');
    table.tHead.querySelectorAll('th').forEach(other => delete other.dataset.order);
    th.dataset.order = down ? 'up' : 'down';
    const key = row => row.cells[column].dataset.sort ?? row.cells[column].textContent;
    const rows = [...body.rows].sort((a, b) => numeric ? key(a) - key(b) : key(a).localeCompare(key(b)));
    if (!down) rows.reverse();
    body.append(...rows);
  }));
});
const scores = document.getElementById('scores');
const pick = {assignment: document.getElementById('by-assignment'), status: document.getElementById('by-status')};
function filter() {
  let shown = 0;
  for (const row of scores.tBodies[0].rows) {
    const keep = Object.entries(pick).every(([key, box]) => !box.value || row.dataset[key] === box.value);
    row.hidden = !keep; shown += keep;
  }
  document.getElementById('shown').textContent = shown;
}
Object.values(pick).forEach(box => box && box.addEventListener('change', filter));
"""
_STYLE = (
    "body{font-family:sans-serif;max-width:75em;margin:2em auto;padding:0 1em}"
    "img{max-width:100%;height:auto}table{border-collapse:collapse;width:100%}"
    "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top;overflow-wrap:anywhere}"
    "td:nth-child(-n+3){white-space:nowrap}th{background:#f4f4f4}table.sortable th{cursor:pointer}"
    "td.num,th.num{text-align:right}ul{margin:0;padding-left:1.2em}.legend{color:#555;font-size:.9em}"
    "pre{white-space:pre-wrap;overflow-wrap:anywhere}"
    "th[data-order=up]::after{content:' \\25B2'}th[data-order=down]::after{content:' \\25BC'}"
)
#: The pass-rate chart's colours: tests most of the class failed, and the rest.
HARD, PASSED = "#c44e52", "#55a868"
#: Reasons shown before the rest fold away (a zero-work submission has eighteen).
FIRST_REASONS = 3


def reason_items(reason: str) -> list[str]:
    """A status reason as its items: the grader joins them with "; ", also inside parentheses
    (the cells whose records were rejected), which stay with their item."""
    text = reason.removeprefix("for manual review: ")
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if depth == 0 and text.startswith("; ", i):
            items.append(text[start:i])
            start = i + 2
    return [item.strip() for item in [*items, text[start:]] if item.strip()]


def _reasons_html(reason: str) -> str:
    items = [f"<li>{inert_html(item)}</li>" for item in reason_items(reason)]
    if len(items) <= FIRST_REASONS + 1:
        return f"<ul>{''.join(items)}</ul>"
    return (
        f"<ul>{''.join(items[:FIRST_REASONS])}</ul><details><summary>{len(items) - FIRST_REASONS} more"
        f"</summary><ul>{''.join(items[FIRST_REASONS:])}</ul></details>"
    )


def _figures(
    found: list[Row], status: dict, rates: dict, assignments: list[str], out: Path
) -> list[tuple[str, str]]:
    """The report's figures, saved into ``out``: (title, file name)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = []
    columns = min(3, max(1, len(assignments)))  # three histograms a row: the page fits a laptop's window
    lines = -(-max(1, len(assignments)) // columns)
    fig, axes = plt.subplots(lines, columns, figsize=(4.0 * columns, 3.0 * lines), squeeze=False)
    for ax in axes.flat[len(assignments) :]:
        ax.set_visible(False)
    for ax, assignment in zip(axes.flat, assignments):
        scores = [r.auto_score for r in found if r.assignment == assignment]
        top = max((r.auto_max for r in found if r.assignment == assignment), default=1) or 1
        ax.hist(scores, bins=min(10, max(1, len(set(scores)))), range=(0, top), color="#4c72b0")
        ax.set(title=f"{assignment}", xlabel=f"automatic points (of {top:g})", ylabel="submissions")
        ax.yaxis.get_major_locator().set_params(integer=True)  # submissions come whole
    figures.append(("Score distribution per assignment", "scores.png", fig))

    labels = [(a, t) for a in assignments for t in rates.get(a, {})]
    fig, ax = plt.subplots(figsize=(8, 0.28 * len(labels) + 1.2))
    share = [rates[a][t][0] / rates[a][t][1] for a, t in labels]
    ax.barh(range(len(labels)), share, color=[HARD if v < 0.5 else PASSED for v in share])
    ax.set_yticks(range(len(labels)), [f"{a} · {t}" for a, t in labels], fontsize=8)
    ax.invert_yaxis()
    ax.set(
        xlim=(0, 1), xlabel="share of submissions with full points", title="Pass rate of every graded test"
    )
    from matplotlib.patches import Patch

    ax.legend(
        handles=[
            Patch(color=HARD, label="under half have full points"),
            Patch(color=PASSED, label="half or more"),
        ],
        loc="lower right",
        fontsize=8,
    )
    figures.append(("Pass rate of every graded test", "pass_rates.png", fig))

    # a box per assignment: readable at 20 submissions or 2,000 (a bar each grows with the class)
    timed = [(a, [o["seconds"] for o in status.values() if o["assignment"] == a]) for a in assignments]
    timed = [(a, seconds) for a, seconds in timed if seconds]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(timed) + 1.4))
    if timed:
        ax.boxplot([seconds for _, seconds in timed], vert=False, whis=(0, 100), widths=0.5)
        ax.set_yticks(
            range(1, len(timed) + 1), [f"{a} ({len(seconds):,})" for a, seconds in timed], fontsize=8
        )
        ax.invert_yaxis()
    ax.set(
        xlabel="seconds per submission (box: middle half; line: median; whiskers: fastest and slowest)",
        title="Grading time per submission, per assignment (how many)",
    )
    figures.append(("Grading time per submission", "grading_time.png", fig))
    for _, name, fig in figures:
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
    return [(title, name) for title, name, _ in figures]


def _scores_html(found: list[Row], status: dict) -> list[str]:
    """One row per submission: sortable, filterable by assignment and status."""

    def state(r: Row) -> str:
        return status.get((r.student, r.assignment), {}).get("status", "-")

    def options(values: set[str]) -> str:
        return "".join(f"<option>{html.escape(v)}</option>" for v in sorted(values))

    parts = [
        f"<h2>Scores (<span id='shown'>{len(found)}</span> of {len(found)} submissions)</h2><p>"
        f"<label>assignment <select id='by-assignment'><option value=''>all</option>"
        f"{options({r.assignment for r in found})}</select></label> "
        f"<label>status <select id='by-status'><option value=''>all</option>"
        f"{options({state(r) for r in found})}</select></label> (click a column's name to sort)</p>",
        "<table id='scores' class='sortable'><thead><tr><th>assignment</th><th>student</th><th>status</th>"
        "<th class='num'>automatic points</th><th class='num'>of</th><th class='num'>manual pending</th>"
        "<th>expected (samples)</th></tr></thead><tbody>",
    ]
    for r in found:
        expected = (
            ""
            if r.expected is None
            else f"{r.expected:g} {'ok' if r.expected == r.auto_score else 'MISMATCH'}"
        )
        parts.append(
            f"<tr data-assignment='{html.escape(r.assignment)}' data-status='{html.escape(state(r))}'>"
            f"<td>{html.escape(r.assignment)}</td><td>{inert_html(r.student)}</td>"
            f"<td>{html.escape(state(r))}</td><td class='num'>{r.auto_score:g}</td>"
            f"<td class='num'>{r.auto_max:g}</td><td class='num'>{r.manual_pending:g}</td>"
            f"<td>{expected}</td></tr>"
        )
    return parts + ["</tbody></table>", f"<script>{_TABLE_SCRIPT}</script>"]


def write_report(
    course: CourseDir = course_dir.COURSE,
    out: Path | None = None,
    expected: Mapping[tuple[str, str], float] | None = None,
) -> Path:
    out = out or course.root / "reports"
    out.mkdir(parents=True, exist_ok=True)
    found, status, rates = (
        rows(course=course, expected=expected),
        load_status(course),
        test_pass_rates(course),
    )
    assignments = sorted({r.assignment for r in found} | set(rates))
    figures = _figures(found, status, rates, assignments, out)

    held, decided = flag_decisions.held(course), flag_decisions.current(course)
    parts = [
        "<!doctype html><meta charset='utf-8'><meta name='viewport' content='width=device-width'>"
        f"<title>Instructor report</title><style>{_STYLE}</style>",
        "<h1>Instructor report</h1>",
        *_summary(found, status, held, assignments),
    ]
    if (out / similarity.FOLDER / "index.html").exists():  # `make similarity` has been run
        parts.append(
            f"<p><a href='{similarity.FOLDER}/index.html'>Similar submissions</a> (<code>make "
            "similarity</code>): pairs whose code is alike, flagged for a human; no grade is changed.</p>"
        )
    attention = [o for o in status.values() if o["status"] != "graded"]
    parts.append(f"<h2 id='look'>Submissions to look at ({len(attention)})</h2>")
    if attention:
        pages = _grading_pages(course, attention)
        base = settings.current().formgrader_url
        parts.append(
            f"<p class='legend'>Links open the formgrader at {html.escape(base)} (<code>FORMGRADER_URL</code>) and "
            "the feedback written by <code>make feedback</code>; click a column's name to sort.</p>"
            "<table id='attention' class='sortable'><thead><tr><th>assignment</th><th>student</th><th>status</th>"
            "<th>why</th><th>review</th><th>open</th></tr></thead><tbody>"
        )
        for o in sorted(attention, key=lambda o: (o["status"] != "flagged", o["assignment"], o["student"])):
            key = (o["student"], o["assignment"])
            review = "held: a TA decides" if key in held else decided[key].summary() if key in decided else ""
            parts.append(
                f"<tr><td>{html.escape(o['assignment'])}</td><td>{inert_html(o['student'])}</td>"
                f"<td>{html.escape(o['status'])}</td><td>{_reasons_html(o['reason'])}</td>"
                f"<td>{inert_html(review)}</td><td>{_links(course, out, base, key, pages.get(key), o['status'])}</td></tr>"
            )
        parts.append("</tbody></table>")
    else:
        parts.append("<p>None: every submission graded normally.</p>")
    parts += _variant_findings(course, assignments)
    legends = {
        "pass_rates.png": "<p class='legend'>Red: fewer than half of the graded submissions have the test's full "
        "points (the exercise the class struggles with); green: half or more.</p>"
    }
    parts += [
        f"<h2>{html.escape(title)}</h2><img src='{name}' alt='{html.escape(title)}'>{legends.get(name, '')}"
        for title, name in figures
    ]
    parts += _scores_html(found, status)
    from staff.grading import regrade

    regrades = regrade.entries(course)
    parts.append(
        f"<h2>Regrades ({len(regrades)})</h2>"
        + (f"<pre>{html.escape(regrade.table(regrades))}</pre>" if regrades else "<p>None.</p>")
    )
    report = out / "report.html"
    report.write_text("\n".join(parts) + "\n")
    return report


def _variant_findings(course: CourseDir, assignments: list[str]) -> list[str]:
    """Answers that quote numbers of another variant than the student's own (no grade changes)."""
    from staff.grading.integrity import variants

    found = variants.findings(course, assignments)
    parts = [f"<h2 id='variants'>Answers about another variant ({len(found)})</h2>"]
    if not found:
        return parts + ["<p>None: every written answer checked quotes only its own run's numbers.</p>"]
    parts.append(
        "<p class='legend'>Each student runs their own variant of the experiments the written questions ask "
        "about (<code>course/variant.py</code>). These answers quote numbers their own run did not print; "
        "no grade is changed: the TA grading the answer decides.</p>"
        "<table id='variant-findings' class='sortable'><thead><tr><th>assignment</th><th>student</th>"
        "<th>question</th><th>what</th></tr></thead><tbody>"
    )
    for f in found:
        parts.append(
            f"<tr><td>{html.escape(f.assignment)}</td><td>{inert_html(f.student)}</td>"
            f"<td>{html.escape(f.question)}</td><td>{inert_html(f.reason)}</td></tr>"
        )
    return parts + ["</tbody></table>"]


def _commit() -> str:
    """The course checkout's commit (short), or "unknown" outside a git checkout."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=course_dir.ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown"


def _summary(found: list[Row], status: dict, held: set, assignments: list[str]) -> list[str]:
    """When and from what the report was written, and per assignment what needs doing."""
    from datetime import UTC, datetime

    from staff.grading.status import NOT_GRADED

    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"<p>Written {when} from commit <code>{html.escape(_commit())}</code> of the course. "
        "<a href='#look'>Submissions to look at</a> · <a href='#scores'>all scores</a></p>",
        "<table id='summary'><thead><tr><th>assignment</th><th class='num'>submissions</th>"
        "<th class='num'>graded</th><th class='num'>held (flags)</th><th class='num'>to look at</th>"
        "<th class='num'>not graded</th><th class='num'>manual pending</th><th class='num'>mean automatic score</th>"
        "</tr></thead><tbody>",
    ]
    totals = [0] * 6
    for a in [*assignments, None]:
        if a is None:
            counts, mean = totals, ""
            label = "<strong>all</strong>"
        else:
            mine = [o for (_, oa), o in status.items() if oa == a]
            rows_a = [r for r in found if r.assignment == a]
            counts = [
                len(mine),
                sum(o["status"] in ("graded", "repaired") for o in mine),
                sum((o["student"], a) in held for o in mine),
                sum(
                    o["status"] not in ("graded", "repaired", *NOT_GRADED) and (o["student"], a) not in held
                    for o in mine
                ),
                sum(o["status"] in NOT_GRADED for o in mine),
                sum(r.manual_pending > 0 for r in rows_a),
            ]
            totals = [t + c for t, c in zip(totals, counts, strict=True)]
            scored = [r.auto_score / r.auto_max for r in rows_a if r.auto_max]
            mean = f"{100 * sum(scored) / len(scored):.1f} %" if scored else "-"
            label = html.escape(a)
        cells = "".join(f"<td class='num'>{c:,}</td>" for c in counts)
        lines.append(f"<tr><td>{label}</td>{cells}<td class='num'>{mean}</td></tr>")
    lines.append(
        "</tbody></table><p class='legend'>Held: flagged by the integrity scan, no points shown or exported "
        "until a TA decides. To look at: timeouts, killed kernels, repaired notebooks and flags a TA has "
        "decided. Not graded: invalid notebooks and grader errors (no points computed). Manual pending: "
        "free-text answers no TA has graded. Mean: automatic points over the automatic maximum.</p>"
    )
    return lines


def _grading_pages(course: CourseDir, outcomes: list[dict]) -> dict[tuple[str, str], str]:
    """``{(student, assignment): the id of its submitted notebook}``, the formgrader's grading page."""
    found = {}
    with Gradebook(course.db_url) as gb:
        for o in outcomes:
            try:
                submission = gb.find_submission(o["assignment"], o["student"])
            except MissingEntry:
                continue
            if submission.notebooks:
                found[(o["student"], o["assignment"])] = submission.notebooks[0].id
    return found


def _links(
    course: CourseDir, out: Path, base: str, key: tuple[str, str], notebook: str | None, state: str
) -> str:
    from os.path import relpath
    from urllib.parse import quote

    student, assignment = key
    links = []
    if notebook:
        links.append(
            f"<a href='{html.escape(base)}/formgrader/submissions/{quote(notebook)}/'>grading page</a>"
        )
    if state == "flagged":
        flags = f"{base}/formgrader/course/flags/{quote(assignment, safe='')}/{quote(student, safe='')}"
        links.append(f"<a href='{html.escape(flags, quote=True)}'>decide on flags</a>")
    page = course.feedback / student / assignment / f"{assignment}.html"
    if page.is_file():
        links.append(f"<a href='{html.escape(quote(relpath(page, out)), quote=True)}'>feedback</a>")
    return " · ".join(links)
