"""Benchmark: nbgrader's formgrader with a MOOC's gradebook, every page a TA or instructor opens,
timed in Chromium.

    python benchmarks/formgrader_scale.py [--students 1000] [--original] [--postgres] [--repeat 3] [--keep DIR]

A synthetic course is built cheaply (:func:`build`): a scratch copy of the course folder (source/
linked, the committed release/, the gradebook registered as ``make autograde`` registers it),
--students students with names, every one of them with a submission of each of the 5 assignments:
automatic points on every graded cell, manual points on some free-text answers (the rest waiting
for a TA), a timestamp, and submitted/ and autograded/ folders holding the released notebook
(hard links to one copy). The rows go into the gradebook in bulk (SQLAlchemy Core on nbgrader's
own tables), so 1,000 x 5 takes seconds instead of nbgrader's one commit per submission.

:func:`measure` starts the formgrader on it (``make formgrader``'s server) and opens, in headless
Chromium through Playwright, each page until its rows are shown (the page's ``models.loaded``, set
after the last row is drawn; on a grading page, its grades bound to the boxes): Manage Assignments,
the Gradebook's assignments, an assignment's notebooks, a notebook's submissions, submissions'
grading pages (the first open is cold: templates compiled), Manage Students, a student's assignments
and notebook, and Manage Submissions of assignment 1; each --repeat times, the median shown (the
machine may be shared). It also records each page's API call (Chromium's own timing of the
request, start to last byte). The goal is under 2 s for every page.

With --original the same course is then served by nbgrader alone (the gradebook's indexes dropped,
:mod:`staff.grading.gradebook.indexes`, and the API extension left out,
``staff.grading.review.formgrader.start(overrides=False)``), in the same run, for the ratio; it runs
second, so it gets the warmer caches. Importable: the tests use :func:`build`; nothing runs at
import.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack, closing
from datetime import datetime, timedelta
from pathlib import Path

GOAL = 2.0  # seconds, for every page
STUDENTS = 1000
FIRST_NAMES = (
    "Ada",
    "Alan",
    "Grace",
    "Edsger",
    "Barbara",
    "Donald",
    "Frances",
    "John",
    "Katherine",
    "Claude",
    "Radia",
    "Tim",
    "Shafi",
    "Leslie",
    "Margaret",
    "Dennis",
    "Hedy",
    "Ken",
    "Sophie",
    "Yoshua",
)
LAST_NAMES = (
    "Lovelace",
    "Turing",
    "Hopper",
    "Dijkstra",
    "Liskov",
    "Knuth",
    "Allen",
    "McCarthy",
    "Johnson",
    "Shannon",
    "Perlman",
    "Berners-Lee",
    "Goldwasser",
    "Lamport",
    "Hamilton",
    "Ritchie",
    "Lamarr",
    "Thompson",
    "Wilson",
    "Bengio",
    "Hinton",
    "Vaswani",
    "Devlin",
    "Sanh",
    "Radford",
)
#: How the benchmark starts Debian's chromium (tests/support.py has the same flags for the tests).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def student_id(number: int) -> str:
    return f"s{number:05d}"


def build(
    root: Path,
    students: int = STUDENTS,
    db_url: str | None = None,
    seed: int = 0,
    gradebook_from: Path | None = None,
):
    """A scratch course at ``root`` (created) with ``students`` x every assignment submitted and
    autograded; returns its :class:`~staff.course_dir.CourseDir`. ``db_url``: a server gradebook
    (empty database) instead of SQLite in the folder; ``gradebook_from``: an SQLite gradebook with the
    assignments already registered, copied instead of registering them again (~30 s saved)."""
    from staff import course_dir
    from staff.course_dir import CourseDir
    from staff.grading.gradebook import admin

    root.mkdir(parents=True)
    (root / "source").symlink_to(course_dir.SOURCE, target_is_directory=True)
    shutil.copytree(course_dir.RELEASE, root / "release")
    # The course's own nbgrader configuration, as an instructor's course folder has it (its exchange,
    # its course id); it points at its own folder, and at db_url when there is one.
    config = (course_dir.COURSE.root / "nbgrader_config.py").read_text()
    if db_url:
        config += f"\nc.CourseDirectory.db_url = {db_url!r}  # formgrader_scale.py: a server gradebook\n"
    (root / "nbgrader_config.py").write_text(config)
    course = CourseDir(root, url=db_url)
    assignments = course_dir.assignments()
    if gradebook_from and not db_url:
        shutil.copy2(gradebook_from, course.gradebook)
    admin.register(assignments, course)
    _fill(course, assignments, students, random.Random(seed))
    return course


def _uuid() -> str:
    return uuid.uuid4().hex  # nbgrader's own ids (nbgrader.api.new_uuid)


def _fill(course, assignments: list[str], students: int, rng: random.Random) -> None:
    """Students, submissions, notebooks, grades and comments straight into nbgrader's tables (Core
    inserts: what ``Gradebook.add_submission`` and autograde write, without a commit per row),
    and the submission folders with matching timestamps."""
    from nbgrader.api import (
        Assignment,
        Comment,
        Grade,
        Gradebook,
        Student,
        SubmittedAssignment,
        SubmittedNotebook,
    )
    from sqlalchemy import insert, text

    people = [
        {
            "id": student_id(i),
            "first_name": FIRST_NAMES[i % len(FIRST_NAMES)],
            "last_name": f"{LAST_NAMES[i // len(FIRST_NAMES) % len(LAST_NAMES)]}{i // 500 or ''}",
            "email": f"{student_id(i)}@example.edu",
            "lms_user_id": None,
        }
        for i in range(students)
    ]
    rows: dict[type, list[dict]] = {SubmittedAssignment: [], SubmittedNotebook: [], Grade: [], Comment: []}
    stamps: dict[tuple[str, str], datetime] = {}
    with Gradebook(course.db_url) as gb:
        known = {s.id for s in gb.students}
        for number, assignment in enumerate(assignments):
            found = gb.db.query(Assignment).filter(Assignment.name == assignment).one()
            opens = datetime(2026, 2, 2, 9) + timedelta(weeks=2 * number)
            for person in people:
                submission = _uuid()
                stamp = opens + timedelta(seconds=rng.randrange(14 * 24 * 3600))
                stamps[person["id"], assignment] = stamp
                rows[SubmittedAssignment].append(
                    {
                        "id": submission,
                        "assignment_id": found.id,
                        "student_id": person["id"],
                        "timestamp": stamp,
                    }
                )
                graded_by_ta = rng.random() < 0.4  # the rest of the free-text answers wait for a TA
                for notebook in found.notebooks:
                    submitted = _uuid()
                    rows[SubmittedNotebook].append(
                        {
                            "id": submitted,
                            "assignment_id": submission,
                            "notebook_id": notebook.id,
                            "flagged": False,
                        }
                    )
                    for cell in notebook.grade_cells:
                        automatic = cell.cell_type == "code"
                        rows[Grade].append(
                            {
                                "id": _uuid(),
                                "notebook_id": submitted,
                                "cell_id": cell.id,
                                "auto_score": rng.choice((0.0, cell.max_score, cell.max_score))
                                if automatic
                                else None,
                                "manual_score": None
                                if automatic or not graded_by_ta
                                else float(rng.randint(0, int(cell.max_score))),
                                "extra_credit": None,
                                "needs_manual_grade": not automatic and not graded_by_ta,
                            }
                        )
                    for cell in notebook.task_cells:  # none in this course; as add_submission does
                        rows[Grade].append(
                            {
                                "id": _uuid(),
                                "notebook_id": submitted,
                                "cell_id": cell.id,
                                "auto_score": None,
                                "manual_score": None,
                                "extra_credit": None,
                                "needs_manual_grade": True,
                            }
                        )
                    for cell in [*notebook.solution_cells, *notebook.task_cells]:
                        rows[Comment].append(
                            {
                                "id": _uuid(),
                                "notebook_id": submitted,
                                "cell_id": cell.id,
                                "auto_comment": None,
                                "manual_comment": None,
                            }
                        )
        gb.db.execute(insert(Student), [p for p in people if p["id"] not in known])
        for table, values in rows.items():  # parents first: PostgreSQL checks the foreign keys
            for start in range(0, len(values), 20_000):
                gb.db.execute(insert(table), values[start : start + 20_000])
        gb.db.commit()
        if gb.engine.dialect.name == "postgresql":
            # The planner's statistics, as autovacuum keeps them for a gradebook filled over a term
            # (without them, the first queries after a bulk load pick plans for empty tables).
            gb.db.execute(text("ANALYZE"))
            gb.db.commit()
    for (student, assignment), stamp in stamps.items():
        written = f"{stamp:%Y-%m-%d %H:%M:%S.%f} UTC"  # as nbgrader's collect writes it
        for folder in (course.submitted, course.autograded):
            target = folder / student / assignment
            target.mkdir(parents=True)
            (target / "timestamp.txt").write_text(written)
            for notebook in (course.release / assignment).glob("*.ipynb"):
                try:  # one copy on disk for all of them: the formgrader only reads these
                    os.link(notebook, target / notebook.name)
                except OSError:
                    shutil.copy2(notebook, target / notebook.name)


#: JavaScript true once a formgrader list page has drawn its rows (every list page's script sets
#: ``models.loaded`` after the last row is inserted and the table sorted).
ROWS_SHOWN = "() => window.models !== undefined && models.loaded === true"
#: True once a grading page has its grades and comments bound to the boxes (formgrade.js).
GRADES_SHOWN = (
    "() => window.formgrader && formgrader.grades && formgrader.grades.loaded"
    " && formgrader.comments.loaded && document.querySelector('.score') !== null"
)
API_SUFFIX = " [API]"
REPEAT = 3  # opens of each page (the machine is shared: the median of a few)


def _pages(course) -> list[tuple[str, str, str]]:
    """(name, path, the page's API call) in the order a TA opens them."""
    from staff import course_dir

    first = course_dir.assignments()[0]
    student = _a_student(course)
    return [
        ("Manage Assignments", "formgrader/manage_assignments", "api/assignments"),
        ("Gradebook: assignments", "formgrader/gradebook", "api/assignments"),
        (f"Gradebook: {first}'s notebooks", f"formgrader/gradebook/{first}", f"api/notebooks/{first}"),
        (
            f"Gradebook: notebook {first}'s submissions",
            f"formgrader/gradebook/{first}/{first}",
            f"api/submitted_notebooks/{first}/{first}",
        ),
        ("grading page", "", ""),  # submissions opened from the list above
        ("Manage Students", "formgrader/manage_students", "api/students"),
        (
            "Manage Students: a student's assignments",
            f"formgrader/manage_students/{student}",
            f"api/student_submissions/{student}",
        ),
        (
            "Manage Students: a student's notebook",
            f"formgrader/manage_students/{student}/{first}",
            f"api/student_notebook_submissions/{student}/{first}",
        ),
        (
            f"Manage Submissions: {first}",
            f"formgrader/manage_submissions/{first}",
            f"api/submissions/{first}",
        ),
    ]


def _a_student(course) -> str:
    """A student half-way down the list, with submissions."""
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gb:
        ids = sorted(s.id for s in gb.students)
    return ids[len(ids) // 2]


def _open(tab, url: str, ready: str, api: str, timeout: float) -> tuple[float, float]:
    """Seconds until ``ready`` holds after going to ``url``, and the API call's own time (Chromium's
    timing of the request, from its start to the response's last byte)."""
    finished = []

    def listener(request):  # a function: Playwright tags the handler it is given
        finished.append(request)

    tab.on("requestfinished", listener)
    try:
        start = time.monotonic()
        tab.goto(url, timeout=timeout * 1000)
        tab.wait_for_function(ready, timeout=timeout * 1000, polling=50)
        seconds = time.monotonic() - start
        # The API call has finished when the rows are drawn; its event may be one task behind.
        tab.wait_for_timeout(100)
    finally:
        tab.remove_listener("requestfinished", listener)
    calls = [r for r in finished if api and api in r.url] or [
        r for r in finished if r.resource_type == "document"
    ]
    timing = calls[-1].timing if calls else None
    return seconds, (timing["responseEnd"] / 1000 if timing and timing["responseEnd"] > 0 else float("nan"))


def _free_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(
    course, overrides: bool = True, repeat: int = REPEAT, timeout: float = 600, log: Path | None = None
) -> dict[str, float]:
    """Seconds each page takes to show its content, the median of ``repeat`` opens, and its API call
    (keys ending in :data:`API_SUFFIX`; for a grading page the page itself, which the server renders),
    on a formgrader started on ``course`` (with the course's overrides, or nbgrader unpatched) and
    stopped after. Grading pages: the first open (cold: templates compiled), then ``repeat`` others."""
    from playwright.sync_api import sync_playwright

    from staff.grading.review import formgrader

    times: dict[str, float] = {}

    def record(name: str, opens: list[tuple[float, float]]) -> None:
        times[name] = statistics.median(seconds for seconds, _ in opens)
        times[name + API_SUFFIX] = statistics.median(api for _, api in opens)

    with ExitStack() as stack:
        server = formgrader.start(course, port=_free_port(), log=log, overrides=overrides)
        stack.callback(server.stop)
        playwright = stack.enter_context(sync_playwright())
        # A fresh profile: Playwright launches every browser in a temporary one of its own.
        browser = playwright.chromium.launch(
            executable_path=shutil.which("chromium") or "/usr/bin/chromium", args=CHROMIUM_ARGS
        )
        stack.callback(browser.close)
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.goto(server.page("lab"), timeout=timeout * 1000)  # logs in (a cookie for every later page)
        links: list[str] = []
        for name, path, api in _pages(course):
            if name == "grading page":
                opens = [
                    _open(tab, server.url + href, GRADES_SHOWN, "", timeout) for href in links[: repeat + 1]
                ]
                record("grading page, first (cold)", opens[:1])
                record("grading page, next ones", opens[1:])
                continue
            record(
                name, [_open(tab, f"{server.url}/{path}", ROWS_SHOWN, api, timeout) for _ in range(repeat)]
            )
            if "submitted_notebooks" in api:
                links = tab.eval_on_selector_all(
                    "table a.name-hidden", "els => els.map(e => e.getAttribute('href'))"
                )
    return times


def table(course_times: dict[str, float], original: dict[str, float] | None) -> list[str]:
    head = "| page | seconds | its API call |" + (
        " nbgrader alone | its API call | ratio |" if original else ""
    )
    lines = [head + " goal < 2 s |", "|---|---:|---:|" + ("---:|---:|---:|" if original else "") + "---|"]
    for name, seconds in course_times.items():
        if name.endswith(API_SUFFIX):
            continue
        row = f"| {name} | {seconds:.2f} | {course_times[name + API_SUFFIX]:.2f} |"
        if original:
            before = original[name]
            row += f" {before:.2f} | {original[name + API_SUFFIX]:.2f} | {before / seconds:.1f}x |"
        lines.append(row + (" pass |" if seconds < GOAL else " FAIL |"))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=STUDENTS)
    parser.add_argument(
        "--original", action="store_true", help="also time nbgrader unpatched, in the same run"
    )
    parser.add_argument(
        "--postgres", action="store_true", help="the gradebook on a throw-away PostgreSQL server"
    )
    parser.add_argument("--repeat", type=int, default=REPEAT, help="opens of each page; the median is shown")
    parser.add_argument(
        "--keep", type=Path, help="build the course here and keep it (default: a temporary folder)"
    )
    args = parser.parse_args(argv)

    import postgres_server as postgres

    from staff.grading.gradebook import indexes

    with ExitStack() as stack:
        url = stack.enter_context(postgres.temporary_server()) if args.postgres else None
        folder = args.keep or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="formgrader-scale-"))
        )
        start = time.monotonic()
        course = build(folder / "course" if not args.keep else folder, students=args.students, db_url=url)
        print(
            f"built {args.students} students x 5 assignments ({'PostgreSQL' if url else 'SQLite'}) "
            f"in {time.monotonic() - start:.0f} s: {course.root}",
            flush=True,
        )
        times = measure(course, repeat=args.repeat, log=course.root.parent / "jupyter-course.log")
        original = None
        if args.original:  # after the course's run: nbgrader alone gets the warmer caches
            indexes.drop(course.db_url)
            original = measure(
                course, overrides=False, repeat=args.repeat, log=course.root.parent / "jupyter-nbgrader.log"
            )
            indexes.ensure(course.db_url)
        print(
            f"\nformgrader, {args.students} students x 5 assignments, {'PostgreSQL' if url else 'SQLite'}: "
            f"seconds until each page shows its rows in Chromium, median of {args.repeat} (the course's overrides"
            + (", and nbgrader alone" if original else "")
            + ")\n"
        )
        print("\n".join(table(times, original)))
        failed = [
            name for name, seconds in times.items() if not name.endswith(API_SUFFIX) and seconds >= GOAL
        ]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
