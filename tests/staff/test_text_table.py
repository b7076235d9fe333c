"""The terminal tables (make autograde's status, make report's scores, the regrade log) keep their
columns straight whatever the names' lengths (`03_visualising_attention` broke the fixed widths)."""

from __future__ import annotations

from staff import text_table
from staff.grading.results import report


def _starts(line: str, cells: list[str]) -> list[int]:
    at, found = 0, []
    for cell in cells:
        at = line.index(cell, at)
        found.append(at)
        at += len(cell)
    return found


def test_the_score_table_keeps_its_columns_for_long_names():
    rows = [
        report.Row("seq2seq_reverses_by_indexing", "03_visualising_attention", 23.5, 26, 2, 23.5),
        report.Row("ada", "01_attention", 0, 23, 0, None),
    ]
    lines = report.table(rows).splitlines()
    assert (
        _starts(lines[2], ["03_visualising_attention", "seq2seq_reverses_by_indexing"])[1]
        == _starts(lines[3], ["01_attention", "ada"])[1]
        == lines[0].index("student")
    )
    # numbers right-aligned: the scores end where their header ends
    assert lines[2].index("23.5 / 26") + len("23.5 / 26") == lines[0].index("auto score") + len("auto score")
    assert lines[3].index("0 / 23") + len("0 / 23") == lines[0].index("auto score") + len("auto score")
    assert lines[2].endswith("23.5 ok") and lines[1] == "-" * len(lines[0])


def test_a_free_last_column_is_not_padded():
    text = text_table.render(["a", "reason"], [["x", "long reason"], ["yyyy", ""]], last_free=True)
    assert text.splitlines() == ["a     reason", "------------", "x     long reason", "yyyy"]
