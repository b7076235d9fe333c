"""Shared test set-up: offline and headless (importing ``course`` applies the hub mode), and one
way to make a scratch nbgrader course, so tests never touch the instructor's gradebook,
release/ or submitted/."""

from __future__ import annotations

import os
import shutil

os.environ.pop("COURSE_ONLINE", None)  # tests run offline; a test that needs online sets it itself
os.environ.setdefault("MPLBACKEND", "Agg")
# Under pytest-xdist each test process gets its share of the cores: torch in this process, the
# kernels it starts and the submissions it grades at once (JOBS) would otherwise oversubscribe them
# (measured: the fine-tuning notebook 4.7x slower with 2 workers x 2 threads on 2 cores).
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _workers > 1:
    _share = str(max(1, (os.cpu_count() or 1) // _workers))
    for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "JOBS"):
        os.environ.setdefault(_variable, _share)

import pytest  # noqa: E402

import course as _student_package  # noqa: E402,F401  (applies the hub mode before transformers is imported)

# isort: split
import graded  # noqa: E402

from staff import course_dir  # noqa: E402
from staff.authoring import release  # noqa: E402
from staff.course_dir import CourseDir  # noqa: E402


def pytest_addoption(parser):
    parser.addoption(
        "--screenshots",
        metavar="DIR",
        default=None,
        help="also save the browser tests' screenshots into DIR (make screenshots: docs/figures)",
    )


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items):
    """The tests that read the graded course go last (they wait for its build, tests/graded.py,
    while the others run; `make test` keeps this order with ``--no-loadscope-reorder``), each
    module's together in one test process (``--dist loadgroup``): a module's fixtures (a formgrader
    server, 300 submissions) are then made once."""
    graded = [item for item in items if "graded_course" in getattr(item, "fixturenames", ())]
    for item in graded:
        item.add_marker(pytest.mark.xdist_group(f"graded_course:{item.module.__name__}"))
    # Both test processes reach these groups at about the same time, at the end of the run: the
    # modules that drive a browser (a Jupyter server, page after page: the formgrader's 97 s of one process's last 106 here)
    # go out first, so the other process takes the rest beside them instead of after them.
    in_browser = {item.module for item in graded if "browser" in item.fixturenames}
    graded.sort(key=lambda item: item.module not in in_browser)  # stable: each module's order kept
    items[:] = [item for item in items if item not in graded] + graded


def pytest_collection_finish(session):
    """Start building the graded course as soon as a test that reads it is to run."""
    if any("graded_course" in getattr(item, "fixturenames", ()) for item in session.items):
        graded.start(session.config)


def pytest_sessionfinish(session):
    graded.stop(session.config)


@pytest.fixture(scope="session")
def released(tmp_path_factory) -> CourseDir:
    """release/ of every assignment, generated from the real source/ once per test process."""
    return _course(tmp_path_factory.mktemp("released"), generate=True)


def _course(root, generate: bool = False) -> CourseDir:
    (root / "source").symlink_to(course_dir.SOURCE, target_is_directory=True)
    course = CourseDir(root)
    if generate:
        release.generate(course=course)
    return course


@pytest.fixture(scope="session")
def make_course(tmp_path_factory, released):
    """``make_course(name)``: a fresh scratch course in /tmp whose source/ is the real one and
    whose release/ and gradebook (every assignment registered, no submission yet) are copies of
    :func:`released` (nbgrader's own output, generated once)."""

    def make(name: str = "course") -> CourseDir:
        course = _course(tmp_path_factory.mktemp(name))
        shutil.copytree(released.release, course.release)
        shutil.copy2(released.gradebook, course.gradebook)
        return course

    return make


@pytest.fixture()
def records(tmp_path, monkeypatch):
    """A records folder as the grader opens it while a test cell runs (staff/grading/execution/cells.py): what
    course.checks write there is what the judge reads."""
    from course import record

    monkeypatch.setenv(record.RECORDS_VARIABLE, str(tmp_path / "records"))
    (tmp_path / "records").mkdir()
    return tmp_path / "records"


@pytest.fixture(scope="session")
def attention():
    """A tiny random BERT's attentions for a sentence pair (tests/support.py), for bertviz views."""
    from support import tiny_attention

    return tiny_attention()


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium (Debian's, driven by Playwright) shared by the browser tests of a process."""
    from playwright.sync_api import sync_playwright

    from support import CHROMIUM_ARGS, chromium_or_skip

    executable = chromium_or_skip()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def graded_course(request, tmp_path_factory) -> CourseDir:
    """Every bundled sample submitted (with its student's name) and autograded as `make demo` does,
    in one batch, on another CPU's kernels (tests/graded.py builds it once per session); this test
    process's own copy."""
    return graded.copy(graded.finished(request.config), tmp_path_factory.mktemp("graded") / "course")
