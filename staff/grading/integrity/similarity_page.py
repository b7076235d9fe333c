"""The HTML report of ``make similarity`` (``reports/similarity/index.html``): per assignment, a
histogram of every pair's similarity (a copy stands out on the right of a mass near zero), the
groups of students that flagged pairs link, the pairs ranked by similarity with both students'
scores, and one page per pair with both submissions' answer cells side by side, the lines the other
holds too highlighted. It is for a human to read; nothing here writes to the gradebook.

Everything a student wrote or named (ids, cell names, code) is shown as text through
:func:`staff.grading.student_text.inert_html`: student code never runs in a reader's browser, and
its control and invisible characters (a bidirectional override that reorders a line) show.
"""

from __future__ import annotations

import html
from pathlib import Path

from staff.grading.student_text import inert_html

_STYLE = (
    "<style>body{font-family:sans-serif;margin:2em auto;max-width:80em}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;"
    "vertical-align:top}tr.flag td{background:#fdecea}pre{margin:0;font-size:12px;white-space:pre-wrap}"
    ".l{display:block;min-height:1.2em}.hit{background:#ffe08a}.n{color:#999;user-select:none}"
    "table.code{width:100%;table-layout:fixed}table.code th:first-child{width:11em}"
    "h3{margin:.6em 0 .2em}</style>"
)
_NOTE = (
    "It flags pairs for a human to look at and changes no grade: similar code is a question to ask, "
    "not a verdict (short exercises have few ways to be written)."
)


def write(results: list, out: Path, top: int = 100) -> Path:
    """Write the report of ``results`` (similarity.Result, their shown pairs' lines matched) into
    ``out``, replacing its pages, and return its index."""
    out.mkdir(parents=True, exist_ok=True)
    parts = [
        "<!doctype html><meta charset='utf-8'><title>Similar submissions</title>",
        _STYLE,
        "<h1>Similar submissions</h1>",
        "<p>Every pair of an assignment's submissions, compared on the code the students wrote: answer "
        "cells only, with the released notebook's lines left out, comments and docstrings dropped, "
        "formatting and the students' own names normalised (so renaming and reordering do not hide a "
        f"copy); fingerprints by copydetect. Similarity is the share of both submissions' code that the "
        f"other holds too. {_NOTE}</p>",
    ]
    for result in results:
        parts += _assignment(result, out, top)
    index = out / "index.html"
    index.write_text("\n".join(parts) + "\n")
    return index


def _assignment(result, out: Path, top: int) -> list[str]:
    name = result.assignment
    folder = out / name
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.html"):  # pages of an earlier run's pairs
        old.unlink()
    flagged = result.flagged
    current = len(result.answers) - result.archived
    parts = [
        f"<h2 id='{html.escape(name)}'>{html.escape(name)}</h2>",
        f"<p>{current} submissions"
        + (f" and {result.archived} from earlier years" if result.archived else "")
        + f"; {len(result.pairs)} pairs compared; <b>{len(flagged)} at or above {result.threshold:g}</b> "
        f"({result.seconds:.1f} s).</p>",
    ]
    if result.empty:
        parts.append(
            f"<p>Nothing written beyond the release (or an unreadable notebook), not compared "
            f"({len(result.empty)}): " + ", ".join(map(inert_html, result.empty)) + ".</p>"
        )
    if result.pairs:
        _histogram(result, out / f"{name}.png")
        parts.append(
            f"<img src='{html.escape(name)}.png' alt='similarity of every pair of {html.escape(name)}'>"
        )
    groups = _groups(flagged)
    if groups:
        parts.append(
            "<h3>Groups linked by flagged pairs</h3><ul>"
            + "".join(f"<li>{len(g)}: {', '.join(map(inert_html, g))}</li>" for g in groups)
            + "</ul>"
        )
    shown = result.shown
    if not shown:
        return parts
    parts.append(
        "<h3>Pairs, most similar first</h3><table><tr><th>#</th><th>similarity</th><th>student</th>"
        "<th>share of it in the other</th><th>score</th><th>student</th><th>share</th><th>score</th>"
        "<th>code</th></tr>"
    )
    for rank, pair in enumerate(shown, 1):
        link = ""
        if rank <= top:
            page = f"{rank}.html"
            (folder / page).write_text(_pair_page(pair, result, rank))
            link = f"<a href='{html.escape(name)}/{page}'>side by side</a>"
        parts.append(
            f"<tr{' class=flag' if pair.score >= result.threshold else ''}><td>{rank}</td>"
            f"<td>{pair.score:.2f}</td><td>{inert_html(pair.a)}</td><td>{pair.shares[0]:.0%}</td>"
            f"<td>{html.escape(result.scores.get(pair.a, '-'))}</td><td>{inert_html(pair.b)}</td>"
            f"<td>{pair.shares[1]:.0%}</td><td>{html.escape(result.scores.get(pair.b, '-'))}</td>"
            f"<td>{link}</td></tr>"
        )
    parts.append("</table>")
    if len(shown) > top:
        parts.append(f"<p>Side by side for the first {top} pairs (<code>--top</code> shows more).</p>")
    return parts


def _pair_page(pair, result, rank: int) -> str:
    a, b = result.answers[pair.a], result.answers[pair.b]
    flag = "flagged" if pair.score >= result.threshold else "not flagged"
    name_a, name_b = inert_html(pair.a), inert_html(pair.b)
    parts = [
        f"<!doctype html><meta charset='utf-8'><title>{html.escape(result.assignment)} #{rank}</title>",
        _STYLE,
        f"<p><a href='../index.html#{html.escape(result.assignment)}'>back to the report</a></p>",
        f"<h1>{html.escape(result.assignment)} #{rank}: {name_a} and {name_b}</h1>",
        f"<p>Similarity <b>{pair.score:.2f}</b> ({flag} at {result.threshold:g}): {pair.shares[0]:.0%} of "
        f"{name_a}'s code is in {name_b}'s, {pair.shares[1]:.0%} of "
        f"{name_b}'s in {name_a}'s. Scores: {name_a} "
        f"{html.escape(result.scores.get(pair.a, '-'))}, {name_b} "
        f"{html.escape(result.scores.get(pair.b, '-'))}. Highlighted: lines whose normalised code the other "
        f"submission holds too (names may differ). {_NOTE}</p>",
        "<table class=code><tr><th></th>"
        + "".join(f"<th>{inert_html(x.label)}</th>" for x in (a, b))
        + "</tr>",
    ]
    for cell in list(dict.fromkeys([*a.cells, *b.cells])):
        parts.append(
            f"<tr><th>{inert_html(cell)}</th>"
            + "".join(
                f"<td>{_code(x.cells.get(cell), hits.get(cell, set()))}</td>"
                for x, hits in zip((a, b), pair.lines)
            )
            + "</tr>"
        )
    return "\n".join(parts + ["</table>"]) + "\n"


def _code(source: str | None, hits: set[int]) -> str:
    if source is None:
        return "<i>no such cell</i>"
    lines = enumerate(source.splitlines(), 1)
    return (
        "<pre>"
        + "".join(
            f"<span class='l{' hit' if number in hits else ''}'><span class=n>{number:3d} </span>"
            f"{inert_html(line, None, lines=True)}</span>"
            for number, line in lines
        )
        + "</pre>"
    )


def _groups(pairs) -> list[list[str]]:
    """Students connected by flagged pairs (a copy passed along a chain shows as one group)."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pair in pairs:
        parent[root(pair.a)] = root(pair.b)
    members: dict[str, list[str]] = {}
    for x in parent:
        members.setdefault(root(x), []).append(x)
    return sorted((sorted(g) for g in members.values()), key=lambda g: (-len(g), g))


def _histogram(result, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3))
    ax.hist([p.score for p in result.pairs], bins=50, range=(0, 1), color="#4c72b0")
    ax.axvline(result.threshold, color="#c44e52", linestyle="--", label=f"threshold {result.threshold:g}")
    ax.set_yscale("log")
    ax.set(
        xlabel="similarity of a pair",
        ylabel="pairs (log scale)",
        title=f"{result.assignment}: every pair's similarity ({len(result.pairs)} pairs)",
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
