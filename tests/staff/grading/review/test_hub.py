"""The TA team's hub, without starting it: the course's ``jupyterhub_config.py`` as JupyterHub loads
it (the shared formgrader service, groups and roles, logins, no personal servers), which kernels of
a TA's server go into the sandbox, and the check that refuses a grade two TAs saved at once. The
hub itself, in Chromium with two TAs: tests/e2e/test_hub.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from tornado import web
from traitlets.config.loader import PyFileConfigLoader

from course import paths
from staff.grading.execution import sandbox
from staff.grading.review import formgrader, grade_conflicts, hub, ta_kernels

COURSE_ID = hub.COURSE_ID


@pytest.fixture(scope="module")
def config():
    return PyFileConfigLoader(hub.CONFIG.name, path=str(paths.ROOT)).load_config()


def test_the_formgrader_is_one_service_every_grader_shares(config):
    (service,) = config.JupyterHub.services
    assert service["name"] == COURSE_ID and service["url"].startswith("http://127.0.0.1:")
    command = service["command"]
    assert Path(command[0]).name == "jupyterhub-singleuser"
    # The same server as `make formgrader`: the course, nbgrader's and the course's extensions,
    # TA kernels in the sandbox; and no terminal (a shell with the grader's rights).
    assert set(formgrader.server_options(hub.COURSE)) <= set(command)
    assert "--ServerApp.kernel_manager_class=staff.grading.review.ta_kernels.CourseKernels" in command
    assert "--ServerApp.terminals_enabled=False" in command
    assert service["cwd"] == str(paths.ROOT)
    assert config.JupyterHub.default_url == f"/services/{COURSE_ID}/formgrader"


def test_only_the_graders_group_may_open_it(config):
    groups = config.JupyterHub.load_groups
    graders = groups[f"formgrade-{COURSE_ID}"]["users"]
    assert set(groups["instructors"]["users"]) <= set(graders)
    assert {"ta1", "ta2"} <= set(graders)
    access = [
        role
        for role in config.JupyterHub.load_roles
        if f"access:services!service={COURSE_ID}" in role["scopes"]
    ]
    assert [role["groups"] for role in access] == [[f"formgrade-{COURSE_ID}"]]
    assert not any(role.get("users") for role in config.JupyterHub.load_roles), (
        "access by group, never by name"
    )
    assert config.Authenticator.admin_users == set(groups["instructors"]["users"])


def test_logins_need_an_instructors_approval_and_nobody_gets_a_server(config):
    assert config.JupyterHub.authenticator_class is hub.CourseAuthenticator
    assert config.JupyterHub.spawner_class is hub.NoServers
    uninitialised = hub.CourseAuthenticator.__new__(
        hub.CourseAuthenticator
    )  # its __init__ opens the hub database
    routes = [route for route, *_ in uninitialised.get_handlers(None)]
    # NativeAuthenticator's sign-up and approval pages, JupyterHub's own login page (native's fails on JupyterHub 6).
    assert "/signup" in routes and "/authorize" in routes and "/login" not in routes
    assert config.NativeAuthenticator.open_signup is False
    starting = hub.NoServers.start(hub.NoServers.__new__(hub.NoServers))
    with pytest.raises(RuntimeError, match="starts no personal servers"):
        starting.send(None)  # it refuses before it awaits anything (and a browser test's loop may be running)
    # The hub's state stays in the course's git-ignored .hub/.
    assert config.JupyterHub.db_url == f"sqlite:///{paths.ROOT / '.hub' / 'jupyterhub.sqlite'}"
    assert ".hub/" in (paths.ROOT / ".gitignore").read_text().splitlines()


@pytest.mark.parametrize(
    "folder, boxed",
    [
        ("source", False),
        ("source/01_attention", False),
        ("autograded/ada/01_attention", True),
        ("submitted/ada/01_attention", True),
        ("release/01_attention", True),
        ("feedback/ada", True),
        ("", True),
        ("source/../submitted/ada", True),
        ("/tmp/elsewhere", True),
    ],
)
def test_a_tas_kernels_run_in_the_sandbox_but_for_the_instructors_own_notebooks(tmp_path, folder, boxed):
    root = tmp_path / "course"
    cwd = Path(folder) if folder.startswith("/") else root / folder
    assert ta_kernels.sandboxed(cwd, root) is boxed


@pytest.mark.parametrize(
    "folder, student",
    [
        ("autograded/ada/01_attention", "ada"),
        ("submitted/s-1.2/01_attention", "s-1.2"),
        ("feedback/ada", "ada"),
        ("submitted", None),
        ("release/01_attention", None),
        ("source/01_attention", None),
        ("submitted/two words/01_attention", None),
        ("/tmp/elsewhere/submitted/ada", None),
    ],
)
def test_a_tas_kernel_runs_the_variant_of_the_student_whose_notebook_it_is(tmp_path, folder, student):
    """The kernel gets that student's id (COURSE_STUDENT, course/variant.py), so their variant runs."""
    root = tmp_path / "course"
    cwd = Path(folder) if folder.startswith("/") else root / folder
    assert ta_kernels.student_of(cwd, root) == student


def test_where_no_sandbox_can_be_made_a_students_kernel_is_refused_saying_why(monkeypatch):
    def unavailable(timeout: float = 30):
        raise sandbox.SandboxUnavailable(
            "bubblewrap cannot make a sandbox here: no user namespaces. " + sandbox.HOW_TO_ENABLE
        )

    monkeypatch.setattr(sandbox, "probe", unavailable)
    monkeypatch.setattr(ta_kernels._Shared, "problem", None)
    monkeypatch.setattr(ta_kernels._Shared, "fixtures", None)
    with pytest.raises(web.HTTPError) as refused:
        ta_kernels._Shared.fixtures_view()
    assert refused.value.status_code == 503
    assert "outside the grading sandbox" in refused.value.reason and "user namespaces" in refused.value.reason


@pytest.mark.parametrize(
    "current, seen, changed",
    [
        ({"manual_score": None, "extra_credit": None}, {"manual_score": None, "extra_credit": None}, False),
        ({"manual_score": 1.0, "extra_credit": None}, {"manual_score": 1, "extra_credit": None}, False),
        ({"manual_score": 1.0, "extra_credit": None}, {"manual_score": "1", "extra_credit": ""}, False),
        ({"manual_score": 1.0, "extra_credit": None}, {"manual_score": None, "extra_credit": None}, True),
        ({"manual_score": 0.0, "extra_credit": None}, {"manual_score": None, "extra_credit": None}, True),
        ({"manual_score": 1.0, "extra_credit": 0.5}, {"manual_score": 1.0, "extra_credit": None}, True),
    ],
)
def test_a_grade_changed_since_the_page_loaded_is_a_conflict(current, seen, changed):
    assert grade_conflicts.changed_since(current, seen, "grade") is changed


def test_a_comment_changed_since_the_page_loaded_is_a_conflict():
    assert grade_conflicts.changed_since({"manual_comment": "Good."}, {"manual_comment": None}, "comment")
    assert not grade_conflicts.changed_since(
        {"manual_comment": "Good."}, {"manual_comment": "Good."}, "comment"
    )


def test_the_formgraders_autograde_button_goes_through_the_course_grader():
    """Its handler is the course's (the sandbox and the judge), installed once; the browser test
    clicks it (tests/e2e/test_hub.py)."""
    from nbgrader.server_extensions.formgrader import apihandlers

    assert "staff.grading.review.ta_kernels" in formgrader.EXTENSIONS
    ta_kernels.install()
    first = apihandlers.AutogradeHandler.post
    ta_kernels.install()
    assert apihandlers.AutogradeHandler.post is first and first.course_grader
    assert (
        first.__wrapped__.__wrapped__.__wrapped__ is ta_kernels._autograde
    )  # authenticated, xsrf, notebook dir


def test_the_check_wraps_nbgraders_handlers_once_and_its_script_holds_no_math():
    from nbgrader.server_extensions.formgrader import apihandlers

    grade_conflicts.install()
    first = apihandlers.GradeHandler.put
    grade_conflicts.install()
    assert apihandlers.GradeHandler.put is first and first.course_conflict_check
    assert apihandlers.CommentHandler.put.course_conflict_check
    # The script sits in a markdown cell of the grading page, where "$...$" would be typeset as math.
    assert "$" not in grade_conflicts.SCRIPT
