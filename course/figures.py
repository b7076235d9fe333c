"""Reading a matplotlib figure back: what a heatmap shows, its tick labels, and what its titles say.

Assignment 3's exercises draw figures, and a figure is checked on what it shows: the matrix of a
heatmap panel, every tick label, a title that names the layer, labelled axes. The same readers
serve both sides: the instructor's recipe reads the solution's figures for withheld inputs into
the hidden expected outputs, and the test cells read the student's figures and hand what they
read to :mod:`course.checks` (recorded under grading, so the judge outside the kernel decides).

This module is read-only, like :mod:`course.checks`, and the test cells import from it: a
student's cell that redefines a helper of the same name in the notebook, or assigns to this
module, changes nothing the tests read.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import numpy as np

from course import checks
from course.record import Withheld

#: Between tick labels in their encoded form (a tick label never contains it).
SEPARATOR = "\x1f"
_LAYER = re.compile(r"\blayer\s*(\d+)\b", re.IGNORECASE)


def encode_labels(labels: list[str]) -> np.ndarray:
    """Strings as one array of UTF-8 bytes (what a record can hold and a fixture can withhold)."""
    return np.frombuffer(SEPARATOR.join(labels).encode("utf-8"), dtype=np.uint8).copy()


def title(ax) -> str:
    return " ".join(ax.get_title(loc=loc) for loc in ("left", "center", "right")).strip()


def suptitle(fig) -> str:
    return fig._suptitle.get_text() if getattr(fig, "_suptitle", None) is not None else ""


def named_layer(ax) -> int:
    """The layer number an Axes' title names ("Layer 3 (mean over heads)" -> 3), or -1."""
    found = _LAYER.search(title(ax))
    return int(found.group(1)) if found else -1


def tick_labels(ax, axis: str) -> list[str]:
    ticks = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in ticks]


def shown_matrix(name: str, ax) -> np.ndarray:
    """The matrix a heatmap on ``ax`` shows (seaborn's heatmap, pcolormesh, imshow or matshow),
    rows top to bottom as seaborn draws them."""
    from matplotlib.collections import QuadMesh

    if ax.images:
        return np.asarray(ax.images[-1].get_array(), dtype=np.float64)
    meshes = [c for c in ax.collections if isinstance(c, QuadMesh)]
    if meshes:
        return np.asarray(meshes[-1].get_array(), dtype=np.float64)
    raise AssertionError(f"{name}: no heatmap on this Axes; draw it with sns.heatmap(..., ax=ax)")


def read_heatmap(name: str, ax) -> dict[str, np.ndarray]:
    """What one heatmap panel shows, as the arrays the checks compare (the recipe stores the
    solution's under the same keys, with a prefix, as withheld expected outputs)."""
    return {
        "": shown_matrix(name, ax),
        "_x": encode_labels(tick_labels(ax, "x")),
        "_y": encode_labels(tick_labels(ax, "y")),
        "_layer": np.int64(named_layer(ax)),
    }


def decode_labels(encoded: np.ndarray) -> list[str]:
    return bytes(np.asarray(encoded, dtype=np.uint8)).decode("utf-8").split(SEPARATOR)


def _check_labels(name: str, got: list[str], expected: Any) -> None:
    if isinstance(expected, Withheld):
        checks.check_equal(f"{name} (UTF-8 bytes, one label after another)", encode_labels(got), expected)
        return
    if isinstance(expected, np.ndarray):  # a hidden case outside grading (the instructor's own run)
        expected = decode_labels(expected)
    if got != list(expected):
        raise AssertionError(
            f"{name}: expected the {len(expected)} tick labels {list(expected)}, got {len(got)}: "
            f"{got}. Pass them explicitly (sns.heatmap(..., xticklabels=..., yticklabels=...))."
        )


def check_heatmap(
    name: str, ax, expected: Any, xlabels: Any, ylabels: Any, layer: Any, values_weight: float = 1.0
) -> None:
    """One heatmap panel: the values shown (tolerance 1e-6), every tick label, a title that names
    the layer ("layer 2"), labelled axes. ``expected``, the labels (lists of strings) and ``layer``
    may be withheld values, which only the judge compares. Under grading that is four checks: the
    values with ``values_weight``, the x labels, the y labels and the layer with 1 each (the axis
    labels are a condition); a hidden test that gives the values 6 lets a panel of the wrong matrix
    with every label right earn a third of its share (with 1 it earned three quarters)."""
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise AssertionError(f"{name}: expected a matplotlib Axes, got {type(ax).__name__}")
    checks.check_close(
        f"{name}: the values shown (rows top to bottom, columns left to right)",
        shown_matrix(name, ax),
        expected,
        atol=1e-6,
        rtol=0,
        weight=values_weight,
    )
    _check_labels(f"{name}: x tick labels", tick_labels(ax, "x"), xlabels)
    _check_labels(f"{name}: y tick labels", tick_labels(ax, "y"), ylabels)
    if isinstance(layer, (Withheld, np.ndarray, np.generic)):
        checks.check_equal(
            f"{name}: the layer the title names ('layer N'; -1: none)", np.int64(named_layer(ax)), layer
        )
    elif named_layer(ax) != int(layer):
        raise AssertionError(f"{name}: the title must name the layer ('layer {layer}'), got {title(ax)!r}")
    if not ax.get_xlabel().strip() or not ax.get_ylabel().strip():
        raise AssertionError(
            f"{name}: label both axes; got xlabel {ax.get_xlabel()!r}, ylabel {ax.get_ylabel()!r}"
        )


def layer_panels(name: str, fig, n_layers: int) -> list:
    """The Axes of ``fig`` titled "layer 0", "layer 1", ...: exactly one per layer, and a figure title."""
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise AssertionError(f"{name}: expected a matplotlib Figure, got {type(fig).__name__}")
    titled = [ax for ax in fig.axes if named_layer(ax) >= 0]
    panels = []
    for layer in range(n_layers):
        found = [ax for ax in titled if named_layer(ax) == layer]
        if len(found) != 1:
            raise AssertionError(
                f"{name}: expected one panel titled 'layer {layer}', found {len(found)}; "
                f"panel titles: {[title(ax) for ax in fig.axes if title(ax)]}"
            )
        panels.append(found[0])
    if len(titled) != n_layers:
        raise AssertionError(
            f"{name}: expected {n_layers} panels (one per layer), found {len(titled)} titled "
            f"with a layer: {[title(ax) for ax in titled]}"
        )
    if not suptitle(fig).strip():
        raise AssertionError(f"{name}: give the figure a title (fig.suptitle(...))")
    return panels


sys.modules[__name__].__class__ = checks.ReadOnlyModule
