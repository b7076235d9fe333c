"""The instructor's grading steps, each one nbgrader command: autograde, feedback, export."""
from __future__ import annotations

import argparse
import sys

from course import nbgrader_cli, paths

GRADES_CSV = paths.ROOT / "grades.csv"


def autograde(assignments: list[str] | None = None) -> None:
    for assignment in assignments or paths.assignments():
        if not any(paths.SUBMITTED.glob(f"*/{assignment}")):
            print(f"autograde: no submissions for {assignment} in submitted/")
            continue
        # ERROR level: nbgrader warns, for every submission, that the hidden-test cells it restores
        # differ from the released ones, which is exactly what hidden tests do.
        nbgrader_cli.run("autograde", assignment, "--force", "--log-level=ERROR")


def feedback(assignments: list[str] | None = None) -> None:
    for assignment in assignments or paths.assignments():
        if any(paths.AUTOGRADED.glob(f"*/{assignment}")):
            nbgrader_cli.run("generate_feedback", assignment, "--force", "--log-level=WARN")


def export() -> None:
    nbgrader_cli.run("export", f"--to={GRADES_CSV}", "--log-level=WARN")
    print(f"export: wrote {GRADES_CSV.relative_to(paths.ROOT)}")


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
