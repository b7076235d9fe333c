"""nbgrader configuration for the course (read by every `nbgrader` command run from this folder)."""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent

c = get_config()  # noqa: F821 (provided by nbgrader/traitlets when this file is loaded)

c.CourseDirectory.course_id = "transformers-course"
c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.db_url = f"sqlite:///{ROOT / 'gradebook.db'}"
# Never copy editor or Python caches from source/ into release/.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]

# Per-cell limit for every execution (validate, autograde). Training cells in later
# assignments cap themselves under autograde (NBGRADER_EXECUTION), so this is a safety net.
c.Execute.timeout = 300
c.Execute.interrupt_on_timeout = True

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# How grading kernels find fixtures: they run in autograded/<student>/<assignment>/ and inherit
# this environment, so course.paths resolves fixtures here whatever the kernel's cwd.
os.environ.setdefault("COURSE_FIXTURES", str(ROOT / "fixtures"))
# Keep the hub out of grading: a hub name fails fast instead of after a long network wait.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

# Feedback shows hidden tests only as passed/failed with their points (course/redact.py).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "course.redact.RedactHiddenTests",
]
