"""Records per test cell, fixed from outside the kernel, and the shell guard (no kernel needed:
the folder logic on its own, and the guard in an in-process IPython shell)."""

from __future__ import annotations

import numpy as np
import pytest

from course import record
from staff.grading.execution import cells
from staff.grading.execution.records import BadRecords, read_cells


@pytest.fixture()
def door(tmp_path, monkeypatch):
    (tmp_path / "records").mkdir()
    opened = cells.CellRecords(tmp_path / "records", tmp_path / "taken", uid=None)
    monkeypatch.setenv(record.RECORDS_VARIABLE, str(opened.door))
    return opened


def test_a_record_counts_only_for_the_test_cell_during_whose_run_it_was_written(door):
    record.write("close", "before any test cell", np.zeros(2), np.zeros(2))  # no folder: nowhere to go
    door.open("test_a_hidden")
    record.write("close", "a 1", np.zeros(2), np.zeros(2))
    record.write("equal", "a 2", np.ones(2), np.ones(2))
    door.take()
    record.write("close", "between the cells", np.zeros(2), np.zeros(2))
    door.open("test_b_hidden")
    door.take()
    door.save()
    found, guard = read_cells(door.taken)
    assert [r.label for r in found["test_a_hidden"]] == ["a 1", "a 2"]
    assert found["test_b_hidden"] == [] and guard == {}


def test_what_the_kernel_leaves_or_keeps_open_does_not_reach_the_judge(door):
    door.door.mkdir()  # made by the kernel itself before the cell: discarded when the cell opens
    (door.door / "000000-1.safetensors").write_bytes(b"planted")
    door.open("test_a_hidden")
    record.write("close", "real", np.zeros(2), np.zeros(2))
    kept = open(next(door.door.iterdir()), "r+b")  # a handle the kernel keeps past the cell
    door.take()
    kept.seek(0)
    kept.write(b"forged after the cell")
    kept.close()
    door.save()
    found, _ = read_cells(door.taken)
    assert [r.label for r in found["test_a_hidden"]] == ["real"]


def test_the_guard_puts_the_shells_hooks_back_and_says_which_were_changed():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.ev(cells.GUARD_INSTALL)
        assert shell.ev(cells.GUARD) == ""
        before = list(shell.input_transformers_post)
        shell.input_transformers_post.append(lambda lines: ["pass\n"])
        shell.set_custom_exc((BaseException,), lambda *args, **kwargs: None)
        shell.events.register("pre_run_cell", lambda *args: None)
        changed = shell.ev(cells.GUARD).split(",")
        assert {"input_transformers_post", "custom_exceptions", "CustomTB", "events.pre_run_cell"} <= set(
            changed
        )
        assert shell.input_transformers_post == before and shell.custom_exceptions == ()
        assert shell.events.callbacks["pre_run_cell"] == [] and shell.ev(cells.GUARD) == ""
    finally:
        InteractiveShell.clear_instance()


def test_a_cell_that_leaves_too_many_records_is_rejected_not_cut_short(door, monkeypatch):
    monkeypatch.setattr(cells, "MAX_FILES", 2)
    door.open("test_a_hidden")
    for i in range(3):
        record.write("close", f"a {i}", np.zeros(2), np.zeros(2))
    door.take()
    door.save()
    with pytest.raises(BadRecords, match="left more records"):
        read_cells(door.taken)
