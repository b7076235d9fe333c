"""nbgrader's formgrader, where TAs grade the free-text answers: JupyterLab on the course folder with
nbgrader's server and lab extensions (``make formgrader``).

The server's root is the course folder, because the formgrader only works on a course inside the
server's root, and nbgrader reads the course's ``nbgrader_config.py`` from there. It listens on
loopback with a fresh token; as root JupyterLab refuses to start without ``--allow-root``. The
grading page loads MathJax from this server (``jupyter_server_mathjax``; ``jupyter/``), not a
CDN: offline a CDN leaves every formula as raw ``$...$``. It also shows, under each free-text
answer, the model answer from ``source/`` (``model_answers.py``, registered by ``jupyter/``).

At a MOOC's scale (1,000 students x 5 assignments) nbgrader's formgrader does work per row that
grows with the class; two overrides take it out with the same answers: the gradebook's missing
indexes (``gradebook_indexes.py``, ensured before the server starts) and nbgrader's API asking its
helpers and the database only about the page's rows (``formgrader_api.py``, a server extension:
:data:`OVERRIDES`). ``overrides=False`` serves nbgrader alone (the benchmark's baseline).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from staff import nbgrader_cli
from staff.course_dir import COURSE, CourseDir
from staff.grading.gradebook import indexes

#: A Jupyter data folder put first on JUPYTER_PATH for the server: its nbconvert template
#: ``base/mathjax.html.j2`` shadows nbconvert's (MathJax from this server, not a CDN), and its
#: ``formgrade/conf.json`` adds a preprocessor to nbgrader's grading-page template only (the model
#: answers; nbconvert merges the conf.json files of a template found in several places).
JUPYTER_DATA = Path(__file__).with_name("jupyter")


def environment() -> dict[str, str]:
    env = nbgrader_cli.environment()
    env["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(JUPYTER_DATA), env.get("JUPYTER_PATH", "")) if p)
    return env


@dataclass(frozen=True)
class Server:
    process: subprocess.Popen
    url: str  # http://127.0.0.1:<port>
    token: str

    def page(self, path: str) -> str:
        """``url/path`` with the token, e.g. ``page("formgrader")``."""
        return f"{self.url}/{path.lstrip('/')}{'&' if '?' in path else '?'}token={self.token}"

    def stop(self) -> None:
        stop(self.process, timeout=20)


def stop(process: subprocess.Popen, timeout: float) -> None:
    """Ask a server to stop (it shuts its kernels or services down), then kill it after ``timeout`` s."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


#: Jupyter server extensions of the course's own, loaded with nbgrader's: always (a grade two TAs
#: save at once is never overwritten silently; Autograde through the sandbox and the judge; every
#: page's Content-Security-Policy; the page where a TA decides on flags), and the per-row fixes
#: (not in the benchmark's baseline).
EXTENSIONS = (
    "staff.grading.review.grade_conflicts",
    "staff.grading.review.ta_kernels",
    "staff.grading.review.csp",
    "staff.grading.review.flag_review",
)
OVERRIDES = ("staff.grading.review.formgrader_api",)


def server_options(course: CourseDir, overrides: bool = True) -> list[str]:
    """The Jupyter server's options for grading ``course``, the same for ``make formgrader``'s
    JupyterLab and the hub's shared formgrader (:mod:`hub`)."""
    args = [
        f"--ServerApp.root_dir={course.root}",
        # nbgrader's formgrader runs in debug mode by default: it then tries to print the whole
        # server config (logging "Formgrader config is not serializable") and shows it, token
        # included, in Manage Assignments' "Current configuration" panel.
        "--FormgradeExtension.debug=False",
        # A submitted or autograded notebook a TA runs runs in the grading sandbox (ta_kernels.py).
        "--ServerApp.kernel_manager_class=staff.grading.review.ta_kernels.CourseKernels",
    ]
    args += [
        f"--ServerApp.jpserver_extensions={name}=True"
        for name in EXTENSIONS + (OVERRIDES if overrides else ())
    ]
    if os.geteuid() == 0:
        args.append("--allow-root")
    return args


def command(
    course: CourseDir, port: int, token: str, overrides: bool = True, ip: str = "127.0.0.1"
) -> list[str]:
    return [
        str(nbgrader_cli.BINDIR / "jupyter"),
        "lab",
        "--no-browser",
        f"--ip={ip}",
        f"--port={port}",
        "--port-retries=0",
        f"--IdentityProvider.token={token}",
        "--ServerApp.open_browser=False",
        *server_options(course, overrides),
    ]


def start(
    course: CourseDir = COURSE,
    port: int = 8888,
    log: Path | None = None,
    timeout: float = 120,
    overrides: bool = True,
) -> Server:
    """Start JupyterLab in the background and wait until the formgrader answers."""
    token = secrets.token_hex(16)
    if overrides:
        indexes.ensure(course.db_url)
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 (the server owns it)
    process = subprocess.Popen(
        command(course, port, token, overrides),
        cwd=course.root,
        env=environment(),
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    server = Server(process, f"http://127.0.0.1:{port}", token)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"JupyterLab exited with code {process.returncode}" + (f"; see {log}" if log else "")
            )
        try:
            with urllib.request.urlopen(server.page("api/status"), timeout=5) as response:
                if response.status == 200:
                    return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    server.stop()
    raise TimeoutError(f"JupyterLab did not answer on {server.url} within {timeout:.0f} s")


def serve(course: CourseDir = COURSE, port: int = 8888, ip: str = "127.0.0.1") -> int:
    """``make formgrader``: run in the foreground until Ctrl-C."""
    token = secrets.token_hex(16)
    indexes.ensure(course.db_url)
    print(
        f"formgrader: starting JupyterLab on {course.root}\n"
        f"  open   http://{ip}:{port}/formgrader?token={token}\n"
        f"  or     http://{ip}:{port}/lab?token={token}  (menu Nbgrader -> Formgrader)\n"
        f"  stop   Ctrl-C here (twice if it asks to confirm)\n"
        f"  from another machine: ssh -L {port}:127.0.0.1:{port} <this host>, then open the address above",
        flush=True,
    )
    try:
        return subprocess.call(command(course, port, token, ip=ip), cwd=course.root, env=environment())
    except KeyboardInterrupt:
        return 0
