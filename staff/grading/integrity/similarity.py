"""``make similarity``: every pair of an assignment's submissions compared on the code its students
wrote, for a human to look at. It flags; it never changes a grade.

No notebook grader reports copying, and the engines that do (MOSS, JPlag, Dolos, compare50,
copydetect) compare files: given a notebook they match its released skeleton and tests in every
pair. So each submission is first reduced to its student's answer code (:mod:`answer_code`: answer
cells only, the released lines left out, comments, formatting and the student's own names
normalised), and copydetect (winnowing over pygments tokens) fingerprints that text and compares
every pair. copydetect was measured against compare50 and Dolos on the cases the tests hold: it
separated copies from independent solutions the widest, and installs from PyPI with nothing the
course does not already pin (compare50 needs attrs < 21, which Jupyter's jsonschema refuses; Dolos
needs Node and a native build). A pair's similarity is the share of both
submissions' fingerprinted code that the other holds too, ``(overlap_a + overlap_b) / (code_a +
code_b)``: a copy scores near 1 however it was renamed or reordered, and a short answer that happens
to match the idiom everyone writes cannot reach the threshold alone. Submissions with nothing
written beyond the release are listed, not compared. Earlier years' submissions (``--archive``) are
compared with this year's, not with each other.

This module is imported by ``cli.py`` to build its parser, so it imports nothing heavy at the top
(copydetect pulls in matplotlib): the command line's ``--help`` stays instant.
"""

from __future__ import annotations

import argparse
import bisect
import io
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

#: Pairs at or above this similarity are flagged: on assignment 1, below what copies score and above what
#: independent solutions and the bundled samples (one author's) score (docs/scaling.md).
THRESHOLD = 0.6
#: copydetect's noise threshold: matches shorter than this many characters of its filtered code are noise.
K = 25
#: Pairs below the threshold still listed in the report, so the reader sees how close the nearest came.
CONTEXT = 10
#: Where the report goes, under the course's reports/ (report.py links it when it is there).
FOLDER = "similarity"
HELP = (
    "compare every pair of an assignment's submissions on the code the students wrote (answer cells, "
    "released code left out, names and formatting normalised): an HTML report for a human; changes no grade"
)


@dataclass
class Pair:
    a: str  # labels: a student of this year, or an archive entry
    b: str
    score: float  # symmetric similarity, 0..1
    shares: tuple[float, float]  # the share of a's code found in b, and of b's in a
    archive: bool = False  # b is an earlier year's submission
    lines: tuple[dict[str, set[int]], dict[str, set[int]]] = field(default_factory=lambda: ({}, {}))


@dataclass
class Result:
    """One assignment's comparison."""

    assignment: str
    threshold: float
    pairs: list  # every compared pair, most similar first
    answers: dict  # label -> answer_code.Answers
    empty: list[str]  # labels with nothing written beyond the release
    archived: int  # archive submissions compared
    scores: dict[str, str]  # student -> "points / max" in the gradebook
    seconds: float = 0.0
    prints: dict = field(default_factory=dict, repr=False)  # label -> its copydetect fingerprint

    @property
    def flagged(self) -> list[Pair]:
        return [p for p in self.pairs if p.score >= self.threshold]

    @property
    def shown(self) -> list[Pair]:
        """The pairs the report lists: every flagged one, and the closest ones below the threshold."""
        return self.pairs[: len(self.flagged) + CONTEXT]


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--assignment",
        action="append",
        dest="assignments",
        metavar="NAME",
        help="compare this assignment's submissions (repeatable; default: every assignment)",
    )
    parser.add_argument(
        "--archive",
        type=Path,
        metavar="DIR",
        help="earlier years' submissions (any folder tree holding <assignment>.ipynb files), "
        "compared with this year's",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=THRESHOLD,
        help=f"flag pairs at or above this similarity, 0 to 1 (default {THRESHOLD})",
    )
    parser.add_argument(
        "--top",
        type=int,
        default=100,
        help="pairs shown with their code side by side, most similar first (default 100)",
    )
    parser.add_argument("--out", type=Path, help=f"report folder (default: reports/{FOLDER}/)")


def command(args: argparse.Namespace) -> int:
    """``python -m staff similarity``: compare, write the report, print a line per assignment."""
    from staff import course_dir

    start = time.perf_counter()
    course = course_dir.COURSE
    if args.archive and not args.archive.is_dir():
        print(f"similarity: the archive {args.archive} is not a folder", file=sys.stderr)
        return 2
    results, index = report(course, args.assignments, args.archive, args.threshold, args.top, args.out)
    if index is None:
        print("similarity: no submissions in submitted/")
        return 0
    for r in results:
        print(
            f"similarity: {r.assignment}: {len(r.answers) - r.archived} submissions"
            + (f" and {r.archived} from the archive" if r.archived else "")
            + f", {len(r.pairs)} pairs compared, {len(r.flagged)} at or above {r.threshold:g}"
            + (f", {len(r.empty)} with nothing written" if r.empty else "")
            + f" ({r.seconds:.1f} s)"
        )
    where = index.relative_to(course.root) if index.is_relative_to(course.root) else index
    print(
        f"similarity: wrote {where} in {time.perf_counter() - start:.1f} s; it flags pairs for a human "
        f"and changes no grade (`make report` links it from reports/report.html)"
    )
    return 0


def report(
    course,
    assignments: list[str] | None = None,
    archive: Path | None = None,
    threshold: float = THRESHOLD,
    top: int = 100,
    out: Path | None = None,
) -> tuple[list[Result], Path | None]:
    """Compare each assignment's submissions and write the report (None: no submissions)."""
    from staff import course_dir
    from staff.grading.integrity import similarity_page

    results = [run(a, course, archive, threshold) for a in assignments or course_dir.assignments()]
    results = [r for r in results if len(r.answers) > r.archived]
    if not results:
        return results, None
    for r in results:  # the pairs shown side by side: which lines each side shares with the other
        for pair in r.shown[:top]:
            matched_lines(pair, r.answers, r.prints)
    return results, similarity_page.write(results, out or course.root / "reports" / FOLDER, top=top)


def run(assignment: str, course, archive: Path | None = None, threshold: float = THRESHOLD) -> Result:
    """Compare every pair of ``assignment``'s submissions in ``course`` (and each with ``archive``)."""
    from staff import course_dir
    from staff.grading.integrity import answer_code

    start = time.perf_counter()
    released = answer_code.release(course_dir.release_notebook(assignment, course.release))
    current = [
        answer_code.answers(path, released, path.parent.parent.name)
        for path in sorted(course.submitted.glob(f"*/{assignment}/{assignment}.ipynb"))
    ]
    past = (
        [
            answer_code.answers(path, released, f"archive: {path.relative_to(archive).parent}")
            for path in sorted(archive.rglob(f"{assignment}.ipynb"))
        ]
        if archive
        else []
    )
    everyone = current + past
    prints = fingerprints([a for a in everyone if a.lines])
    pairs = compare([a for a in current if a.lines], [a for a in past if a.lines], prints)
    return Result(
        assignment,
        threshold,
        pairs,
        {a.label: a for a in everyone},
        [a.label for a in everyone if not a.lines],
        len(past),
        scores(course, assignment),
        time.perf_counter() - start,
        prints,
    )


def fingerprints(answers: list) -> dict:
    """label -> copydetect's fingerprint of its normalised code (answer_code.Answers)."""
    from copydetect import CodeFingerprint

    # copydetect's own tokenizer (pygments) filters the normalised text again: every name becomes V,
    # every string S, whitespace goes; window 1 keeps every k-gram (guarantee threshold = noise threshold).
    return {
        a.label: CodeFingerprint(f"{a.label}.py", K, 1, fp=io.StringIO(a.code), language="python")
        for a in answers
    }


def compare(current: list, past: list, prints: dict) -> list[Pair]:
    """Every pair of ``current`` (answer_code.Answers with code), and each of them with each of
    ``past``, most similar first."""
    from copydetect import compare_files

    pairs = []
    for i, a in enumerate(current):
        for b, old in [(b, False) for b in current[i + 1 :]] + [(b, True) for b in past]:
            fa, fb = prints[a.label], prints[b.label]
            _, (share_a, share_b), _ = compare_files(fa, fb)
            covered = fa.token_coverage + fb.token_coverage
            score = (share_a * fa.token_coverage + share_b * fb.token_coverage) / covered if covered else 0.0
            pairs.append(Pair(a.label, b.label, float(score), (float(share_a), float(share_b)), old))
    pairs.sort(key=lambda p: (-p.score, p.a, p.b))
    return pairs


def matched_lines(pair: Pair, answers: dict, prints: dict) -> Pair:
    """``pair`` with the lines of each side's answer cells (grade id -> line numbers as submitted)
    that the other side holds too: what the report highlights."""
    from copydetect import compare_files

    _, _, slices = compare_files(prints[pair.a], prints[pair.b])
    pair.lines = tuple(_lines(answers[x], s) for x, s in zip((pair.a, pair.b), slices))
    return pair


def _lines(answers, slices) -> dict[str, set[int]]:
    """Character ranges of the normalised text -> the submitted lines they came from."""
    starts, offset = [], 0
    for line in answers.lines:
        starts.append(offset)
        offset += len(line.text) + 1
    found: dict[str, set[int]] = {}
    for begin, end in zip(*slices) if len(slices) else []:
        for index in range(bisect.bisect_right(starts, begin) - 1, bisect.bisect_left(starts, end)):
            line = answers.lines[index]
            found.setdefault(line.cell, set()).update(range(line.first, line.last + 1))
    return found


def scores(course, assignment: str) -> dict[str, str]:
    """student -> "points / max" from nbgrader's gradebook (absent for ungraded submissions)."""
    if course.db_url.startswith("sqlite") and not course.gradebook.exists():
        return {}  # nothing graded yet; opening the gradebook would create one
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course.db_url) as gb:
        try:
            submissions = gb.find_assignment(assignment).submissions
        except MissingEntry:
            return {}
        return {s.student.id: f"{s.score:g} / {s.max_score:g}" for s in submissions}
