"""nbgrader configuration for the course (read by every `nbgrader` command run from this folder).

Values that can change per run (timeouts, where fixtures live, offline mode) come from
course/settings.py, the one place that reads the environment."""

import os
from pathlib import Path

from course import (
    settings,  # importing the course package also applies the hub mode (offline: HF_HUB_OFFLINE=1)
)
from staff import course_dir
from staff.course_dir import CourseDir

ROOT = Path(__file__).resolve().parent
current = settings.current()

c = get_config()  # noqa: F821 (provided by nbgrader/traitlets when this file is loaded)

c.CourseDirectory.course_id = course_dir.COURSE_ID
c.CourseDirectory.root = str(ROOT)
# The one gradebook URL every command uses (GRADEBOOK_URL, else SQLite with a lock timeout, so a TA
# saving a grade while a batch writes waits instead of failing with "database is locked"), for the
# course in this file's folder.
c.CourseDirectory.db_url = CourseDir(ROOT).db_url
# The exchange (nbgrader's release/collect folder for JupyterHub setups) lives in the course
# folder, not /usr/local/share/nbgrader/exchange: without it the formgrader logs a critical error
# on every request and disables release/collect. Students here get notebooks through Colab and
# the LMS (`make collect`), so it only needs to exist; it is created when missing, git-ignored.
c.Exchange.root = str(ROOT / "exchange")
(ROOT / "exchange").mkdir(exist_ok=True)
# Never copy editor or Python caches, or an id the setup cell kept (course/variant.py), from source/
# into release/.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".course-student"]

# Per-cell limit for every execution (validate, autograde): CELL_TIMEOUT. Training cells cap
# themselves under autograde (NBGRADER_EXECUTION), so this is a safety net.
c.Execute.timeout = current.cell_timeout
c.Execute.interrupt_on_timeout = True

# The public address is stamped into the notebooks first, so the gradebook's copy of every
# locked cell has it too (staff/authoring/release.py); then nbgrader's own steps, unchanged.
c.GenerateAssignment.preprocessors = [
    "staff.authoring.release.StampPublicAddress",
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.InstantiateTests",
    "nbgrader.preprocessors.LockCells",
    "nbgrader.preprocessors.ClearSolutions",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.CheckCellMetadata",
]

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Grading kernels run in autograded/<student>/<assignment>/ and inherit this environment, so
# course.paths finds the fixtures whatever the kernel's cwd (COURSE_FIXTURES, course/settings.py).
os.environ[settings.FIXTURES_VARIABLE] = str(current.fixtures)
os.environ.setdefault("MPLBACKEND", "Agg")

# No output of a student's kernel runs, fetches or dresses up as the page in the browser of whoever reads
# it (a TA in the formgrader, where it could act in their Jupyter session): nbconvert's sanitizer on HTML,
# markdown and SVG outputs and raw cells, no JavaScript, with the course's policy as its filter (no class,
# style or id, images only as data: PNG/JPEG/GIF, no relative URL). Markdown cells are cleaned by the
# formgrader's template and by feedback's SanitizeCells below (staff/grading/review/markdown_policy.py).
c.HTMLExporter.sanitize_html = True
c.HTMLExporter.filters = {"clean_html": "staff.grading.review.markdown_policy.clean_html"}

# Feedback shows hidden tests only as their points and the judge's line per check, and answers no TA
# has graded yet as pending, never as zero (staff/grading/results/feedback.py).
c.GenerateFeedback.preprocessors = [
    "staff.grading.gradebook.late.ChargeLatePenalty",  # the late penalty on the final points (see below), then read
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "staff.grading.review.markdown_policy.SanitizeCells",  # a student's markdown as the formgrader shows it to TAs
    "staff.grading.results.feedback.RedactHiddenTests",
    "staff.grading.results.feedback.ShowPending",
    "staff.grading.results.feedback.LabelCells",
    "staff.grading.results.feedback.HoldFlagged",  # a flagged submission no TA decided on: "under review", no points
]
# nbgrader's feedback page with the course's header and contents (staff/grading/results/templates/course_feedback),
# through an exporter of the feedback's own: the formgrader's grading page keeps its template.
c.GenerateFeedback.exporter_class = "staff.grading.results.feedback.FeedbackExporter"

# Late work (staff/grading/gradebook/late.py): due dates live in due_dates.toml, when each submission arrived
# in its timestamp.txt; nbgrader's late-penalty plugin seam charges the difference. The course's
# policy, set here and nowhere else: 10 % of a notebook's points per started day late, at most
# 50 % (late work scoring zero would be per_day = cap = 1.0).
c.AssignLatePenalties.plugin_class = "staff.grading.gradebook.late.CourseLatePenalty"
c.CourseLatePenalty.per_day = 0.10
c.CourseLatePenalty.cap = 0.50
