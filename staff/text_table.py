"""Plain-text tables for the terminal (the status of a batch, the score table, the regrade log):
each column as wide as its widest cell, so long assignment and student names keep the columns
straight."""

from __future__ import annotations


def render(
    header: list[str], rows: list[list[str]], right: frozenset[int] = frozenset(), last_free: bool = False
) -> str:
    """``header`` and ``rows`` as aligned columns; ``right``: the columns aligned right (numbers);
    ``last_free``: the last column is free text (a reason), left unpadded."""
    fixed = len(header) - 1 if last_free else len(header)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(fixed)]

    def line(cells: list[str]) -> str:
        out = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(out + cells[fixed:]).rstrip()

    head = line(header)
    return "\n".join([head, "-" * len(head), *(line(r) for r in rows)])
