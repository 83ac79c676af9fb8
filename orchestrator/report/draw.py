"""The figures (wirewise.orchestrator.report.figures) drawn as PNG files: matplotlib's Agg
canvas used directly (no pyplot, no display), the layout set by hand.

Text is most of the cost (matplotlib 3.11 renders glyph by glyph in Python, about 0.1 ms
each): over 100,000 benchmark rows, twelve figures with a legend per panel rendered 29,117
glyphs, and the legends took two thirds of the drawing time (cProfile of the command of
tests/benchmarks/bench_results.py). So a figure has one legend, beside its panels, with a line
per label: a label is drawn in the same colour and marker in every panel (the panels of a
figure show the same wires on different fabrics, or two metrics of the same wires), and the
legend is drawn once per set of lines as an image that every figure of those lines pastes.
Tick labels are limited to what fits (at most 8 sizes, 12 GPU counts); text is unhinted (a
third less time per glyph); the layout is set by hand from the legend's size, never by a
"tight" bounding box, which draws every figure twice. The benchmark's twelve figures take
about 3 s of CPU where they took 10.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from wirewise.orchestrator.report.figures import Figure, Panel
from wirewise.units import bytes_text

DPI = 90
CELL = (6.4, 3.9)  # inches: one panel with its title, ticks and axis labels
MARGIN = {"left": 0.95, "right": 0.15, "top": 0.8, "bottom": 0.7, "between_rows": 0.85, "between_columns": 0.85}
LEGEND_FONT = 9.0  # points
# A legend line is 1.66 font sizes high and a label's character about half of one wide (DejaVu
# Sans at 7 pt: 48 lines measured 558 pt, 39 characters 136 pt); the handle and padding take
# about 5 font sizes beside the text. Used to choose the legend's columns and the size of the
# canvas it is drawn on; the figure's layout uses the drawn legend's own size.
LINE_HEIGHT, CHAR_WIDTH, HANDLE_WIDTH = 1.66, 0.6, 5.0
MARKERS = ("o", "s", "^", "D", "v", "P")  # a label's marker: which run of ten colours it is in
MOST_TICKS = {"size": 8, "count": 12}


def draw(figure: Figure, out: Path, colours: dict[str, str] | None = None) -> Path:
    """The figure as `out`/NAME.png; returns its path. `colours`: each wire's colour, the same
    on every figure of a page (wire_colours); a figure drawn alone gets its own."""
    import matplotlib

    # parse_math off: a name with two '$' is text, not TeX
    with matplotlib.rc_context({"text.parse_math": False, "text.hinting": "none"}):
        return _draw(figure, out / f"{figure.name}.png", colours or wire_colours([figure]))


def wire_colours(figures: list[Figure]) -> dict[str, str]:
    """One colour per wire over all the figures, in first-seen order (the ten default colours,
    then again: more than ten wires on one page are told apart by their labels)."""
    wires = dict.fromkeys(s.wire for figure in figures for panel in figure.panels for s in panel.series)
    return {wire: f"C{i % 10}" for i, wire in enumerate(wires)}


@dataclass(frozen=True)
class Entry:
    """A legend line: how its label is drawn in every panel of the figure."""

    label: str
    color: str
    marker: str | None  # lines; None for bars
    imported: bool  # nccl-tests: dashed line with hollow markers, hatched bar


def _entries(figure: Figure, colours: dict[str, str]) -> dict[str, Entry]:
    """Each label's style, in first-seen order: its wire's colour; lines of one wire that differ
    in something else than the source (dtype, form, GPUs) get the next marker, and nccl-tests'
    line of the same case the same marker, hollow, dashed."""
    first: dict[str, tuple[str, str, str]] = {}
    for panel in figure.panels:
        for series in panel.series:
            first.setdefault(series.label, (panel.kind, series.source, series.wire))
    shapes: dict[str, dict[str, int]] = defaultdict(dict)  # wire -> label without the source -> marker
    entries = {}
    for label, (kind, source, wire) in first.items():
        own = label.removesuffix(" [nccl-tests]")
        marker = MARKERS[shapes[wire].setdefault(own, len(shapes[wire])) % len(MARKERS)]
        entries[label] = Entry(label, colours.get(wire, "C0"), None if kind == "bars" else marker, source == "nccl-tests")
    return entries


def _draw(figure: Figure, path: Path, colours: dict[str, str]) -> Path:
    columns = max(1, min(figure.columns, len(figure.panels)))
    rows = -(-len(figure.panels) // columns)
    entries = _entries(figure, colours)
    panels_height = MARGIN["top"] + MARGIN["bottom"] + rows * CELL[1] - MARGIN["between_rows"]
    legend = _legend_image(tuple(entries.values()), _legend_columns(len(entries), panels_height)) if entries else None
    legend_width = legend.shape[1] / DPI + MARGIN["right"] if legend is not None else 0.0
    width = MARGIN["left"] + MARGIN["right"] + columns * CELL[0] - MARGIN["between_columns"] + legend_width
    height = max(panels_height, MARGIN["top"] + MARGIN["right"] + (legend.shape[0] / DPI if legend is not None else 0))
    fig, axes = _canvas(rows, columns, tuple(panel.kind for panel in figure.panels))
    fig.set_size_inches(width, height)
    try:
        for ax, panel in zip(axes, figure.panels):
            (_draw_bars if panel.kind == "bars" else _draw_lines)(ax, panel, entries)
            for y, what in panel.limits:
                ax.axhline(y, color="0.3", linestyle=":", linewidth=1.2)
                ax.text(ax.get_xlim()[0], y, f" {what}", va="bottom", ha="left", fontsize=8, color="0.3")
            ax.set_title(panel.title, fontsize=10, y=1.0)  # y given: no search for a place above the ticks
            ax.set_xlabel(panel.xlabel)
            ax.set_ylabel(panel.ylabel)
        fig.suptitle(figure.title, y=1 - 0.15 / height, va="top")
        fig.subplots_adjust(
            left=MARGIN["left"] / width, right=1 - (MARGIN["right"] + legend_width) / width,
            bottom=1 - (panels_height - MARGIN["bottom"]) / height, top=1 - MARGIN["top"] / height,
            wspace=MARGIN["between_columns"] / (CELL[0] - MARGIN["between_columns"]),
            hspace=MARGIN["between_rows"] / (CELL[1] - MARGIN["between_rows"]),
        )
        if legend is not None:
            fig.figimage(legend, xo=round((width - MARGIN["right"]) * DPI) - legend.shape[1],
                         yo=round((height - MARGIN["top"]) * DPI) - legend.shape[0], origin="upper")
        _save_png(fig, path)
    finally:  # the figure is reused, also after a failed save: only its axes and titles stay
        for image in fig.images[:]:
            image.remove()
        for ax in axes:
            for artist in [*ax.collections, *ax.texts, *ax.lines]:
                artist.remove()
            ax.ignore_existing_data_limits = True
    return path


@functools.lru_cache(maxsize=8)
def _canvas(rows: int, columns: int, kinds: tuple[str, ...]):
    """A figure and the axes of its panels, made once per shape and reused by every figure of
    that shape (one per op, one per model): an axes and its ticks cost about 30 ms to make."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as Canvas

    fig = Canvas(dpi=DPI)
    FigureCanvasAgg(fig)
    axes = list(fig.subplots(rows, columns, squeeze=False).flat)
    for ax, kind in zip(axes, kinds):
        if kind == "size":
            ax.set_xscale("log", base=2)
        ax.grid(True, alpha=0.3)
    for ax in axes[len(kinds):]:
        ax.set_visible(False)
    return fig, axes[:len(kinds)]


def _save_png(fig, path: Path) -> None:
    """The drawn canvas as an RGB PNG at zlib level 1: the figures have no transparency, and
    this writes in half the time of matplotlib's RGBA at level 6 (28 against 52 ms for a
    four-panel figure), and a file 5% smaller."""
    from PIL import Image

    fig.canvas.draw()
    width, height = fig.canvas.get_width_height()
    Image.frombuffer("RGBA", (width, height), fig.canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB").save(
        path, format="png", compress_level=1)


def _legend_columns(lines: int, height: float) -> int:
    """As many columns as the legend's lines need to fit beside the panels."""
    fit = max(1, int((height - MARGIN["top"] - MARGIN["bottom"]) / (LINE_HEIGHT * LEGEND_FONT / 72)) - 1)
    return max(1, math.ceil(lines / fit))


@functools.lru_cache(maxsize=32)
def _legend_image(entries: tuple[Entry, ...], columns: int):
    """The legend drawn once as an RGBA array, cropped to its frame: figures of the same
    lines (one per op, one per model) paste the same image instead of laying it out again."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as Canvas
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    longest = max(len(entry.label) for entry in entries)
    wide = columns * (longest * CHAR_WIDTH + HANDLE_WIDTH) * LEGEND_FONT / 72 + 1.5
    tall = math.ceil(len(entries) / columns) * LINE_HEIGHT * LEGEND_FONT / 72 + 1
    fig = Canvas(figsize=(wide, tall), dpi=DPI)
    canvas = FigureCanvasAgg(fig)
    handles = [
        Rectangle((0, 0), 1, 1, facecolor=entry.color, hatch="//" if entry.imported else None) if entry.marker is None
        else Line2D([], [], color=entry.color, marker=entry.marker, markersize=6, linestyle="--" if entry.imported else "-",
                    markerfacecolor="none" if entry.imported else entry.color, linewidth=1.5 if entry.imported else 2.5)
        for entry in entries
    ]
    legend = fig.legend(handles, [entry.label for entry in entries], loc="upper left", bbox_to_anchor=(0, 1),
                        fontsize=LEGEND_FONT, ncols=columns)
    canvas.draw()
    box = legend.get_window_extent()
    pixels = np.asarray(canvas.buffer_rgba())
    top, bottom = pixels.shape[0] - math.ceil(box.y1) - 1, pixels.shape[0] - math.floor(box.y0) + 1  # the frame's own line too
    return pixels[max(0, top):bottom, max(0, math.floor(box.x0) - 1):math.ceil(box.x1) + 1].copy()


def _draw_lines(ax, panel: Panel, entries: dict[str, Entry]) -> None:
    """Every line of the panel as two collections (measured: solid and wide; nccl-tests: dashed
    and narrow on top, so a line that lies under the other still shows), and the markers as one
    scatter per shape and fill (nccl-tests' hollow and larger): a handful of artists where a
    Line2D per series was 24 (0.3 s of a figure's 0.45). Colours go in as RGBA arrays: a colour
    name per point is parsed point by point. The y axis starts at zero."""
    import numpy as np
    from matplotlib.collections import LineCollection
    from matplotlib.colors import to_rgba

    for imported in (False, True):
        lines = [line for line in panel.series if entries[line.label].imported == imported]
        if not lines:
            continue
        ax.add_collection(LineCollection(
            [np.column_stack([line.x, line.y]) for line in lines],
            colors=np.array([to_rgba(entries[line.label].color) for line in lines]).reshape(-1, 4),
            linestyles="--" if imported else "-", linewidths=1.5 if imported else 3.0, alpha=1.0 if imported else 0.6,
            zorder=3 if imported else 2,
        ))
        marks: dict[str, tuple[list, list, list]] = {}  # marker: (x, y, RGBA per point)
        for line in lines:
            xs, ys, colours = marks.setdefault(entries[line.label].marker, ([], [], []))
            xs += line.x
            ys += line.y
            colours += [to_rgba(entries[line.label].color)] * len(line.x)
        for marker, (xs, ys, colours) in marks.items():
            if imported:
                ax.scatter(xs, ys, s=42, facecolors="none", edgecolors=np.array(colours), linewidths=1.3, marker=marker, zorder=5)
            else:
                ax.scatter(xs, ys, s=20, c=np.array(colours), marker=marker, zorder=4)
    ticks = sorted({x for line in panel.series for x in line.x})
    step = -(-len(ticks) // MOST_TICKS[panel.kind]) if ticks else 1
    if panel.kind == "size":
        ax.set_xticks(ticks[::step], [bytes_text(t) for t in ticks[::step]])
        ax.set_xlim(ticks[0] / 1.4, ticks[-1] * 1.4)
    else:
        ax.set_xticks(ticks[::step])
        ax.set_xlim(ticks[0] - 0.5, ticks[-1] + 0.5)
    top = max((y for line in panel.series for y in line.y if y is not None), default=0)
    ax.set_ylim(0, top * 1.1 or 1)


def _draw_bars(ax, panel: Panel, entries: dict[str, Entry]) -> None:
    """A group of bars per category, one per series, as collections of rectangles (plain,
    hatched for nccl-tests, cross-hatched for a run that did not end ok): one artist each,
    where a patch per bar cost 10 ms a figure of 240. Each bar has its value written on it; a
    run that did not end ok has its status (oom, failed) written in, over its bar where it
    reported a value (the peak memory it reached), at the axis where it did not."""
    from matplotlib.collections import PolyCollection

    categories = panel.series[0].x if panel.series else []
    width = 0.8 / max(1, len(panel.series))
    top = max([y for bars in panel.series for y in bars.y if y is not None] + [y for y, _ in panel.limits], default=0)
    boxes: dict[str, tuple[list, list]] = {"": ([], []), "//": ([], []), "xx": ([], [])}  # hatch: (corners, colours)
    for i, bars in enumerate(panel.series):
        colour, imported = entries[bars.label].color, entries[bars.label].imported
        for category, (y, note) in enumerate(zip(bars.y, bars.notes or [None] * len(bars.y))):
            middle = category + (i - (len(panel.series) - 1) / 2) * width
            if y is None:
                if note:
                    ax.text(middle, 0, note.upper(), rotation=90, ha="center", va="bottom", fontsize=9, color="firebrick",
                            fontweight="bold")
                continue
            left, right = middle - width / 2, middle + width / 2
            hatch = "xx" if note else "//" if imported else ""
            boxes[hatch][0].append([(left, 0), (left, y), (right, y), (right, 0)])
            boxes[hatch][1].append(colour)
            text = f"{note.upper()} at {_value_text(y)}" if note else _value_text(y)
            ax.text(middle, y, text, rotation=90 if len(panel.series) * len(categories) > 6 else 0, ha="center",
                    va="bottom", fontsize=8, color="firebrick" if note else "0.15")
    for hatch, (corners, colours) in boxes.items():
        if corners:
            ax.add_collection(PolyCollection(corners, facecolors=colours, edgecolors="firebrick" if hatch == "xx" else "white",
                                             linewidths=1.0 if hatch == "xx" else 0.5, hatch=hatch or None))
    ax.set_xlim(-0.5, len(categories) - 0.5)
    ax.set_ylim(0, top * 1.25 or 1)
    ax.set_xticks(range(len(categories)), panel.ticks or categories)


def _value_text(y: float) -> str:
    """A bar's value as its table has it, shortened: 3 significant digits, thousands grouped."""
    return f"{y:,.0f}" if abs(y) >= 100 else f"{y:.3g}"
