"""Before you submit: the notebooks' last cell, ``submission.check("<assignment>")``.

What students of other courses know as otter-grader's ``check_all`` and ``export``, without either
of their side effects: it writes nothing, grades nothing and changes nothing. It reads the notebook
as it will be handed in (the saved file locally, the open notebook on Colab), compares its cells
with the released notebook (:mod:`course.cell_audit`), runs a copy of it top to bottom in a fresh
kernel within the grading limits (:mod:`course.fresh_run`), and says which visible checks pass,
what is left to do and which file to upload. Under nbgrader (autograde, the canary, validation) it
prints one line and does nothing else: there the notebook holds the hidden tests, and a second run
would only cost the grader's time. It never raises: a broken notebook still gets its report.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from course import cell_audit, settings

#: Seconds Colab's frontend may take to hand over the open notebook.
COLAB_TIMEOUT = 30
#: The grade id (and cell id) of the notebooks' last cell.
CELL_ID = "submission_check"
#: The notebooks' last cell (read-only, after the recap), one per assignment: :func:`cell_source`.
CELL = """# Before you submit: save the notebook (Ctrl+S; on Colab there is no need), then run this cell. It changes
# nothing and grades nothing: it compares your cells with the released notebook, runs a copy top to bottom in a
# fresh kernel within the grading time limit, and says what is left to fix and which file to hand in.
from course import submission
submission.check("{assignment}")"""


def cell_source(assignment: str) -> str:
    return CELL.format(assignment=assignment)


class _Unavailable(Exception):
    """The notebook to check could not be read: the message says why and what to do."""


def _loads(text: str, where: str):
    """A notebook as plain JSON, sources joined into strings as nbformat would. Not nbformat itself:
    its import takes seconds (its schema validator's dependencies; docs/scaling.md), and this must be
    instant."""
    try:
        nb = json.loads(text)
        if not (isinstance(nb, dict) and nb.get("nbformat") == 4 and isinstance(nb.get("cells"), list)):
            raise ValueError("not a version 4 notebook")
        for cell in nb["cells"]:
            if isinstance(cell.get("source"), list):
                cell["source"] = "".join(cell["source"])
            cell.setdefault("metadata", {})
            cell.setdefault("source", "")
        return nb
    except (ValueError, TypeError, AttributeError) as error:  # the grader could not read it either
        raise _Unavailable(
            f"{where} cannot be read as a notebook ({type(error).__name__}: {str(error)[:200]}); "
            f"the grader could not read it either: start again from a fresh copy of the "
            f"released notebook and paste your answers in"
        ) from None


def _read(path: Path):
    return _loads(path.read_text(encoding="utf-8", errors="replace"), str(path))


def _from_colab():
    """The notebook open in Colab's frontend (the file on Drive may be older or missing)."""
    try:
        from google.colab import _message

        reply = _message.blocking_request("get_ipynb", request="", timeout_sec=COLAB_TIMEOUT)
    except Exception as error:  # an old or a stand-in runtime without the request
        raise _Unavailable(
            f"Colab did not hand over the notebook ({type(error).__name__}: {error}): run this cell again"
        ) from None
    if not isinstance(reply, dict) or not isinstance(reply.get("ipynb"), dict):
        raise _Unavailable("Colab did not hand over the notebook (reply timed out): run this cell again")
    return _loads(json.dumps(reply["ipynb"]), "the notebook open in Colab")


def _candidates(assignment: str) -> list[Path]:
    """Where this kernel's notebook may be saved, most certain first."""
    found = []
    session = settings.jupyter_session_path()
    if session and session.endswith(".ipynb"):
        found += [Path(session), Path.cwd() / session, Path.cwd() / Path(session).name]
    try:  # VS Code's kernels name their notebook in the namespace instead
        from IPython import get_ipython

        shell = get_ipython()
        vscode = shell and shell.user_ns.get("__vsc_ipynb_file__")
        if isinstance(vscode, str):
            found.append(Path(vscode))
    except ImportError:
        pass
    return found + [Path.cwd() / f"{assignment}.ipynb"]


def student_notebook(assignment: str, path: Path | None = None):
    """(notebook, where it was read, its path on disk or None on Colab)."""
    if path is None and settings.on_colab():
        return _from_colab(), "the notebook open in Colab", None
    for candidate in [path] if path is not None else _candidates(assignment):
        if candidate.is_file():
            return _read(candidate), str(candidate.resolve()), candidate.resolve()
    raise _Unavailable(
        f"the saved notebook was not found (looked for {assignment}.ipynb in {Path.cwd()}); "
        f"save it (File > Save) under that name, next to where it was released, and run this "
        f"cell again"
    )


def released_notebook(assignment: str, student: Path | None = None):
    """The notebook as released: the course repository's release/<assignment>/, or the student
    bundle's <assignment>/ (Colab's clone, or a local clone of it). A student working in that very
    file (the usual local set-up) compares with git's committed copy of it."""
    name = f"{assignment}.ipynb"
    for path in (settings.ROOT / "release" / assignment / name, settings.ROOT / assignment / name):
        if not path.is_file():
            continue
        if student is None or not path.samefile(student):
            return _read(path)
        try:
            done = subprocess.run(
                ["git", "show", f"HEAD:./{name}"], cwd=path.parent, capture_output=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode == 0:
            return _loads(done.stdout.decode("utf-8", errors="replace"), f"git's copy of {path}")
    return None


def _kernel_count() -> int | None:
    try:
        from IPython import get_ipython

        shell = get_ipython()
        return shell.execution_count if shell is not None else None
    except ImportError:
        return None


def staleness(nb, path: Path | None) -> str | None:
    """A warning when the saved file misses cells this kernel has run since (Jupyter's autosave
    lags; the file is what gets uploaded): its highest execution count against the kernel's."""
    if path is None:
        return None
    counts = [c.get("execution_count") or 0 for c in nb["cells"] if c.get("cell_type") == "code"]
    saved, following = max(counts, default=0), _kernel_count()
    # While a cell runs, IPython's count is already the next cell's: the last finished run is two below.
    last = following - 2 if following is not None else None
    age = time.time() - path.stat().st_mtime
    when = f"saved {age / 60:.0f} min ago" if age >= 60 else f"saved {age:.0f} s ago"
    if last is not None and saved < last:
        return (
            f"the saved file ({when}) is older than your last runs (it holds runs up to [{saved}], this "
            f"kernel has run up to [{last}]): save the notebook (File > Save, Ctrl+S) and run this "
            f"cell again, or what you upload will miss them"
        )
    return None


def hand_in(assignment: str, path: Path | None) -> str:
    expected = f"{assignment}.ipynb"
    if path is None:
        return (
            f"On Colab: File > Download > Download .ipynb. The file must be named {expected}: Colab names it "
            f"after the title at the top left, so rename a `Copy of ...` or `... (1)` download to "
            f"{expected}, then upload it to the learning platform (it adds your name)."
        )
    rename = (
        f" Rename it to {expected} first (the grader looks for that name)." if path.name != expected else ""
    )
    return (
        f"Upload this saved file to the learning platform: {path}.{rename} The platform adds your name "
        f"to it: do not add it yourself."
    )


def report(assignment: str, path: Path | None = None, fresh: bool = True, progress: bool = True) -> str:
    """The report as text (``check`` prints it)."""
    started = time.perf_counter()
    lines = [f"Before you submit {assignment}:"]
    try:
        nb, where, saved = student_notebook(assignment, path)
    except _Unavailable as problem:
        return "\n".join(lines + [f"  ✗ {problem}", "", hand_in(assignment, path)])
    lines.append(f"  checked: {where}")
    warning = staleness(nb, saved)
    if warning:
        lines.append(f"  ! {warning}")
    audit = cell_audit.audit(nb, released_notebook(assignment, saved))
    unchanged = (
        f"{len(audit.restored)} read-only cell(s) differ from the release (restored at grading)"
        if audit.restored
        else "read-only cells unchanged"
    )
    lines.append(
        "Cells and metadata: "
        + (
            f"{len(audit.problems)} problem(s) the grader would trip on"
            if audit.problems
            else f"every graded cell in place, {unchanged}"
        )
    )
    lines += [f"  ✗ {p}" for p in audit.problems] + [f"  ! {r}" for r in audit.restored]
    lines += [f"  ({note})" for note in audit.notes]
    lines.append("Answers still as released: " + (f"{len(audit.stubs)}" if audit.stubs else "none"))
    lines += [f"  ✗ {s}" for s in audit.stubs]
    lines.append(f"(static checks: {time.perf_counter() - started:.2f} s)")
    ran = _fresh(nb, fresh, progress, lines)
    label = "in the fresh run" if ran is not None else "as saved (their outputs in the file)"
    outcomes = cell_audit.visible_checks(ran.nb if ran is not None else nb)
    failed = [o for o in outcomes if o[1] != "passed"]
    lines.append(f"Visible checks {label}: {len(outcomes) - len(failed)} of {len(outcomes)} passed")
    lines += [f"  {'✓' if outcome == 'passed' else '✗'} {what}: {outcome}" for what, outcome in outcomes]
    todo = len(audit.problems) + len(audit.stubs) + len(failed) + bool(warning) + bool(ran and ran.stopped)
    # Not a grade: the hidden tests grade, and the fresh run used the grader's (smaller) settings.
    done = (
        "Ready to hand in: nothing above to fix. This is not a grade: the hidden tests grade your "
        "answers after the deadline."
    )
    lines += [
        "",
        done if not todo else f"{todo} thing(s) above to fix before you hand in.",
        hand_in(assignment, saved),
    ]
    return "\n".join(lines)


def _fresh(nb, fresh: bool, progress: bool, lines: list[str]):
    """Run the copy (or say why not) and describe the run into ``lines``."""
    limits = settings.current()
    if not fresh or limits.skip_fresh_run:
        why = (
            "asked not to"
            if not fresh
            else f"{settings.SKIP_FRESH_RUN_VARIABLE}=1: a program is running this notebook"
        )
        lines.append(f"Fresh run: skipped ({why})")
        return None
    from course import fresh_run

    lines_before = len(lines)
    ran = fresh_run.run(nb, progress=progress)
    within = ran.seconds <= limits.notebook_timeout and not ran.stopped
    lines.append(
        f"Fresh run: {ran.cells_run} code cell(s) in {ran.seconds:.1f} s in a fresh kernel, with the "
        f"grader's settings: {'within' if within else 'NOT within'} the grading limits "
        f"(limits: {limits.notebook_timeout} s for the notebook, {limits.cell_timeout} s per cell)"
    )
    if ran.stopped:
        lines.append(f"  ✗ stopped: {ran.stopped}")
    elif ran.seconds > limits.notebook_timeout / 2:
        lines.append(
            "  ! over half the limit here: the grader's machine may be slower; make the slow cells faster"
        )
    error = ran.first_error()
    if error:
        index, name, message = error
        if name == "NotImplementedError" and not message:
            message = "an answer it uses is still the released stub"
        lines.append(f"  first cell that raised: cell {index + 1}: {name}: {message}")
    elif lines_before == len(lines) - 1 and not ran.stopped:
        lines.append("  every cell ran without an error")
    return ran


def check(assignment: str, fresh: bool = True) -> None:
    """Print the report. Under nbgrader, one line and nothing else (see the module's docstring)."""
    if settings.under_autograde():
        print("submission check: skipped (this notebook is being run by nbgrader)")
        return
    try:
        print(report(assignment, fresh=fresh), flush=True)
    except Exception as error:  # the report of a broken notebook must not become the notebook's error
        print(
            f"submission check could not finish ({type(error).__name__}: {error}); nothing was changed. "
            f"Save the notebook and run this cell again; if it keeps failing, ask on the course forum."
        )
