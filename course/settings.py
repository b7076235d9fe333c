"""Every environment setting the course honours, read here and nowhere else.

Students' notebooks, the instructor's commands, ``nbgrader_config.py`` and the tests all ask
:func:`current` (it reads ``os.environ`` each time, so a setting changed by a test or a shell
applies at once). The "Settings" table of docs/admin.md documents exactly these variables.

=====================  ==========================================================  ==================
variable               what it does                                                default
=====================  ==========================================================  ==================
``COURSE_ONLINE``      1: Hugging Face hub models and SST-2; 0: the offline         1 on Colab (not
                       model package and the course's own data                      under autograde),
                                                                                    else 0
``COURSE_FIXTURES``    the ``fixtures/`` folder to load saved tensors from. Grading  the folder next to
                       kernels run in ``autograded/<student>/<assignment>/``, so     this package
                       a relative path would fail there; ``nbgrader_config.py``
                       exports the course's own folder and kernels inherit it
``COURSE_REPO``        the public student repository the Colab setup cell clones     :data:`PUBLIC_REPO`
                       (a fork, or a ``file://`` clone in the tests)
``COURSE_STUDENT``     the student id whose variant of the experiments a notebook    asked once by the
                       runs (:mod:`course.variant`); the tests and `make solutions`  setup cell (kept in
                       set the worked example's                                      ``.course-student``)
``JOBS``               submissions graded at once                                    one per core
``CELL_TIMEOUT``       seconds one cell may run under validate/autograde             300
``NOTEBOOK_TIMEOUT``   seconds one submission may take in all (then it is killed)    900
``MEMORY_GB``          address-space limit of each grading process, in GiB           8
``SCHEDULER``          a Dask scheduler to grade on (``tcp://host:8786``); unset:    a local cluster,
                       a ``LocalCluster`` on this machine                            ``JOBS`` workers
``GRADEBOOK_URL``      nbgrader's ``db_url`` for the gradebook                       ``sqlite:///`` the
                       (``postgresql+psycopg://user:pass@host/db``)                  course's
                                                                                     ``gradebook.db``
=====================  ==========================================================  ==================

``COURSE_SKIP_FRESH_RUN=1`` (default unset): the notebooks' last cell (``course.submission.check``)
checks the notebook but does not run it again in a fresh kernel. Set wherever a program executes
notebooks (release validation, the tests, the fresh run's own copy), which would otherwise run each
notebook twice; under nbgrader (``NBGRADER_EXECUTION``) the cell does nothing at all.

``HF_HUB_OFFLINE`` is not a course setting but is derived from ``COURSE_ONLINE`` by
:func:`apply_hub_mode`: offline, a hub name must fail at once instead of after a long network wait.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

#: The public repository students fetch on Colab (built by ``make publish``). The one place the
#: address is set: ``make release`` stamps it into every notebook's badge and setup cell.
PUBLIC_REPO = "https://github.com/transformers-course/transformers-course-student"

ONLINE_VARIABLE = "COURSE_ONLINE"
FIXTURES_VARIABLE = "COURSE_FIXTURES"
#: Read by the notebooks' setup cell itself (it runs before ``course`` can be imported).
REPO_VARIABLE = "COURSE_REPO"
#: The student whose variant of the experiments runs (course.variant); a grading kernel never
#: inherits the grader's: the grader sets each submission's own inside its kernel.
STUDENT_VARIABLE = "COURSE_STUDENT"
#: Set by every program that executes notebooks, so their last cell does not execute them again.
SKIP_FRESH_RUN_VARIABLE = "COURSE_SKIP_FRESH_RUN"

#: The folder that holds ``course/`` (the repository, or the student bundle on Colab).
ROOT = Path(__file__).resolve().parent.parent

_TRUE = {"1", "true", "yes", "on"}


def _number(name: str, default: float, kind: type = int):
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a {kind.__name__}; unset it or give a number") from None
    if value <= 0:
        raise ValueError(f"{name}={raw!r} must be positive")
    return value


def on_colab() -> bool:
    return "google.colab" in sys.modules


def under_autograde() -> bool:
    """nbgrader sets NBGRADER_EXECUTION in the grading kernel; used to cap slow work."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def jupyter_session_path() -> str | None:
    """The notebook file this kernel was started for: ``JPY_SESSION_NAME``, which jupyter_server 2
    sets in every kernel it starts (not a course setting: read here as every variable is)."""
    return os.environ.get("JPY_SESSION_NAME") or None


@dataclass(frozen=True)
class Settings:
    online: bool
    fixtures: Path
    jobs: int | None
    cell_timeout: int
    notebook_timeout: int
    memory_gb: float
    scheduler: str | None
    gradebook_url: str | None
    skip_fresh_run: bool
    lms_exports: tuple[str, ...]  # what make export writes besides grades.csv (staff/grading/results/lms.py)
    student: str | None  # whose variant of the experiments runs (course.variant)
    formgrader_url: str  # where TAs open the formgrader: the report links its grading pages there

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gb * 2**30)


def current() -> Settings:
    """The settings as the environment says now."""
    online = os.environ.get(ONLINE_VARIABLE)
    return Settings(
        online=(on_colab() and not under_autograde()) if online is None else online.strip().lower() in _TRUE,
        fixtures=Path(os.environ.get(FIXTURES_VARIABLE) or ROOT / "fixtures").resolve(),
        jobs=_number("JOBS", None),
        cell_timeout=_number("CELL_TIMEOUT", 300),
        notebook_timeout=_number("NOTEBOOK_TIMEOUT", 900),
        memory_gb=_number("MEMORY_GB", 8.0, float),
        scheduler=os.environ.get("SCHEDULER", "").strip() or None,
        gradebook_url=os.environ.get("GRADEBOOK_URL", "").strip() or None,
        skip_fresh_run=os.environ.get(SKIP_FRESH_RUN_VARIABLE, "").strip().lower() in _TRUE,
        student=os.environ.get(STUDENT_VARIABLE, "").strip() or None,
        formgrader_url=os.environ.get("FORMGRADER_URL", "").strip().rstrip("/") or "http://127.0.0.1:8888",
        lms_exports=tuple(
            name.strip().lower()
            for name in os.environ.get("LMS_EXPORTS", "canvas,wide").split(",")
            if name.strip()
        ),
    )


def apply_hub_mode() -> None:
    """Offline, make a Hugging Face hub name fail at once (``HF_HUB_OFFLINE=1``) instead of after a
    long network wait. Must run before ``huggingface_hub`` is imported (it reads the variable at
    import), so the course package calls it when it is imported, and processes it starts (grading
    kernels) inherit it. An explicit ``HF_HUB_OFFLINE`` is left alone."""
    if not current().online:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
