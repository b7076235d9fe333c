"""The command line's answers to names that do not exist: one line with the valid names, exit 2, and
nothing graded or written."""

from __future__ import annotations

import shutil

from course.settings import ROOT
from support import scratch_checkout, staff_command, tree


def test_an_unknown_assignment_or_student_is_named_with_the_valid_ones(tmp_path):
    checkout = scratch_checkout(tmp_path / "course")
    sample = checkout / "submitted" / "ada" / "01_attention"
    sample.mkdir(parents=True)
    shutil.copy2(ROOT / "release" / "01_attention" / "01_attention.ipynb", sample)
    before = tree(checkout)

    done = staff_command(checkout, "autograde", "01_atention")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == (
        "autograde: no assignment named '01_atention' (did you mean 01_attention?); the assignments: "
        "01_attention, 02_distilbert, 03_visualising_attention, 04_finetuning, 05_decoder, "
        "06_training_decoders, 07_question_answering"
    )

    done = staff_command(checkout, "autograde", "--student", "adaa", "--regrade")
    assert done.returncode == 2 and done.stderr.strip() == (
        "autograde: no submission of 'adaa' in submitted/ (did you mean ada?); students with submissions: ada"
    ), done.stderr
    assert tree(checkout) == before, "nothing graded, nothing written"


def test_an_unknown_lms_format_is_named_with_the_known_ones(tmp_path):
    checkout = scratch_checkout(tmp_path / "course")
    before = tree(checkout)
    done = staff_command(checkout, "export", env={"LMS_EXPORTS": "canvas,moodle"})
    assert done.returncode == 2 and done.stderr.strip() == (
        "export: LMS_EXPORTS names 'moodle'; the formats are canvas, wide (comma-separated; empty: grades.csv only)"
    ), done.stderr
    assert tree(checkout) == before, "nothing written"
