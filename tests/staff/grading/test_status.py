"""What `make autograde` prints at the end: one line of counts, then only the submissions to look at,
each reason cut at a word's end (the per-student score table is `make report`'s, printed once)."""

from __future__ import annotations

from staff.grading.status import Outcome, cut, first_line, summary


def test_the_summary_counts_every_status_and_lists_only_what_needs_a_look():
    reason = (
        "for manual review: softmax: library: uses torch.softmax (line 5): an implementation of exercise 1 "
        * 3
    )
    text = summary([Outcome("ada", "01", "graded", "", 3.0), Outcome("bob", "01", "flagged", reason, 2.0)])
    first, *table = text.splitlines()
    assert first == "autograde: 2 submission(s): 1 graded, 1 flagged; to look at:"
    assert len(table) == 3 and "bob" in table[2] and "ada" not in text.split("\n", 1)[1]
    assert table[2].endswith("…") and not table[2].endswith(" …")
    assert summary([Outcome("ada", "01", "graded", "", 3.0)]) == "autograde: 1 submission(s): 1 graded"


def test_a_reason_is_cut_at_a_word_never_inside_one():
    assert cut("short", 10) == "short"
    assert cut("uses torch.softmax (line 5): an implementation", 30) == "uses torch.softmax (line 5)…"
    assert len(cut("x" * 50, 10)) == 10


def test_an_error_whose_message_cannot_be_written_is_named_by_its_type():
    """nbformat's validation error pretty-prints the offending notebook in its message, which recurses
    past Python's limit on a deeply nested one (found by test_hostile_notebooks' fuzzing): the reason
    names the error's type, and the batch goes on."""

    class Unprintable(ValueError):
        def __str__(self):
            raise RecursionError("maximum recursion depth exceeded")

    assert first_line(Unprintable()) == "Unprintable"
