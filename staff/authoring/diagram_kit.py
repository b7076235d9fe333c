"""The notebooks' architecture diagrams: one per assignment (``assignments/<assignment>/diagram.py``'s
``draw()``), showing what the notebook builds, with the names its code uses, the tensor shapes on the
arrows and the notebook's exercise numbers on the parts students write. ``python -m staff figure``
(``make figures``) draws them into ``docs/figures/architecture_<assignment>.png`` (:func:`draw_all`);
``architecture_cell.py`` embeds them in the notebooks.

The drawing kit they share: boxes, arrows with tensor shapes on them, dashed groups and a legend, on
a canvas measured in inches.

Coordinates are inches from the bottom-left corner, so a label's size on the canvas is its size
on the page and a layout can be checked by arithmetic. Boxes a student writes are orange with
the notebook's exercise number in a badge; given code is blue; data is white.
"""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on the instructor's server or in CI
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Patch  # noqa: E402

from course import paths  # noqa: E402
from staff.authoring import assignments  # noqa: E402

FIGURES = paths.ROOT / "docs" / "figures"

#: (fill, edge) per kind of box.
KINDS = {
    "yours": ("#fde3c8", "#c8691c"),
    "given": ("#e2ebf6", "#4f74a3"),
    "data": ("#ffffff", "#4d4d4d"),
    "note": ("#f5f5f5", "#9a9a9a"),
}
SHAPE_COLOUR = "#6b2f8f"  # tensor shapes on arrows: one colour, so they read as a layer of their own
DPI = 110  # 12 x 6.5 in -> 1320 x 715 px: sharp when a notebook scales it to its width, a small file


class Canvas:
    def __init__(self, width: float, height: float, title: str):
        self.fig = plt.figure(figsize=(width, height))
        self.ax = self.fig.add_axes((0, 0, 1, 1))
        self.ax.set_xlim(0, width)
        self.ax.set_ylim(0, height)
        self.ax.axis("off")
        self.width, self.height = width, height
        self.boxes: dict[str, tuple[float, float, float, float]] = {}
        self.ax.text(0.25, height - 0.3, title, fontsize=14, fontweight="bold", va="center")

    def box(
        self,
        name: str,
        x: float,
        y: float,
        text: str,
        w: float = 1.7,
        h: float = 0.55,
        kind: str = "given",
        exercise: str | None = None,
        size: float = 9.5,
        stack: int = 0,
    ) -> str:
        """A rounded box centred on (x, y); ``exercise`` puts the notebook's number in a badge;
        ``stack`` draws that many copies behind it (one per head, say)."""
        fill, edge = KINDS[kind]
        for i in range(stack, 0, -1):
            self.ax.add_patch(
                FancyBboxPatch(
                    (x - w / 2 + 0.07 * i, y - h / 2 + 0.07 * i),
                    w,
                    h,
                    boxstyle="round,pad=0,rounding_size=0.08",
                    facecolor=fill,
                    edgecolor=edge,
                    linewidth=0.8,
                    zorder=2,
                )
            )
        self.ax.add_patch(
            FancyBboxPatch(
                (x - w / 2, y - h / 2),
                w,
                h,
                boxstyle="round,pad=0,rounding_size=0.08",
                facecolor=fill,
                edgecolor=edge,
                linewidth=1.4 if kind == "yours" else 1.1,
                zorder=2,
            )
        )
        self.ax.text(x, y, text, ha="center", va="center", fontsize=size, zorder=3, linespacing=1.25)
        if exercise:
            self.ax.text(
                x + w / 2 - 0.04,
                y + h / 2,
                f"Ex {exercise}",
                ha="center",
                va="center",
                fontsize=8,
                color="white",
                fontweight="bold",
                zorder=4,
                bbox=dict(boxstyle="round,pad=0.18", facecolor=KINDS["yours"][1], edgecolor="none"),
            )
        self.boxes[name] = (x, y, w, h)
        return name

    def circle(self, name: str, x: float, y: float, text: str = "+", r: float = 0.17) -> str:
        self.ax.add_patch(
            Circle((x, y), r, facecolor="white", edgecolor=KINDS["data"][1], linewidth=1.1, zorder=2)
        )
        self.ax.text(x, y - 0.01, text, ha="center", va="center", fontsize=12, zorder=3)
        self.boxes[name] = (x, y, 2 * r, 2 * r)
        return name

    def at(self, name: str, side: str, shift: float = 0.0) -> tuple[float, float]:
        """A point on a box's side (top, bottom, left, right), ``shift`` inches along that side."""
        x, y, w, h = self.boxes[name]
        return {
            "top": (x + shift, y + h / 2),
            "bottom": (x + shift, y - h / 2),
            "left": (x - w / 2, y + shift),
            "right": (x + w / 2, y + shift),
        }[side]

    def arrow(
        self,
        start,
        end,
        shape: str | None = None,
        via=(),
        label_at: float = 0.5,
        offset: tuple[float, float] = (0.08, 0.0),
        ha: str = "left",
        dashed: bool = False,
        colour: str = "#333333",
    ) -> None:
        """An arrow through the points ``via`` (right angles); ``shape`` is written beside the
        segment ``label_at`` of the way along, shifted by ``offset`` inches."""
        points = [start, *via, end]
        style = "--" if dashed else "-"
        for a, b in zip(points[:-2], points[1:-1]):
            self.ax.plot(
                [a[0], b[0]],
                [a[1], b[1]],
                color=colour,
                linewidth=1.2,
                linestyle=style,
                zorder=1,
                solid_capstyle="butt",
            )
        self.ax.add_patch(
            FancyArrowPatch(
                points[-2],
                points[-1],
                arrowstyle="-|>",
                mutation_scale=11,
                color=colour,
                linewidth=1.2,
                linestyle=style,
                zorder=1,
                shrinkA=0,
                shrinkB=0,
            )
        )
        if shape:
            lengths = [abs(b[0] - a[0]) + abs(b[1] - a[1]) for a, b in zip(points, points[1:])]
            walk, (a, b) = label_at * sum(lengths), (points[0], points[1])
            for (p, q), length in zip(zip(points, points[1:]), lengths):
                a, b = p, q
                if walk <= length:
                    break
                walk -= length
            t = walk / max(abs(b[0] - a[0]) + abs(b[1] - a[1]), 1e-9)
            x, y = a[0] + t * (b[0] - a[0]) + offset[0], a[1] + t * (b[1] - a[1]) + offset[1]
            self.shape(x, y, shape, ha=ha)

    def shape(self, x: float, y: float, text: str, ha: str = "left") -> None:
        self.ax.text(
            x,
            y,
            text,
            ha=ha,
            va="center",
            fontsize=8.5,
            family="monospace",
            color=SHAPE_COLOUR,
            zorder=5,
            bbox=dict(boxstyle="round,pad=0.12", facecolor="white", edgecolor="none", alpha=0.9),
        )

    def group(
        self,
        x0: float,
        y0: float,
        x1: float,
        y1: float,
        label: str,
        colour: str = "#8a8a8a",
        label_side: str = "left",
    ) -> None:
        """A dashed frame around a part of the diagram, its label on the top edge."""
        self.ax.add_patch(
            FancyBboxPatch(
                (x0, y0),
                x1 - x0,
                y1 - y0,
                boxstyle="round,pad=0,rounding_size=0.12",
                facecolor="none",
                edgecolor=colour,
                linewidth=1.1,
                linestyle=(0, (4, 3)),
                zorder=0,
            )
        )
        x = x0 + 0.15 if label_side == "left" else x1 - 0.15
        self.ax.text(
            x,
            y1,
            label,
            ha=label_side,
            va="center",
            fontsize=9,
            color="#333333",
            style="italic",
            zorder=5,
            bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none"),
        )

    def note(self, x: float, y: float, text: str, ha: str = "left", size: float = 8.5) -> None:
        self.ax.text(
            x, y, text, ha=ha, va="center", fontsize=size, color="#444444", zorder=5, linespacing=1.3
        )

    def legend(self, loc: str = "upper right", example: str = "(batch, seq, dim)") -> None:
        handles = [
            Patch(facecolor=KINDS["yours"][0], edgecolor=KINDS["yours"][1], label="you write it (Ex n)"),
            Patch(facecolor=KINDS["given"][0], edgecolor=KINDS["given"][1], label="given"),
            Patch(facecolor="white", edgecolor="white", label=f"{example}: tensor shape"),
        ]
        legend = self.ax.legend(
            handles=handles,
            loc=loc,
            bbox_to_anchor=(0.005, 0.005, 0.99, 0.99),
            ncol=3,
            fontsize=8.5,
            frameon=False,
            handlelength=1.4,
            columnspacing=1.2,
        )
        legend.get_texts()[2].set_color(SHAPE_COLOUR)

    def save(self, path: Path) -> Path:
        from PIL import Image

        path.parent.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        self.fig.savefig(buffer, dpi=DPI, facecolor="white")
        plt.close(self.fig)
        # A 128-colour palette keeps the anti-aliased text and shrinks the PNG (and the notebook
        # it is embedded in) about threefold; no timestamp, so the same drawing gives the same bytes.
        image = (
            Image.open(io.BytesIO(buffer.getvalue()))
            .convert("RGB")
            .quantize(colors=128, dither=Image.Dither.NONE)
        )
        image.save(path, format="PNG", optimize=True)
        return path


def figure_path(assignment: str, folder: Path = FIGURES) -> Path:
    return folder / f"architecture_{assignment}.png"


def draw(assignment: str, folder: Path = FIGURES) -> Path:
    """Draw one assignment's diagram into ``folder``; returns the PNG's path."""
    return assignments.module(assignment, "diagram").draw().save(figure_path(assignment, folder))


def draw_all(folder: Path = FIGURES) -> list[Path]:
    return [draw(assignment, folder) for assignment in assignments.assignments()]
