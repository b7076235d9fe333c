"""Figures read back and judged outside the kernel: assignment 3's hidden plot tests record what a
heatmap shows, and the judge compares it with what the solution drew for the same withheld inputs."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import seaborn as sns  # noqa: E402

from course import figures, record  # noqa: E402
from course.settings import ROOT  # noqa: E402
from staff.grading.execution.records import read_records  # noqa: E402
from staff.grading.judging import judge  # noqa: E402

WHERE = "hidden/03_visualising_attention/statistics"
CASE = 1  # 4 layers, 10 tokens (three [SEP])


def fixture(key):
    return judge.Fixtures(ROOT / "fixtures").value(f"{WHERE}:{CASE}.{key}", [])


def withheld(key):
    value = fixture(key)
    return record.Withheld(f"{WHERE}:{CASE}.{key}", value.shape, value.dtype.str)


def draw(matrix, tokens, title):
    fig, ax = plt.subplots()
    sns.heatmap(matrix, xticklabels=tokens, yticklabels=tokens, ax=ax)
    ax.set(title=title, xlabel="key", ylabel="query")
    return fig, ax


def verdict_of(records, fig, ax, specs=None):
    for path in records.glob("*"):
        path.unlink()
    figures.check_heatmap(
        "plot_attention",
        ax,
        withheld("attention_plot"),
        withheld("attention_plot_x"),
        withheld("attention_plot_y"),
        withheld("attention_plot_layer"),
    )
    plt.close(fig)
    got = read_records(records)
    return judge.verdict(specs or [r.spec() for r in got], got, judge.Fixtures(ROOT / "fixtures")).reason


def test_a_heatmap_is_judged_on_what_it_shows_against_the_withheld_drawing(records):
    maps = fixture("maps")
    tokens = bytes(fixture("words")).decode().split(" ")
    last = len(maps) - 1
    fig, ax = draw(maps[last], tokens, f"Layer {last} (mean over heads)")
    assert verdict_of(records, fig, ax) is None
    right = [r.spec() for r in read_records(records)]
    assert [s["kind"] for s in right] == ["close", "equal", "equal", "equal"] and all(
        map(judge.withheld, right)
    )

    fig, ax = draw(maps[last].T, tokens, f"Layer {last}")  # keys as rows
    assert "values shown" in verdict_of(records, fig, ax, right)
    fig, ax = draw(maps[0], tokens, "Layer 0")  # the first layer, not the last
    assert "values shown" in verdict_of(records, fig, ax, right)
    fig, ax = draw(maps[last], tokens[::-1], f"Layer {last}")  # labels in the wrong order
    assert "x tick labels" in verdict_of(records, fig, ax, right)
    fig, ax = draw(maps[last], tokens, "Mean attention")  # no layer in the title
    assert "the layer the title names" in verdict_of(records, fig, ax, right)


def test_the_expected_drawing_is_not_in_the_kernels_view():
    """The figure's expected values are outputs of the recipe, withheld from grading kernels."""
    from fnmatch import fnmatch

    from staff.authoring import assignments

    patterns = assignments.recipe("03_visualising_attention").OUTPUTS["statistics"]
    for key in ("attention_plot", "attention_plot_x", "layers_plot_layer"):
        assert any(fnmatch(key, p) for p in patterns), key


def test_the_module_is_read_only_and_labels_encode_unambiguously():
    with pytest.raises(AttributeError, match="read-only"):
        figures.check_heatmap = lambda *args, **kwargs: None
    assert not np.array_equal(figures.encode_labels(["a b", "c"]), figures.encode_labels(["a", "b c"]))
    fig, ax = plt.subplots()
    ax.set_title("Layer 11 of 12")
    assert figures.named_layer(ax) == 11
    with pytest.raises(AssertionError, match="no heatmap"):
        figures.shown_matrix("empty", ax)
    plt.close(fig)
