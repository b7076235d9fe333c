"""course/qa.py: the questions assignment 6 builds from the shipped dictionary, and the pipeline's
answer through its own steps (transformers 5 has no question-answering task)."""

from __future__ import annotations

import collections
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


def test_squad_exact_match_and_f1_follow_the_official_normalisation():
    # lower case, punctuation and articles dropped, whitespace collapsed (SQuAD's evaluate-v2.0.py)
    assert qa.exact_match("The  Cat, sat.", "cat sat") == 1.0
    assert qa.exact_match("a cat", "the dog") == 0.0
    assert qa.f1("a big cat sat", "the cat sat down") == 2 * (2 / 3) * (2 / 3) / (4 / 3)
    assert qa.f1("cat cat", "cat") == 2 * 0.5 * 1.0 / 1.5  # a shared word counts as often as in both
    # no answer: right only when both are empty
    assert (qa.f1("", ""), qa.f1("x", ""), qa.f1("", "x"), qa.exact_match("", "")) == (1.0, 0.0, 0.0, 1.0)


def test_held_out_questions_use_words_and_definitions_training_never_sees():
    train, held_out = qa.split_entries()
    assert not {w for w, _ in train} & {w for w, _ in held_out}
    # a definition on both sides is one the dictionary gives two words (the split is by entry)
    shared = {d for _, d in train} & {d for _, d in held_out}
    words_of = collections.Counter(d for _, d in qa.dictionary_entries())
    assert all(words_of[d] > 1 for d in shared) and len(shared) < 10
    definitions = {d for _, d in held_out}
    questions = qa.held_out_questions(qa.HELD_OUT_QUESTIONS)
    assert questions == qa.held_out_questions(qa.HELD_OUT_QUESTIONS)  # the same on every machine
    answered = [q for q in questions if q[3]]
    assert all(answer in definitions for *_, answer in answered)
    assert 0.7 < len(answered) / len(questions) < 0.9  # one in five without an answer


def test_the_first_definition_rule_answers_with_the_contexts_first_entry():
    context = (
        "Abasement: A decent and customary mental attitude. Ability: The natural equipment to accomplish."
    )
    assert qa.first_definition(context) == "A decent and customary mental attitude"
    question, context, _, answer = qa.make_question(random.Random(3), 1)
    assert qa.first_definition(context) == answer
