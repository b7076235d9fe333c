"""nbgrader's command line, once for every assignment (its glob) when that is what was asked for:
each nbgrader process spends about a second importing before it converts anything."""

from __future__ import annotations

import pytest

from staff import course_dir, nbgrader_cli


@pytest.mark.parametrize(
    ("asked", "matched", "runs"),
    [
        (["a", "b", "c"], {"a", "b", "c"}, ["*"]),
        (["a", "b"], {"a", "b", "c"}, ["a", "b"]),  # "*" would also convert c
        (["a", "b", "d"], {"a", "b"}, ["a", "b", "d"]),  # d is nbgrader's to refuse, by name
        (["a"], {"a"}, ["a"]),
        ([], {"a"}, []),
    ],
)
def test_one_process_for_all_assignments_else_one_each(monkeypatch, asked, matched, runs):
    calls = []
    monkeypatch.setattr(nbgrader_cli, "run", lambda *args, course: calls.append(args))
    nbgrader_cli.each_assignment("generate_feedback", asked, matched, "--force")
    assert calls == [("generate_feedback", pattern, "--force") for pattern in runs]


def test_what_the_glob_matches_in_source_is_every_assignment():
    assert course_dir.with_notebooks(course_dir.SOURCE) == set(course_dir.assignments())
