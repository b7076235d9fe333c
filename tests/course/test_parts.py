"""Reference parts in place of the student's while a hidden test runs (course/parts.py)."""

from __future__ import annotations

import pytest

from course.parts import substituted


def _notebook():
    """A notebook namespace whose later part calls an earlier one by its global name."""
    namespace: dict = {}
    exec("def mask(n):\n    return 'student mask'\n\ndef model(n):\n    return mask(n)\n", namespace)
    return namespace


def test_a_later_part_calls_the_reference_inside_and_the_students_part_again_after():
    namespace = _notebook()
    with substituted(namespace, mask=lambda n: "reference mask"):
        assert namespace["model"](3) == "reference mask"
    assert namespace["model"](3) == "student mask"


def test_the_students_part_comes_back_when_the_test_fails_inside():
    namespace = _notebook()
    own = namespace["mask"]
    with pytest.raises(NotImplementedError):
        with substituted(namespace, mask=lambda n: "reference mask"):
            raise NotImplementedError("the student's later part is a stub")
    assert namespace["mask"] is own


def test_a_part_the_student_never_defined_is_absent_again_afterwards():
    namespace = _notebook()
    with substituted(namespace, attend=len):
        assert namespace["attend"] is len
    assert "attend" not in namespace
