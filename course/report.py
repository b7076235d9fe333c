"""What the gradebook says: per-student scores, printed as a table (``make demo``'s last step).

Automatic points and pending manual grades are shown apart, so a free-text answer that no TA
has graded yet is never mistaken for a zero. Bundled samples are compared with the score their
file promises.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from nbgrader.api import Gradebook, MissingEntry

from course import paths, samples


@dataclass
class Row:
    student: str
    assignment: str
    auto_score: float
    auto_max: float
    manual_pending: float   # points of free-text answers still waiting for a TA
    expected: float | None  # for bundled samples


def rows(assignments: list[str] | None = None, course: paths.CourseDir = paths.COURSE) -> list[Row]:
    expected = {(s.student, s.assignment): s.expected_score
                for a in assignments or paths.assignments() for s in samples.load(a)}
    out = []
    with Gradebook(course.db_url) as gb:
        for assignment in assignments or paths.assignments():
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
                out.append(Row(student, assignment, auto, auto_max, pending,
                               expected.get((student, assignment))))
    return out


def table(found: list[Row]) -> str:
    header = f"{'assignment':<14} {'student':<20} {'auto score':>12} {'manual pending':>15} {'expected':>9}"
    lines = [header, "-" * len(header)]
    for r in found:
        mark = "" if r.expected is None else f"{r.expected:g} {'ok' if r.expected == r.auto_score else 'MISMATCH'}"
        lines.append(f"{r.assignment:<14} {r.student:<20} {f'{r.auto_score:g} / {r.auto_max:g}':>12} "
                     f"{f'{r.manual_pending:g} pts' if r.manual_pending else '-':>15} {mark:>9}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.report", description=__doc__.split("\n")[0])
    parser.add_argument("assignments", nargs="*")
    found = rows(parser.parse_args(argv).assignments or None)
    print(table(found) if found else "report: no graded submissions (run `make autograde`)")
    return 1 if any(r.expected is not None and r.expected != r.auto_score for r in found) else 0


if __name__ == "__main__":
    sys.exit(main())
