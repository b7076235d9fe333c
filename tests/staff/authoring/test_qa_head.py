"""Assignment 7's offline model is trained on questions whose words say nothing about their answers."""

from __future__ import annotations

import random

from course import qa
from staff.authoring import qa_head


def test_training_questions_deal_the_words_out_at_random_over_the_definitions():
    train, held_out = qa.split_entries()
    definition_of = dict(train)
    questions = qa_head.training_questions(random.Random(1), 400)
    answered = [q for q in questions if q[3]]
    # the asked word's own definition is the answer only by chance: memorising pairs cannot help
    own = sum(definition_of[q[0][len("What is ") : -1]] == q[3] for q in answered)
    assert own <= len(answered) * 0.05
    # nothing of the held-out words or definitions reaches training
    held_words = {w for w, _ in held_out}
    held_definitions = {d for _, d in held_out} - {d for _, d in train}  # some the dictionary gives two words
    for question, context, *_ in questions:
        assert question[len("What is ") : -1] not in held_words
        assert not any(d in context for d in held_definitions)


def test_the_model_is_refused_unless_it_beats_the_rule_by_the_stated_margin():
    scores = {"model F1": 70.0, "first definition F1": 60.0, "no answer found": 90.0}
    minimum = {"F1 over the rule": 15.0, "no answer found": 70.0}
    assert qa_head.check_scores(scores, minimum) == [
        "is 10.0 points of F1 ahead of the first-definition rule, not the 15.0 the notebook states"
    ]
    assert qa_head.check_scores({**scores, "model F1": 80.0}, minimum) == []
