"""course/qa.py: the questions assignment 7 builds from the shipped dictionary, and the pipeline's
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
    questions = qa.held_out_questions(qa.HELD_OUT_QUESTIONS, part="test")
    assert questions == qa.held_out_questions(qa.HELD_OUT_QUESTIONS, part="test")  # the same on every machine
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


def test_the_gate_and_the_test_questions_share_no_word():
    parts = qa.held_out_parts()
    assert set(parts) == set(qa.HELD_OUT_PARTS)
    gate, test = ({w for w, _ in parts[p]} for p in qa.HELD_OUT_PARTS)
    assert gate and test and not gate & test
    assert gate | test == {w for w, _ in qa.split_entries()[1]}
    for part, words in (("gate", gate), ("test", test)):
        questions = qa.held_out_questions(qa.HELD_OUT_QUESTIONS, part=part)
        for question, context, *_ in questions:  # the asked word and every heading of the context
            headings = {entry.split(": ", 1)[0].lower() for entry in context.rstrip(".").split(". ")}
            assert question[len("What is ") : -1] in words and headings <= words


def test_the_heading_rule_answers_every_dictionary_question_and_the_others_do_not():
    questions = qa.held_out_questions(100, part="test")
    truths = [answer for *_, answer in questions]
    assert [qa.heading_lookup(q, c) for q, c, *_ in questions] == truths  # the task needs no reading
    first = qa.scores([qa.first_definition(c) for _, c, *_ in questions], truths)
    overlap = qa.scores([qa.most_shared_words(q, c) for q, c, *_ in questions], truths)
    assert first["answerable exact match"] < 80 and overlap["answerable exact match"] == 0  # heading kept
    assert overlap["answerable F1"] > 80


def test_the_rules_on_a_hand_context():
    context = (
        "Rum: Fiery liquors. Ability: The natural equipment to accomplish some small part. Mr. Smith's cat."
    )
    assert (
        qa.heading_lookup("What is ability?", context)
        == "The natural equipment to accomplish some small part"
    )
    assert qa.heading_lookup("What is gin?", context) == ""
    assert qa.first_sentence("It rained. Then it snowed.") == "It rained"
    assert qa.most_shared_words("What is the natural equipment?", context) == (
        "Ability: The natural equipment to accomplish some small part"
    )
    assert qa.most_shared_words("Who won the cup?", context) == ""  # no word shared: no answer


def test_scores_over_all_questions_and_over_the_answerable_ones():
    got = qa.scores(["a cat", "", "dog", "x"], ["the cat", "", ["bird", "dog"], ""])
    assert (got["questions"], got["answerable"]) == (4, 2)
    assert (got["exact match"], got["answerable exact match"]) == (75.0, 100.0)  # the best of SQuAD's answers
    assert (got["F1"], got["answerable F1"]) == (75.0, 100.0)
    table = qa.score_table(
        {"model": ["a cat", "", "dog", "x"], "rule": ["", "", "", ""]}, ["cat", "", "dog", ""]
    )
    lines = table.splitlines()
    assert "all 4 questions" in lines[0] and "2 with an answer" in lines[0]
    assert lines[2].split() == ["model", "75.0%", "75.0%", "100.0%", "100.0%"]
    assert lines[3].split() == ["rule", "50.0%", "50.0%", "0.0%", "0.0%"]


def test_too_long_counts_the_answers_no_span_of_max_answer_len_tokens_can_match():
    from course import models

    tokenizer = models.load_tokenizer()
    truths = ["one two three", "", ["one two three four five", "one two"], "one two three four five"]
    assert qa.too_long(truths, tokenizer, 3) == 1  # a question counts only if none of its answers fits
    assert qa.too_long(truths, tokenizer, 5) == 0


def test_squad_questions_are_spaced_over_the_dev_set_with_every_answer(monkeypatch):
    import datasets

    rows = [
        {
            "question": f"q{i}?",
            "context": f"c{i}.",
            "answers": {"text": [f"a{i}", f"b{i}"], "answer_start": [i, i + 1]},
        }
        for i in range(50)
    ]
    asked = []

    def load_dataset(name, split):  # what the hub would give (no network in tests)
        asked.append((name, split))
        return datasets.Dataset.from_list(rows)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    got = qa.squad_questions(10)
    assert asked == [("rajpurkar/squad", "validation")]
    assert [q for q, *_ in got] == [f"q{i}?" for i in range(0, 50, 5)]
    assert got[1] == ("q5?", "c5.", 5, ["a5", "b5"])
