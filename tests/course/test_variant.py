"""Each student's own variant of the experiments (course/variant.py): picked from the id, the same
everywhere, never the worked example's, asked once and kept."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from course import settings, variant

IDS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,20}", fullmatch=True)


@pytest.fixture(autouse=True)
def no_id_set(monkeypatch):
    monkeypatch.delenv(settings.STUDENT_VARIABLE, raising=False)


def test_the_worked_example_is_each_settings_first_value_and_the_notebooks_defaults():
    assert variant.of("01_attention", variant.WORKED).values == {"seed": 0, "keys": 16}
    pair = variant.of("03_visualising_attention", variant.WORKED).pair
    assert (pair.text, pair.text_pair, pair.word) == (
        "time flies like an arrow",
        "fruit flies like a banana",
        "flies",
    )


@given(IDS)
def test_a_student_never_gets_the_worked_examples_values_and_always_the_same_ones(student):
    for assignment, choices in variant.CHOICES.items():
        chosen = variant.of(assignment, student)
        assert chosen == variant.of(assignment, student)
        for name, options in choices.items():
            assert getattr(chosen, name) in options[1:]


def test_a_class_gets_many_different_variants():
    """Two students rarely share a variant: 300 ids give nearly as many distinct tables in
    assignment 1, and every one of assignment 3's pairs is used."""
    students = [f"s{number:04d}" for number in range(300)]
    first = {tuple(variant.of("01_attention", s).values.values()) for s in students}
    third = {variant.of("03_visualising_attention", s).pair for s in students}
    assert len(first) > 250
    assert third == set(variant.CHOICES["03_visualising_attention"]["pair"][1:])


def test_the_id_is_asked_once_kept_and_printed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    asked = []
    chosen = variant.mine("01_attention", ask=lambda prompt: asked.append(prompt) or " s123 ")
    assert chosen.student == "s123" and len(asked) == 1
    assert (tmp_path / variant.ID_FILE).read_text().strip() == "s123"
    again = variant.mine("01_attention", ask=lambda prompt: pytest.fail("asked twice"))
    assert again == chosen
    printed = capsys.readouterr().out.splitlines()
    assert (
        printed[0].startswith(variant.PRINTED + "'s123': seed ") and "kept in .course-student" in printed[0]
    )
    assert printed[1] == f"Your {chosen.describe()}"


def test_the_setting_wins_and_a_run_nobody_can_ask_gets_the_worked_example(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / variant.ID_FILE).write_text("s1\n")
    monkeypatch.setenv(settings.STUDENT_VARIABLE, "s2")
    assert variant.mine("03_visualising_attention").student == "s2"
    monkeypatch.delenv(settings.STUDENT_VARIABLE)
    (tmp_path / variant.ID_FILE).unlink()

    def no_stdin(prompt):
        raise OSError("reading from stdin while output is captured")

    assert variant.mine("03_visualising_attention", ask=no_stdin).student == variant.WORKED
    assert "the worked example's" in capsys.readouterr().out
    assert not (tmp_path / variant.ID_FILE).exists()


@pytest.mark.parametrize("typed", ["", "  ", "two words", "../etc/passwd", "-rf", "x" * 65])
def test_an_id_that_is_no_id_is_refused_saying_what_an_id_is(tmp_path, monkeypatch, typed):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="is not a student id .*letters, digits"):
        variant.mine("01_attention", ask=lambda prompt: typed)
    assert not (tmp_path / variant.ID_FILE).exists()
    monkeypatch.setenv(settings.STUDENT_VARIABLE, "a b")
    with pytest.raises(ValueError, match="COURSE_STUDENT='a b' is not a student id"):
        variant.mine("01_attention")


def test_an_assignment_without_variants_has_none():
    """Every assignment of the course has its variants, or says why its questions need none; one `make
    new-assignment` just scaffolded has none."""
    from staff import course_dir

    assert set(variant.CHOICES) | set(variant.WITHOUT_VARIANTS) == set(course_dir.assignments())
    assert not set(variant.CHOICES) & set(variant.WITHOUT_VARIANTS)
    assert variant.of("07_new_assignment", "s1").values == {}
    with pytest.raises(AttributeError, match="has no setting 'seed'"):
        _ = variant.of("02_distilbert", "s1").seed


def test_a_submission_is_graded_under_its_students_id_and_a_name_that_is_no_id_under_the_worked_examples():
    assert variant.graded_as("s-1.2") == "s-1.2"
    assert variant.graded_as("(canary)") == variant.WORKED  # the canary runs the instructor's solution
    assert variant.graded_as("two words") == variant.WORKED
