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


def _run_in_a_notebook_namespace(code: str) -> dict:
    namespace = {"__name__": "__main__"}
    exec(compile(code, "<cell>", "exec"), namespace)
    return namespace


def test_a_reference_lives_only_inside_its_block_and_a_kept_copy_stops_working():
    namespace = _run_in_a_notebook_namespace(
        "from course.parts import references, substituted\n"
        "kept = []\n"
        "def softmax(x): return 'student'\n"
        "def apply(x):\n"
        "    kept.append(softmax)  # the student's code keeps what it was lent\n"
        "    return softmax(x)\n"
        "def reference_block(): return 'the student\\'s own helper of that name'\n"
        "with references(globals()):\n"
        "    def reference_softmax(x): return 'reference'\n"
        "    def reference_block(): return 'grader'\n"
        "    class ReferenceLayer:\n"
        "        def forward(self): return 2\n"
        "        @staticmethod\n"
        "        def helper(): return 3\n"
        "    layer = ReferenceLayer()\n"
        "    with substituted(globals(), softmax=reference_softmax):\n"
        "        lent = apply(1)\n"
        "    inside = layer.forward(), layer.helper()\n"
    )
    assert namespace["lent"] == "reference" and namespace["inside"] == (2, 3)
    assert "reference_softmax" not in namespace and "ReferenceLayer" not in namespace
    assert namespace["reference_block"]() == "the student's own helper of that name"
    assert namespace["apply"](1) == "student"
    for gone in (namespace["kept"][0], namespace["layer"].forward, namespace["layer"].helper):
        with pytest.raises(RuntimeError, match="exists only while the hidden test that defined it runs"):
            gone()


def test_a_reference_is_revoked_when_its_test_fails_and_an_imported_class_is_only_unbound():
    import collections

    namespace = {"__name__": "__main__"}
    with pytest.raises(ZeroDivisionError):
        exec(
            compile(
                "from course.parts import references\n"
                "with references(globals()):\n"
                "    from collections import OrderedDict as ReferenceDict\n"
                "    def reference_f(): return 1\n"
                "    kept = reference_f\n"
                "    1 / 0\n",
                "<cell>",
                "exec",
            ),
            namespace,
        )
    assert "reference_f" not in namespace and "ReferenceDict" not in namespace
    with pytest.raises(RuntimeError):
        namespace["kept"]()
    assert collections.OrderedDict(a=1)["a"] == 1  # a library's class is never changed
