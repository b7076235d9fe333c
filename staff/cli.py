"""``python -m staff <command>``: the instructor's one command line (the Makefile calls only this).

Commands, in workflow order: ``new-assignment``, ``fixtures``, ``fixtures-check``, ``fixtures-verify``, ``validate``,
``release``, ``publish``, ``figure``, ``collect``, ``samples``, ``students``, ``autograde``, ``formgrader``,
``hub``, ``feedback``, ``export``, ``report``, ``similarity``, ``solutions``. Heavy modules are imported
inside each command, so ``--help`` is instant.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from course import paths
from staff.grading.integrity import similarity  # light to import: its command and flags live with it


def _fixtures(args) -> int:
    from staff import course_dir
    from staff.authoring import assignments, fixtures
    from staff.grading.judging import cell_checks

    out = args.out or paths.fixtures_dir()
    # Trained fixtures stay as committed unless asked: retraining moves them on another CPU (see
    # staff/authoring/fixtures.py), and the numbers the notebooks quote come from them.
    fixtures.build(out, args.assignments or None, trained_from=None if args.retrain else out)
    for assignment in args.assignments or course_dir.assignments():
        if getattr(assignments.recipe(assignment), "OUTPUTS", None):  # what the judge compares, per test cell
            specs = cell_checks.build_checks(assignment, out)
            print(
                f"fixtures: {cell_checks.checks_file(assignment, out).relative_to(out.parent)}: "
                f"{sum(map(len, specs.values()))} checks in {sum(1 for s in specs.values() if s)} judged cells"
            )
    return 0


def _fixtures_check(args) -> int:
    from staff.authoring import fixtures

    spread = fixtures.Spread()
    problems = fixtures.check(args.root or paths.fixtures_dir(), args.assignments or None, spread)
    for problem in problems:
        print(f"fixtures-check: {problem}", file=sys.stderr)
    for assignment, (share, where) in sorted(spread.worst.items()):
        print(
            f"fixtures-check: {assignment}: "
            + (
                f"values moved by at most {share:.1%} of their grading tolerance ({where})"
                if share
                else "every value as committed"
            )
        )
    for label, share, tolerance in spread.tightest():
        print(
            f"fixtures-check: tightest: {label} moved by {share:.1%} of its grading tolerance "
            f"(atol={tolerance.atol:g}, rtol={tolerance.rtol:g}; the check allows {tolerance.share:.0%})"
        )
    print(
        "fixtures-check: committed fixtures agree with a fresh build (within a share, by default a tenth, of the grading "
        "tolerances)"
        if not problems
        else f"fixtures-check: {len(problems)} difference(s) that could change a grade: after changing a "
        "recipe or a solution, run `make fixtures` and commit the result"
    )
    return 1 if problems else 0


def _fixtures_verify(args) -> int:
    from course import fixtures

    problems = fixtures.verify(args.root or paths.fixtures_dir())
    for problem in problems:
        print(f"fixtures: {problem}", file=sys.stderr)
    print("fixtures: manifest OK" if not problems else "fixtures: run `make fixtures` to rebuild")
    return 1 if problems else 0


def _new_assignment(args) -> int:
    from staff.authoring import new_assignment

    try:
        written = new_assignment.scaffold(args.name)
    except new_assignment.Refused as error:
        print(f"new-assignment: {error}; nothing written", file=sys.stderr)
        return 1
    for path in written:
        print(f"new-assignment: wrote {path.relative_to(paths.ROOT)}")
    print(new_assignment.next_steps(args.name))
    return 0


def _validated(assignments: list[str], kinds: tuple[str, ...]) -> bool:
    from staff.authoring import validate

    problems = validate.validate(assignments or None, kinds=kinds)
    for problem in problems:
        print(f"validate: FAIL {problem}", file=sys.stderr)
    return not problems


def _validate(args) -> int:
    return 0 if _validated(args.assignments, (args.only,) if args.only else ("source", "release")) else 1


def _release(args) -> int:
    """Check the source, generate release/ atomically, check the release."""
    from staff import course_dir
    from staff.authoring import release

    if not _validated(args.assignments, ("source",)):
        return 1
    for notebook in release.generate(args.assignments or None):
        print(f"release: wrote {notebook.relative_to(course_dir.COURSE.root)}")
    return 0 if _validated(args.assignments, ("release",)) else 1


def _publish(args) -> int:
    from staff.authoring import publish

    return publish.main(args.out or publish.BUNDLE, args.as_of)


def _figure(args) -> int:
    from staff.authoring import assignments

    # Each recipe with a README figure draws it from its notebook's solution (03: attention maps,
    # 05: the KV cache's measured speed-up); a path redraws only the first into that file.
    drawn = (
        []
        if args.architecture
        else [
            r for r in map(assignments.recipe, assignments.assignments()) if hasattr(r, "save_readme_figure")
        ]
    )
    for recipe in drawn[:1] if args.path else drawn:
        path = recipe.save_readme_figure(args.path or recipe.README_FIGURE)
        print(f"figure: wrote {path} ({path.stat().st_size / 1024:.0f} KB)")
    if args.path:
        return 0
    from staff.authoring import architecture_cell, diagram_kit

    # The architecture diagrams are drawn from code alone (no model runs) and embedded into the
    # source notebooks as cell attachments; `make release` then carries them into release/.
    for path in diagram_kit.draw_all():
        print(f"figure: wrote {path} ({path.stat().st_size / 1024:.0f} KB)")
    for assignment, changed in architecture_cell.embed_all().items():
        print(
            f"figure: source/{assignment}: architecture cell {'embedded' if changed else 'already current'}"
        )
    return 0


def _collect(args) -> int:
    from staff.authoring import collect

    if not args.zip.is_file():
        print(f"collect: {args.zip} does not exist", file=sys.stderr)
        return 2
    from staff import course_dir
    from staff.grading.gradebook import late

    found, _ = collect.collect(args.zip)
    for assignment, students in sorted(found.items()):
        marked = sum(late.lms_late(course_dir.COURSE, s, assignment) for s in set(students))
        print(
            f"collect: {assignment}: {len(students)} submission(s) into submitted/"
            + (f", {marked} marked LATE by the LMS" if marked else "")
        )
    # collect() has named every file it did not import, with why, one line each (and refused, exit
    # status 2, a zip from which nothing could be imported); some imported is a success
    return 0


def _samples(args) -> int:
    from staff import course_dir
    from staff.authoring import samples
    from staff.grading.gradebook import admin

    written = samples.copy_to_submitted(args.assignments or None)
    admin.import_roster(samples.ROSTER, course_dir.COURSE)
    print(
        f"samples: wrote {len(written)} submissions into submitted/ and their students' names into the gradebook"
    )
    return 0


def _students(args) -> int:
    from staff import course_dir
    from staff.grading.gradebook import admin

    admin.import_roster(args.roster, course_dir.COURSE)
    print(f"students: imported {args.roster} into the gradebook")
    return 0


def _serve(args) -> int:  # formgrader, hub: a server in the foreground until Ctrl-C
    from staff.grading.review import formgrader, hub

    return (hub if args.command == "hub" else formgrader).serve(port=args.port, ip=args.ip)


def _listed(names: list[str], most: int = 12) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _unknown_names(assignments: list[str], students: list[str]) -> str | None:
    """What is wrong with the names asked for, with the valid ones (None: all known): one line, so a
    typo (``01_atention``, a student id) is said as such, not as an empty batch."""
    from difflib import get_close_matches

    from staff import course_dir

    known = course_dir.assignments()
    for name in assignments:
        if name not in known:
            near = get_close_matches(name, known, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            return f"no assignment named {name!r}{hint}; the assignments: {_listed(known)}"
    handed_in = sorted(p.name for p in course_dir.COURSE.submitted.glob("*") if p.is_dir())
    for name in students:
        if name not in handed_in:
            near = get_close_matches(name, handed_in, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            valid = (
                f"students with submissions: {_listed(handed_in)}"
                if handed_in
                else "nobody has handed in yet (make collect ZIP=..., or make samples)"
            )
            return f"no submission of {name!r} in submitted/{hint}; {valid}"
    return None


def _autograde(args) -> int:
    from staff.grading import autograde, status

    unknown = _unknown_names(args.assignments or [], args.student or [])
    if unknown:
        print(f"autograde: {unknown}", file=sys.stderr)
        return 2

    limits = autograde.Limits()  # defaults from course.settings; flags override them
    if args.cell_timeout:
        limits.cell = args.cell_timeout
    if args.wall:
        limits.wall = args.wall
    if args.memory_gb:
        limits.memory = int(args.memory_gb * 2**30)
    from staff.calendar import DueDatesError
    from staff.grading.canary import CanaryFailed
    from staff.grading.execution.sandbox import SandboxUnavailable
    from staff.grading.judging.cell_checks import ChecksUnavailable

    grading = dict(jobs=args.jobs, limits=limits, unsafe=args.unsafe_no_sandbox)
    try:
        if args.student or args.regrade:  # forced, and logged for the report
            from staff.grading import regrade

            outcomes = regrade.regrade(
                students=args.student, assignments=args.assignments or None, reason=args.reason, **grading
            )
            if not outcomes:
                print(
                    f"autograde: no submission of {', '.join(args.student or ['anyone'])} in "
                    f"{', '.join(args.assignments or ['any assignment'])} in submitted/",
                    file=sys.stderr,
                )
                return 1
        else:
            outcomes = autograde.autograde(args.assignments or None, force=args.force, **grading)
    except SandboxUnavailable as error:
        print(f"autograde: stopped, no sandbox for the student kernels: {error}", file=sys.stderr)
        return 2
    except (ChecksUnavailable, CanaryFailed, DueDatesError) as error:
        print(f"autograde: stopped before grading anyone: {error}", file=sys.stderr)
        return 2
    print(status.summary(outcomes))
    not_graded = status.not_graded(outcomes)  # the others are graded and saved; these need a look
    if not_graded:
        print(f"autograde: {not_graded}", file=sys.stderr)
        return 1
    return 0


def _feedback(args) -> int:
    from staff.grading.results import feedback

    try:
        feedback.feedback(args.assignments or None, complete=args.complete)
    except feedback.ManualGradesPending as error:
        print(f"feedback: {error}", file=sys.stderr)
        return 1
    return 0


def _export(args) -> int:
    from staff.calendar import DueDatesError
    from staff.grading.results import export
    from staff.grading.results.lms import UnknownFormat

    try:
        export.export()
    except (DueDatesError, UnknownFormat) as error:
        print(f"export: {error}", file=sys.stderr)
        return 2
    return 0


def _report(args) -> int:
    from staff import course_dir
    from staff.authoring import samples
    from staff.grading.results import report

    # The bundled samples' promised scores, beside what they got (make demo's table)
    expected = {
        (s.student, s.assignment): s.expected_score
        for a in args.assignments or course_dir.assignments()
        for s in samples.load(a)
    }
    found = report.rows(args.assignments or None, expected=expected)
    print(report.table(found) if found else "report: no graded submissions (run `make autograde`)")
    notes = report.trust_notes(args.assignments or None)
    if found:
        print(
            "\nTest cells whose points a kernel could influence (every other point is judged against withheld values): "
            + (f"\n{notes}" if notes else "none")
        )
    from staff.grading import regrade

    regrades = regrade.entries()
    if regrades:
        print(
            f"\nRegrades ({regrade.log_file(course_dir.COURSE).relative_to(course_dir.COURSE.root)}):\n"
            + regrade.table(regrades)
        )
    if args.html and found:
        print(f"report: wrote {report.write_report(expected=expected).relative_to(course_dir.COURSE.root)}")
    return 1 if any(r.expected is not None and r.expected != r.auto_score for r in found) else 0


def _solutions(args) -> int:
    from staff.authoring import solutions

    _, problems = solutions.build(
        args.assignments or None, out=args.out or solutions.OUT, timeout=args.cell_timeout
    )
    if problems:  # each was reported as it happened
        print(f"solutions: NOT written: {', '.join(problems)} (see above)", file=sys.stderr)
    return 1 if problems else 0


@dataclass(frozen=True)
class Command:
    """One command of the command line: its name, what runs it, its help, its own flags (a function
    adding them to its parser) and whether it takes assignment names (default: every assignment)."""

    name: str
    run: Callable[[argparse.Namespace], int]
    help: str
    flags: Callable[[argparse.ArgumentParser], object] | None = None
    assignments: bool = True


def _fixtures_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, help="default: the course's fixtures/")
    p.add_argument(
        "--retrain",
        action="store_true",
        help="train the trained fixtures again too (default: keep the ones in --out)",
    )


def _publish_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path)
    p.add_argument(
        "--as-of", metavar="DATE", help="as of that day (YYYY-MM-DD: its end, UTC) or moment, not now"
    )


def _figure_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="?", type=Path, help="redraw only the first README figure, into this file")
    p.add_argument(
        "--architecture",
        action="store_true",
        help="only the architecture diagrams and their cells in source/ (runs no model)",
    )


def _autograde_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, help="local workers (default: JOBS, else one per core)")
    p.add_argument("--cell-timeout", type=int, help="seconds per cell (default: CELL_TIMEOUT)")
    p.add_argument("--wall", type=int, help="seconds per notebook (default: NOTEBOOK_TIMEOUT)")
    p.add_argument("--memory-gb", type=float, help="memory per grading process (default: MEMORY_GB)")
    p.add_argument(
        "--force",
        action="store_true",
        help="grade again submissions unchanged since their last grade (default: keep those)",
    )
    p.add_argument(
        "--student",
        action="append",
        metavar="ID",
        help="regrade only this student's submissions (repeatable): forced, logged for the report",
    )
    p.add_argument(
        "--regrade",
        action="store_true",
        help="regrade the named assignments (and --student's), forced, logged for the report",
    )
    p.add_argument("--reason", default="", help="why, for the regrade log (e.g. a dispute's number)")
    p.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="grade without the sandbox where none can be made (grades are marked unsafe)",
    )


def _server_flags(port: int) -> Callable[[argparse.ArgumentParser], None]:
    def flags(p: argparse.ArgumentParser) -> None:
        p.add_argument("--port", type=int, default=port)
        p.add_argument("--ip", default="127.0.0.1")

    return flags


def _solutions_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, help="default: the course's solutions/")
    p.add_argument(
        "--cell-timeout", type=int, help="seconds per cell (default: 3600; training runs uncapped)"
    )


#: Every command, in workflow order (`make help`'s): one entry each.
COMMANDS = (
    Command(
        "fixtures",
        _fixtures,
        "rebuild the saved tensors from the recipes and rewrite the manifests (after a change to a recipe or a solution)",
        _fixtures_flags,
    ),
    Command(
        "fixtures-check",
        _fixtures_check,
        "rebuild into a temporary folder and compare with the committed fixtures within a tenth of the grading "
        "tolerances (rewrites nothing)",
        lambda p: p.add_argument(
            "--root", type=Path, help="committed fixtures (default: the course's fixtures/)"
        ),
    ),
    Command(
        "fixtures-verify",
        _fixtures_verify,
        "check every fixture file against its SHA-256 manifest",
        lambda p: p.add_argument("--root", type=Path),
        assignments=False,
    ),
    Command(
        "new-assignment",
        _new_assignment,
        "scaffold a new assignment that already goes through fixtures, release and grading: its source notebook, "
        "fixture recipe, samples (with their students) and dates, for its author to replace",
        lambda p: p.add_argument("name", help="NN_lowercase_words, e.g. 08_layer_norm"),
        assignments=False,
    ),
    Command(
        "validate",
        _validate,
        "source notebooks pass all tests; released ones fail only with NotImplementedError",
        lambda p: p.add_argument("--only", choices=["source", "release"]),
    ),
    Command(
        "release", _release, "check the source, generate release/ atomically with nbgrader, check the release"
    ),
    Command(
        "publish",
        _publish,
        "build the student bundle in publish/: what is released by today",
        _publish_flags,
        assignments=False,
    ),
    Command(
        "figure",
        _figure,
        "redraw the figures of the README and docs/assignments.md (attention maps, KV cache) and the notebooks' "
        "architecture diagrams, and embed those into source/",
        _figure_flags,
        assignments=False,
    ),
    Command(
        "collect",
        _collect,
        "import an LMS zip of notebooks into submitted/",
        lambda p: p.add_argument("zip", type=Path),
        assignments=False,
    ),
    Command(
        "samples",
        _samples,
        "copy the bundled sample submissions into submitted/ (and their students' names into the gradebook)",
    ),
    Command(
        "students",
        _students,
        "import students' names and emails into the gradebook from a CSV (id,first_name,last_name,email)",
        lambda p: p.add_argument("roster", type=Path),
        assignments=False,
    ),
    Command(
        "autograde",
        _autograde,
        "grade every submission on a Dask cluster (local unless SCHEDULER is set), with a status each (exit "
        "status 1, with a count, when some could not be graded); --student/--regrade: regrade just those, keeping "
        "manual grades",
        _autograde_flags,
    ),
    Command(
        "formgrader",
        _serve,
        "JupyterLab with nbgrader's formgrader on the course, for grading free-text answers (prints the address "
        "with its token)",
        _server_flags(8888),
        assignments=False,
    ),
    Command(
        "hub",
        _serve,
        "JupyterHub for a TA team: the formgrader as a service shared by the graders (jupyterhub_config.py names "
        "them); --ip 0.0.0.0: every interface (put TLS in front)",
        _server_flags(8000),
        assignments=False,
    ),
    Command(
        "feedback",
        _feedback,
        "per-student feedback HTML, hidden tests redacted",
        lambda p: p.add_argument(
            "--complete", action="store_true", help="write nothing while any free-text answer waits for a TA"
        ),
    ),
    Command(
        "export",
        _export,
        "grades.csv with status, reason, review of flags, manual_pending and late-work columns, and a row per "
        "student for the LMS (grades-canvas.csv, grades-wide.csv: LMS_EXPORTS)",
        assignments=False,
    ),
    Command(
        "report",
        _report,
        "the score table; --html also writes reports/report.html",
        lambda p: p.add_argument("--html", action="store_true"),
    ),
    Command("similarity", similarity.command, similarity.HELP, similarity.arguments, assignments=False),
    Command(
        "solutions",
        _solutions,
        "worked solutions to publish once grades are out: each notebook run with its solutions, model answers and "
        "outputs, without hidden tests, into solutions/ (.ipynb and .html)",
        _solutions_flags,
    ),
)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m staff", description=__doc__.split("\n")[0])
    sub = top.add_subparsers(dest="command", required=True, metavar="command")
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.help)
        p.set_defaults(run=command.run)
        if command.assignments:
            p.add_argument("assignments", nargs="*", help="default: every assignment")
        if command.flags:
            command.flags(p)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.run(args)
