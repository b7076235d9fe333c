"""course/qa.py: the questions assignment 6 builds from the shipped dictionary, and the pipeline's
answer through its own steps (transformers 5 has no question-answering task)."""

from __future__ import annotations

import random

from course import qa


def test_dictionary_entries_are_plain_one_word_definitions():
    entries = qa.dictionary_entries()
    assert len(entries) > 400
    for word, definition in entries:
        assert word.isalpha() or "'" in word, word
        assert 3 <= len(definition.split()) <= 14 and not definition.endswith(".")


def test_questions_point_at_their_answer_in_the_context():
    rng = random.Random(0)
    for n_entries in (1, 2, 3, 8):
        question, context, start, answer = qa.make_question(rng, n_entries)
        assert question.startswith("What is ") and question.endswith("?")
        assert context[start : start + len(answer)] == answer and answer
        word = question[len("What is ") : -1]
        assert context[:start].endswith(f"{word.capitalize()}: ")


def test_unanswerable_questions_ask_about_a_word_the_context_does_not_define():
    question, context, start, answer = qa.make_question(random.Random(1), 3, answerable=False)
    assert (start, answer) == (-1, "")
    assert f"{question[len('What is ') : -1].capitalize()}:" not in context


def test_the_same_seed_gives_the_same_questions():
    assert qa.make_question(random.Random(5), 3) == qa.make_question(random.Random(5), 3)
