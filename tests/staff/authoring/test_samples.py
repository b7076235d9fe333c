"""Sample submissions: a typo in a cell name or a missing expected score fails loudly."""

import pytest

from staff.authoring import samples


def test_samples_refuse_unknown_answer_cells(tmp_path):
    path = tmp_path / "typo.py"
    path.write_text("# expected_score: 0\n# %% softmaxx\nx = 1\n")
    sample = samples.parse(path, "01_attention")
    with pytest.raises(KeyError, match="softmaxx"):
        samples.fill(sample)


def test_samples_need_an_expected_score(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("# %% softmax\nx = 1\n")
    with pytest.raises(ValueError, match="expected_score"):
        samples.parse(path, "01_attention")


def test_an_included_file_goes_first_into_the_first_cell(tmp_path):
    path = tmp_path / "tricks.py"
    path.write_text(
        "# expected_score: 0\n# include: zero_work_tricks.py\n# %% softmax\nextra = 1\n# %% self_attention\ny = 2\n"
    )
    sample = samples.parse(path, "01_attention")
    shared = (samples.course_dir.SAMPLES / "zero_work_tricks.py").read_text().strip("\n")
    assert sample.cells["softmax"] == shared + "\n\nextra = 1" and sample.cells["self_attention"] == "y = 2"
    for assignment in samples.course_dir.assignments():  # every assignment plays the same tricks
        tricks = {s.student: s for s in samples.load(assignment)}["zero_work_tricks"]
        assert next(iter(tricks.cells.values())).startswith(shared) and tricks.expected_score == 0


def test_every_sample_student_has_a_name_in_the_roster():
    """The formgrader lists a student without one as "None, None"."""
    import csv

    with samples.ROSTER.open() as f:
        named = {row["id"] for row in csv.DictReader(f) if row["first_name"] and row["last_name"]}
    students = {s.student for a in samples.course_dir.assignments() for s in samples.load(a)}
    assert students <= named, sorted(students - named)


def test_the_sample_roster_has_one_id_per_person():
    """Two ids with one name or email would read as one student with two accounts."""
    import csv
    from collections import Counter

    with samples.ROSTER.open() as f:
        rows = list(csv.DictReader(f))
    for what in (
        (lambda r: (r["first_name"], r["last_name"])),
        (lambda r: r["email"].lower()),
        (lambda r: r["id"]),
    ):
        repeated = [key for key, n in Counter(map(what, rows)).items() if n > 1]
        assert not repeated, repeated
