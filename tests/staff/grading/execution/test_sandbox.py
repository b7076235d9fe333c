"""The grading sandbox, tried as a hostile kernel would: what it can see, write, reach and spawn.

Each test runs real Python inside the same bubblewrap sandbox grading kernels get
(staff/grading/execution/sandbox.py), with a scratch folder and a fixtures view of assignment 1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from course.settings import ROOT
from staff.grading.execution import quota, sandbox


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    try:
        sandbox.probe()
    except sandbox.SandboxUnavailable as error:
        pytest.skip(f"no sandbox on this machine: {error}")
    folder = tmp_path_factory.mktemp("sandbox")
    folder.chmod(0o755)
    return sandbox.fixtures_view(folder / "fixtures")


@pytest.fixture(scope="module")
def spec(view):
    return sandbox.make_spec(view.parent / "scratch", view, processes=64)


def run(spec, code: str) -> dict:
    """Run ``code`` in the sandbox; it prints one JSON object, returned here."""
    argv = sandbox.command(spec, [sys.executable, "-c", code], {"COURSE_FIXTURES": str(ROOT / "fixtures")})
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_course_tree_is_not_there(spec):
    seen = run(
        spec,
        f"""
import json, os
root = {str(ROOT)!r}
print(json.dumps({{"root": sorted(os.listdir(root)),
                   "fixtures": sorted(os.listdir(os.path.join(root, "fixtures")))}}))""",
    )
    assert set(seen["root"]) <= {"course", "data", "fixtures", ".venv"}, seen["root"]
    for secret in ("source", "staff", ".git", "gradebook.db", "submitted", "autograded", "samples"):
        assert secret not in seen["root"]
    assert seen["fixtures"] == ["hidden", "public"]  # no judge/ folder (the checks) either


def test_expected_outputs_are_withheld_from_the_kernel(spec):
    seen = run(
        spec,
        """
import json
from course.fixtures import load_cases
from course.record import Withheld
case = load_cases("01_attention", "softmax", hidden=True)[0]
public = load_cases("01_attention", "softmax")[0]
try:
    import numpy as np; np.asarray(case["expected"]); leaked = True
except TypeError:
    leaked = False
print(json.dumps({"x": type(case["x"]).__name__, "expected": type(case["expected"]).__name__,
                  "public": type(public["expected"]).__name__, "leaked": leaked,
                  "shape": list(case["expected"].shape)}))""",
    )
    # Public expected outputs ship to students anyway: the visible checks (no points) run as they did for them.
    assert (
        seen
        == {
            "x": "ndarray",
            "expected": "Withheld",
            "public": "ndarray",
            "leaked": False,
            "shape": seen["shape"],
        }
        and seen["shape"]
    )


def test_read_only_except_the_scratch_folder(spec):
    seen = run(
        spec,
        f"""
import json, os
result = {{}}
for path in ({str(ROOT / "course" / "x.py")!r}, "/x", "/usr/x", {str(Path(spec.scratch) / "work" / "ok.txt")!r}):
    try:
        open(path, "w").write("x")
        result[path] = "written"
    except OSError as error:
        result[path] = type(error).__name__
print(json.dumps(result))""",
    )
    assert seen.pop(str(Path(spec.scratch) / "work" / "ok.txt")) == "written"
    assert all(v != "written" for v in seen.values()), seen
    assert not (ROOT / "course" / "x.py").exists()


def test_the_kernel_cannot_open_a_records_folder_of_its_own(spec):
    """Only the grader opens the folder a test cell's records go to (cells.py), and only while that
    cell runs: the kernel's user can neither create it nor replace the folder that holds it."""
    if spec.uid is None:
        pytest.skip(
            "the kernel runs as the grader's own user here (not root): the runner discards what it made"
        )
    scratch = Path(spec.scratch)
    seen = run(
        spec,
        f"""
import json, os
result = {{}}
for name, attempt in (("door", lambda: os.mkdir({str(scratch / "records" / "cell")!r})),
                      ("file", lambda: open({str(scratch / "records" / "x.safetensors")!r}, "w")),
                      ("rename", lambda: os.rename({str(scratch / "records")!r}, {str(scratch / "old")!r})),
                      ("replace", lambda: os.mkdir({str(scratch / "records2")!r}))):
    try:
        attempt()
        result[name] = "done"
    except OSError as error:
        result[name] = type(error).__name__
print(json.dumps(result))""",
    )
    assert seen == {
        "door": "PermissionError",
        "file": "PermissionError",
        "rename": "PermissionError",
        "replace": "PermissionError",
    }, seen


def test_no_network_not_even_the_graders_loopback(spec):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(5)
    port = listener.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: accepted.append(_accept(listener)), daemon=True).start()
    seen = run(
        spec,
        f"""
import json, socket
out = {{}}
for host in ("127.0.0.1", "1.1.1.1"):
    try:
        socket.create_connection((host, {port}), timeout=3).close()
        out[host] = "connected"
    except OSError as error:
        out[host] = error.strerror or type(error).__name__
print(json.dumps(out))""",
    )
    assert "connected" not in seen.values(), seen
    assert accepted in ([], [None])


def _accept(listener):
    try:
        return listener.accept()
    except OSError:
        return None


FORK_BOMB = """
import json, os, sys, time
children = 0
try:
    for _ in range(5000):
        if os.fork() == 0:
            time.sleep(%s)
            os._exit(0)
        children += 1
except OSError as error:
    stopped = error.strerror
else:
    stopped = None
print(json.dumps({"children": children, "stopped": stopped}), flush=True)
for _ in range(children):
    os.wait()  # holds them all until they end
"""


def test_a_fork_bomb_stops_at_the_process_limit(spec):
    seen = run(spec, FORK_BOMB % 3)
    assert seen["stopped"] and seen["children"] < 64, seen


def test_a_fork_bomb_does_not_starve_the_next_students_kernel(view, spec):
    """Two sandboxes graded side by side: while one holds every process its limit allows, the other
    still gets its own (a per-sandbox user id: the limit counts per user)."""
    other = sandbox.make_spec(view.parent / "scratch-2", view, processes=64)
    if spec.uid is not None:
        assert other.uid != spec.uid
    bomb = subprocess.Popen(
        sandbox.command(spec, [sys.executable, "-c", FORK_BOMB % 20], {}), stdout=subprocess.PIPE, text=True
    )
    try:
        assert json.loads(bomb.stdout.readline())["stopped"]  # the first sandbox is now full
        seen = run(other, FORK_BOMB % 0.5)
        assert seen["children"] >= 32, seen
    finally:
        bomb.kill()
        bomb.wait()


def test_no_secret_in_the_kernels_environment(spec):
    argv = sandbox.command(
        spec,
        [sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"],
        {"GRADEBOOK_URL": "postgresql://ta:secret@db/course", "JUPYTER_TOKEN": "abc", "OMP_NUM_THREADS": "1"},
    )
    env = json.loads(subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout)
    assert "GRADEBOOK_URL" not in env and "JUPYTER_TOKEN" not in env
    assert env["OMP_NUM_THREADS"] == "1" and env["HF_HUB_OFFLINE"] == "1"


def test_a_virtualenv_reached_through_a_symlink_runs_in_the_sandbox(view, tmp_path):
    """A second checkout sharing one virtualenv through a symlink: the kernel is started by the
    symlinked path (sys.executable), which the sandbox must have too (it used to mount only the
    resolved one, and the probe then blamed user namespaces)."""
    link = tmp_path / "shared-venv"
    link.symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    code = (
        "import sys; from staff.grading.execution import sandbox; sandbox.probe(); "
        "print(sys.prefix, [d for _, d in sandbox.python_mounts()])"
    )
    done = subprocess.run(
        [str(link / "bin" / "python"), "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout.startswith(str(link)) and repr(str(link)) in done.stdout


def test_the_kernels_own_folders_are_size_limited_and_no_file_is_huge(spec):
    """A kernel filling its working folder stops at its quota (a tmpfs in the sandbox: the grader's
    disk is not touched), and no file anywhere grows past the file-size limit."""
    seen = run(
        spec,
        f"""
import errno, json, os
block = b"\\0" * 2**24
def fill(paths, limit):
    written = 0
    try:
        for path in paths:
            with open(path, "wb") as f:
                for _ in range(limit // len(block)):
                    f.write(block); f.flush(); written += len(block)
        return written, "no error"
    except OSError as error:
        return written, errno.errorcode.get(error.errno, str(error.errno))
work = fill([os.path.join(os.getcwd(), f"part{{i}}") for i in range(64)], 2**26)  # files of 64 MB
shared = fill([{str(Path(spec.scratch) / "ipc" / "big")!r}], 2**31)
print(json.dumps({{"work": work, "shared": shared}}))""",
    )
    assert seen["work"][1] == "ENOSPC" and seen["work"][0] <= quota.PRIVATE["work"], seen
    assert seen["shared"][1] == "EFBIG" and seen["shared"][0] <= quota.MAX_FILE_BYTES, seen
    assert not list((Path(spec.scratch) / "work").iterdir())  # it was never on this machine's disk
    assert quota.shared_bytes(Path(spec.scratch)) <= quota.MAX_FILE_BYTES
    (Path(spec.scratch) / "ipc" / "big").unlink()


def test_another_cpus_kernels_can_be_tried_in_the_sandbox(spec):
    """`ATEN_CPU_CAPABILITY=default make autograde` grades with PyTorch's portable kernels, as on
    another CPU (the canary then shows whether the solutions still get full marks there): the
    variable must reach the kernel."""
    argv = sandbox.command(
        spec,
        [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
        {"ATEN_CPU_CAPABILITY": "default"},
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1] == "DEFAULT", done.stderr[-500:]
