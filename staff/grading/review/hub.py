"""The course on JupyterHub for a team of TAs (``make hub``): nbgrader's formgrader as a hub
service shared by the graders, as nbgrader documents for one course with several graders.

- One Jupyter server (``jupyterhub-singleuser``) serves the course folder with the same options as
  ``make formgrader`` (:func:`formgrader.server_options`: nbgrader's extensions, the course's
  overrides, kernels in the grading sandbox) as the hub service ``<course id>``, reached at
  ``/services/<course id>/formgrader``. Every grader works in it at once against one gradebook
  (``GRADEBOOK_URL``: PostgreSQL on a real server; else the course's SQLite ``gradebook.db``,
  which one server shares safely), so a grade saved by one TA is in the gradebook for all; two
  TAs saving the same grade see a conflict, never a silent overwrite (:mod:`grade_conflicts`).
- Access by group, nbgrader's names: ``formgrade-<course id>`` (instructors and graders) may use
  the service (the scope ``access:services!service=<course id>``); ``instructors`` are the hub's
  admins; any other user who can log in (a student, with an LMS login) gets a 403 there.
- Logins: NativeAuthenticator (per-user passwords, sign-up approved by an instructor at
  ``/hub/authorize``), so a fresh clone works with nothing else to set up. A course with single
  sign-on swaps in an LTI 1.3 or OAuth authenticator in ``jupyterhub_config.py`` (docs/admin.md,
  "Logins"). Nobody gets a server of their own: the hub starts only the
  formgrader (:class:`NoServers`).
- The hub's own state (its database, cookie secret, the proxy's pid) is in ``.hub/`` in the
  course folder; the proxy is configurable-http-proxy from npm (``make system-packages``).

``jupyterhub_config.py`` in the course folder names the staff and calls :func:`configure`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from course import settings
from staff import nbgrader_cli
from staff.course_dir import COURSE, COURSE_ID, CourseDir
from staff.grading.gradebook import indexes
from staff.grading.review import csp, formgrader

#: Where ``make system-packages`` installs configurable-http-proxy (npm), beside the virtualenv.
PROXY = settings.ROOT / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
#: The course's hub configuration (staff, authenticator), read by ``jupyterhub -f``.
CONFIG = settings.ROOT / "jupyterhub_config.py"


def state_dir(course: CourseDir) -> Path:
    """The hub's own files (database, cookie secret, proxy pid): git-ignored, kept across restarts;
    made (readable by its owner only) when the hub starts."""
    return course.root / ".hub"


def _made(folder: Path) -> Path:
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def grader_group(course_id: str = COURSE_ID) -> str:
    return f"formgrade-{course_id}"


def service_prefix(course_id: str = COURSE_ID) -> str:
    return f"/services/{course_id}/"


def configure(
    c,
    instructors: Iterable[str],
    graders: Iterable[str],
    students: Iterable[str] = (),
    course: CourseDir = COURSE,
    course_id: str = COURSE_ID,
) -> None:
    """Fill a JupyterHub config ``c`` for ``course``: the shared formgrader service, the groups and
    roles, logins, no personal servers, state in ``.hub/``. ``students`` may log in (nbgrader's
    ``nbgrader-<course id>`` group) but not grade."""
    instructors, graders, students = sorted(set(instructors)), sorted(set(graders)), sorted(set(students))
    state = state_dir(course)
    c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
    c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{_free_port()}"
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{_free_port()}"
    c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
    c.ConfigurableHTTPProxy.command = [str(PROXY)]
    c.ConfigurableHTTPProxy.should_start = True

    c.JupyterHub.authenticator_class = CourseAuthenticator
    c.NativeAuthenticator.open_signup = False  # (its default) an instructor approves each sign-up
    c.NativeAuthenticator.check_common_password = True
    c.NativeAuthenticator.minimum_password_length = 10
    c.Authenticator.admin_users = set(instructors)
    # Whoever signs up waits for an instructor's approval (/hub/authorize); the groups below decide
    # what an approved user may open.
    c.Authenticator.allow_all = True
    c.JupyterHub.spawner_class = NoServers

    group = grader_group(course_id)
    c.JupyterHub.load_groups = {
        "instructors": {"users": instructors},
        group: {"users": sorted(set(instructors) | set(graders))},
        f"nbgrader-{course_id}": {"users": students},
    }
    c.JupyterHub.load_roles = [
        {
            "name": "instructors",
            "groups": ["instructors"],
            "scopes": ["admin-ui", "admin:users", "admin:groups", "list:services", "read:services"],
        },
        {
            "name": group,
            "groups": [group],
            "scopes": [f"access:services!service={course_id}", "list:services", "read:services"],
        },
    ]
    service_port = _free_port()
    env = {**formgrader.environment(), "JUPYTERHUB_DEFAULT_URL": "/formgrader"}
    c.JupyterHub.services = [
        {
            "name": course_id,
            "display": True,
            "url": f"http://127.0.0.1:{service_port}",
            # No terminal: a shell with the grader's rights.
            "command": [
                str(nbgrader_cli.BINDIR / "jupyterhub-singleuser"),
                "--ServerApp.terminals_enabled=False",
                *formgrader.server_options(course),
            ],
            "cwd": str(course.root),
            "environment": env,
            "oauth_no_confirm": True,
        }
    ]
    # Everyone lands on the formgrader; a user the service refuses sees its 403 page.
    c.JupyterHub.default_url = f"{service_prefix(course_id)}formgrader"
    # The hub's own pages fetch nothing from elsewhere (the formgrader service sets its own: csp.py).
    c.JupyterHub.tornado_settings = {"headers": {"Content-Security-Policy": csp.hub_policy()}}


try:
    from jupyterhub.spawner import Spawner
    from nativeauthenticator import NativeAuthenticator
except ImportError:  # the hub is not installed (only ``make hub`` and its tests need it)
    Spawner = NativeAuthenticator = object


class CourseAuthenticator(NativeAuthenticator):
    """NativeAuthenticator (sign-up, an instructor's approval, hashed passwords, lock-out after
    failed logins) behind JupyterHub's own login page: nativeauthenticator 1.3.0's login page still
    times logins with the statsd client JupyterHub 6 removed, so every login through it fails with
    a 500. Its sign-up, approval and password pages are kept."""

    def get_handlers(self, app):
        return [handler for handler in super().get_handlers(app) if handler[0] != r"/login"]


class NoServers(Spawner):
    """No personal servers: this hub serves the course's formgrader, which runs as a service."""

    async def start(self):
        raise RuntimeError(
            "this hub starts no personal servers: graders use the course's formgrader "
            f"({service_prefix()}formgrader); students work on Colab or their own machine"
        )

    async def poll(self):
        return 0

    async def stop(self, now=False):
        return None


@dataclass(frozen=True)
class Hub:
    process: subprocess.Popen  # the leader of its own process group: the proxy and the service are in it
    url: str  # http://127.0.0.1:<port>

    def stop(self) -> None:
        """Stop the hub, the formgrader and the proxy together (each has a session of its own, so no
        process group holds them all). Left to the hub, the formgrader stops late (docs/scaling.md): the
        hub first sends it SIGINT, on which a Jupyter server started this way does not stop."""
        import psutil

        try:
            family = [psutil.Process(self.process.pid)] + psutil.Process(self.process.pid).children(
                recursive=True
            )
        except psutil.Error:
            family = []
        for process in family:
            try:
                process.terminate()
            except psutil.Error:
                pass
        _, alive = psutil.wait_procs(family, timeout=30)
        for process in alive:
            try:
                process.kill()
            except psutil.Error:
                pass
        self.process.wait()


def _stops_with_this_process() -> None:
    """In the hub's process before it runs: a session of its own (Ctrl-C reaches the command, which
    stops the hub in order), and SIGTERM when the process that started it dies, however it died (a
    killed test run or terminal), so the hub then stops its proxy and the formgrader too."""
    import ctypes

    os.setsid()
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def missing_proxy() -> str | None:
    if PROXY.exists():
        return None
    return (
        f"configurable-http-proxy is not installed ({PROXY}): run `make system-packages` "
        "(it installs it with npm; Node.js from Debian's nodejs and npm packages)"
    )


def command(config: Path, port: int, ip: str = "127.0.0.1") -> list[str]:
    return [str(nbgrader_cli.BINDIR / "jupyterhub"), "-f", str(config), f"--ip={ip}", f"--port={port}"]


def start(course: CourseDir, config: Path, port: int, log: Path | None = None, timeout: float = 120) -> Hub:
    """Start the hub in the background; wait until it and the formgrader service answer."""
    problem = missing_proxy()
    if problem:
        raise RuntimeError(problem)
    indexes.ensure(course.db_url)
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 (the hub owns it)
    process = subprocess.Popen(
        command(config, port),
        cwd=_made(state_dir(course)),
        env=formgrader.environment(),
        stdout=out,
        stderr=subprocess.STDOUT,
        preexec_fn=_stops_with_this_process,
    )
    hub = Hub(process, f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"JupyterHub exited with code {process.returncode}" + (f"; see {log}" if log else "")
            )
        try:
            with urllib.request.urlopen(f"{hub.url}/hub/api/", timeout=5) as response:
                if response.status == 200:
                    return hub
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    hub.stop()
    raise TimeoutError(
        f"JupyterHub did not answer on {hub.url} within {timeout:.0f} s" + (f"; see {log}" if log else "")
    )


def serve(course: CourseDir = COURSE, port: int = 8000, ip: str = "127.0.0.1") -> int:
    """``make hub``: run the hub in the foreground until Ctrl-C."""
    problem = missing_proxy()
    if problem:
        print(f"hub: {problem}")
        return 1
    indexes.ensure(course.db_url)
    where = (
        settings.current().gradebook_url
        or f"{course.gradebook} (SQLite; GRADEBOOK_URL=postgresql+psycopg://... for PostgreSQL)"
    )
    print(
        f"hub: JupyterHub for {course.root} on http://{ip}:{port}/\n"
        f"  gradebook  {where}\n"
        f"  staff      {CONFIG.name} (instructors, graders); state in {state_dir(course)}\n"
        f"  first use  each person signs up at http://{ip}:{port}/hub/signup; an instructor approves them at "
        f"/hub/authorize\n"
        f"  formgrader http://{ip}:{port}{service_prefix()}formgrader\n"
        f"  stop       Ctrl-C here",
        flush=True,
    )
    process = subprocess.Popen(
        command(CONFIG, port, ip),
        cwd=_made(state_dir(course)),
        env=formgrader.environment(),
        preexec_fn=_stops_with_this_process,
    )
    try:
        return process.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        Hub(process, "").stop()
