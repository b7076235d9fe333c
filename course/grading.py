"""The instructor's grading steps, each one nbgrader command: autograde, feedback, export."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from course import nbgrader_cli, paths

def autograde(assignments: list[str] | None = None, course: paths.CourseDir = paths.COURSE) -> None:
    for assignment in assignments or paths.assignments():
        if not any(course.submitted.glob(f"*/{assignment}")):
            print(f"autograde: no submissions for {assignment} in submitted/")
            continue
        # ERROR level: nbgrader warns, for every submission, that the hidden-test cells it restores
        # differ from the released ones, which is exactly what hidden tests do.
        nbgrader_cli.run("autograde", assignment, "--force", "--log-level=ERROR", course=course)


def feedback(assignments: list[str] | None = None, course: paths.CourseDir = paths.COURSE) -> None:
    for assignment in assignments or paths.assignments():
        if any(course.autograded.glob(f"*/{assignment}")):
            nbgrader_cli.run("generate_feedback", assignment, "--force", "--log-level=WARN", course=course)


def export(course: paths.CourseDir = paths.COURSE) -> Path:
    csv = course.root / "grades.csv"
    nbgrader_cli.run("export", f"--to={csv}", "--log-level=WARN", course=course)
    print(f"export: wrote {csv}")
    return csv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.grading", description=__doc__.split("\n")[0])
    parser.add_argument("step", choices=["autograde", "feedback", "export"])
    parser.add_argument("assignments", nargs="*", help="default: every assignment")
    args = parser.parse_args(argv)
    if args.step == "export":
        export()
    else:
        {"autograde": autograde, "feedback": feedback}[args.step](args.assignments or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
