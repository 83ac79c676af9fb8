"""The article's figures from stored results: what each plots is built first as data (Figure,
Panel, Series), then drawn with matplotlib's Agg backend (no display). The data is what
`report --json` prints and what the HTML page tabulates, so a test reads back exactly the
numbers that were drawn.

- busbw by message size, per op, a panel per fabric: one line per placement, GPU count and
  transport;
- busbw by GPU count, per op, at each line's largest measured size: one line per fabric and
  placement class (the article's three behaviours: flat on NVSwitch, a fall at the quad
  boundary on NVL, PCIe-bound across groups);
- NVLink against forced PCIe, per op, a panel per fabric, where both transports were measured;
- tokens/s and peak memory per strategy, per model, one bar per wire (the whole dial on
  three wires), strategies in their descriptors' dial order under their labels
  (wirewise.registry.STRATEGIES); a strategy stored but no longer registered (a plug-in since
  removed) is still drawn, after the dial, under its name; a run that did not finish leaves
  its slot empty with its status written in.

Values are medians over repeats; only ok runs are drawn. nccl-tests rows are drawn dashed and
labelled [nccl-tests].
"""

from __future__ import annotations

import hashlib
import re
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from wirewise import registry
from wirewise.units import human_bytes


@dataclass
class Series:
    label: str
    source: str
    x: list[Any]
    y: list[float | None]
    notes: list[str | None] = field(default_factory=list)  # per x: why y is missing (oom, failed)


@dataclass
class Panel:
    title: str
    xlabel: str
    ylabel: str
    kind: str  # "size" (log2 bytes on x), "count" (GPUs on x) or "bars" (categories on x)
    series: list[Series]
    ticks: list[str] | None = None  # bars: what is written under each category (else the category)


@dataclass
class Figure:
    name: str  # the PNG's file name without .png
    title: str
    panels: list[Panel]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def build_figures(facts: list[dict[str, Any]]) -> list[Figure]:
    """Every figure the facts have data for."""
    collective = [f for f in facts if f["workload"] == "collective" and f["status"] == "ok" and f["busbw_gbs"] is not None]
    train = [f for f in facts if f["workload"] == "train"]
    return [*busbw_by_size(collective), *busbw_by_gpus(collective), *nvlink_vs_pcie(collective), *strategies(train)]


# -- what each figure holds ---------------------------------------------------------
def busbw_by_size(facts: list[dict[str, Any]]) -> list[Figure]:
    figures = []
    for op, mine in _by(facts, "op").items():
        panels = [Panel(fabric or "fabric unknown", "message size", "busbw (GB/s)", "size",
                        _lines(rows, ("placement", "gpus", "transport", "source", "device"), "bytes"))
                  for fabric, rows in _by(mine, "fabric").items()]
        figures.append(Figure(f"busbw-by-size-{_slug(op)}", f"{op}: bus bandwidth by message size", panels))
    return figures


def busbw_by_gpus(facts: list[dict[str, Any]]) -> list[Figure]:
    figures = []
    known = [f for f in facts if f["transport"] == "default" and f["gpus"] is not None]  # None: an unknown count
    for op, mine in _by(known, "op").items():
        largest = _largest_size_rows(mine, ("fabric", "placement", "source", "device", "gpus"))
        series = _lines(largest, ("fabric", "placement", "source", "device"), "gpus")
        figures.append(Figure(f"busbw-by-gpus-{_slug(op)}", f"{op}: bus bandwidth by GPU count (largest size measured)",
                              [Panel("", "GPUs", "busbw (GB/s)", "count", series)]))
    return figures


def nvlink_vs_pcie(facts: list[dict[str, Any]]) -> list[Figure]:
    figures = []
    wire = ("fabric", "gpus", "placement", "device")
    for op, mine in _by(facts, "op").items():
        wires = {tuple(f[k] for k in wire) for f in mine if f["transport"] == "pcie"}
        both = [f for f in mine if tuple(f[k] for k in wire) in wires]
        if {f["transport"] for f in both} < {"default", "pcie"}:
            continue
        panels = []
        for fabric, rows in _by(both, "fabric").items():
            series = _lines(rows, ("transport", "gpus", "placement", "source", "device"), "bytes")
            for line in series:
                line.label = line.label.replace("default", "NVLink (default)", 1).replace("pcie", "PCIe (forced)", 1)
            panels.append(Panel(fabric or "fabric unknown", "message size", "busbw (GB/s)", "size", series))
        figures.append(Figure(f"nvlink-vs-pcie-{_slug(op)}", f"{op}: NVLink against forced PCIe", panels))
    return figures


def strategies(facts: list[dict[str, Any]]) -> list[Figure]:
    figures = []
    dial = registry.STRATEGIES.by_dial() if facts else []
    labels = {spec.name: spec.label for spec in dial}
    for model, mine in _by(facts, "model").items():
        stored = {f["strategy"] for f in mine}
        order = [spec.name for spec in dial if spec.name in stored] + sorted(stored - set(labels))
        ticks = [labels.get(name, name) for name in order]
        wire = ("fabric", "placement", "transport", "gpus", "source", "device")
        throughput = _bars(mine, wire, order, "tokens_per_s", 1.0)
        memory = _bars(mine, wire, order, "peak_mem_bytes", 2**30)
        figures.append(Figure(f"strategies-{_slug(model)}", f"{model}: throughput and peak memory per strategy, per wire", [
            Panel("throughput", "strategy", "tokens/s", "bars", throughput, ticks),
            Panel("peak memory per rank (largest rank)", "strategy", "GiB", "bars", memory, ticks),
        ]))
    return figures


# -- grouping ---------------------------------------------------------------------------
def _by(facts: list[dict[str, Any]], name: str) -> dict[Any, list[dict[str, Any]]]:
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for fact in facts:
        groups[fact[name]].append(fact)
    return dict(sorted(groups.items(), key=lambda item: str(item[0])))


def _label(fact: dict[str, Any], fields: tuple[str, ...]) -> str:
    """'nvlink-groups packed 4 GPUs', '... 2 CPU ranks', '... [nccl-tests]' from the key fields."""
    parts = []
    for name in fields:
        value = fact[name]
        if value is None or name in ("source", "device") or (name == "transport" and value == "default" and fields[0] != "transport"):
            continue
        if name == "gpus":
            value = f"{value} CPU ranks" if fact["device"] == "cpu" else f"{value} GPUs"
        parts.append(str(value))
    if fact["device"] == "cpu" and "gpus" not in fields:
        parts.append("CPU ranks")
    label = " ".join(parts) or "all"
    return f"{label} [nccl-tests]" if fact["source"] == "nccl-tests" else label


def _lines(facts: list[dict[str, Any]], key: tuple[str, ...], x: str) -> list[Series]:
    """One series per key, the median busbw at each x, sorted by x."""
    points: dict[tuple, dict[Any, list[float]]] = defaultdict(lambda: defaultdict(list))
    first: dict[tuple, dict[str, Any]] = {}
    for fact in facts:
        k = tuple(fact[name] for name in key)
        first.setdefault(k, fact)
        points[k][fact[x]].append(fact["busbw_gbs"])
    series = []
    for k in sorted(points, key=lambda k: tuple(str(v) for v in k)):
        xs = sorted(points[k])
        series.append(Series(_label(first[k], key), first[k]["source"], xs, [statistics.median(points[k][v]) for v in xs]))
    return series


def _largest_size_rows(facts: list[dict[str, Any]], key: tuple[str, ...]) -> list[dict[str, Any]]:
    """The rows at the largest size each key measured (bandwidth at large messages is the
    wire's; small ones measure latency)."""
    largest: dict[tuple, int] = {}
    for fact in facts:
        k = tuple(fact[name] for name in key)
        largest[k] = max(largest.get(k, 0), fact["bytes"])
    return [f for f in facts if f["bytes"] == largest[tuple(f[name] for name in key)]]


def _bars(facts: list[dict[str, Any]], key: tuple[str, ...], order: list[str], metric: str, scale: float) -> list[Series]:
    """One series per wire: the median metric of ok runs per strategy; where a strategy has no
    ok run, its statuses as the note."""
    runs: dict[tuple, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    first: dict[tuple, dict[str, Any]] = {}
    for fact in facts:
        k = tuple(fact[name] for name in key)
        first.setdefault(k, fact)
        runs[k][fact["strategy"]].append(fact)
    series = []
    for k in sorted(runs, key=lambda k: tuple(str(v) for v in k)):
        ys, notes = [], []
        for strategy in order:
            ok = [f[metric] for f in runs[k][strategy] if f["status"] == "ok" and f[metric] is not None]
            ys.append(statistics.median(ok) / scale if ok else None)
            failed = sorted({f["status"] for f in runs[k][strategy] if f["status"] != "ok"})
            notes.append(None if ok else ("/".join(failed) or "not run"))
        series.append(Series(_label(first[k], key), first[k]["source"], list(order), ys, notes))
    return series


def _slug(name: Any) -> str:
    """A file-name-safe form of an op or model name (a model may be a path), unique per name:
    a name that had to change (cfg/a.json -> cfg-a.json, which is also a name) or be cut (a
    file name holds 255 bytes) ends with 8 hex digits of its hash."""
    text = str(name)
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:80] or "none"
    if slug != text:
        slug += "-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return slug


# -- drawing ----------------------------------------------------------------------------------
def draw(figure: Figure, out: Path) -> Path:
    """The figure as a PNG in `out`; returns its path. Long legends (more than 8 lines) sit
    beside their panel, one panel to a row; short ones inside, two panels to a row. The
    layout is set by hand: a "tight" bounding box would draw every figure twice."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context({"text.parse_math": False}):  # a name with two '$' is text, not TeX
        return _draw(plt, figure, out)


def _draw(plt, figure: Figure, out: Path) -> Path:
    outside = max(len(p.series) for p in figure.panels) > 8
    columns = 1 if outside or len(figure.panels) == 1 else 2
    rows = -(-len(figure.panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=((11 if outside else 7.5) * columns, 4.4 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, figure.panels):
        (_draw_bars if panel.kind == "bars" else _draw_lines)(ax, panel)
        ax.set_title(panel.title, fontsize=10)
        ax.set_xlabel(panel.xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.grid(True, alpha=0.3)
        if outside:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncols=1 + len(panel.series) // 24)
        elif panel.series:
            ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(figure.panels):]:
        ax.set_visible(False)
    fig.suptitle(figure.title)
    fig.subplots_adjust(left=0.07 if outside else 0.09, right=0.66 if outside else 0.97, bottom=0.12 / rows,
                        top=1 - 0.45 / (4.4 * rows), hspace=0.35, wspace=0.25)
    path = out / f"{figure.name}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _draw_lines(ax, panel: Panel) -> None:
    for line in panel.series:
        style = "--" if line.source == "nccl-tests" else "-"
        ax.plot(line.x, line.y, style, marker="x" if line.source == "nccl-tests" else "o", markersize=4, label=line.label)
    if panel.kind == "size":
        ax.set_xscale("log", base=2)
        ticks = sorted({x for line in panel.series for x in line.x})
        step = -(-len(ticks) // 8)  # at most 8 labels
        ax.set_xticks(ticks[::step], [human_bytes(t) for t in ticks[::step]])
    else:
        ax.set_xticks(sorted({x for line in panel.series for x in line.x}))


def _draw_bars(ax, panel: Panel) -> None:
    categories = panel.series[0].x if panel.series else []
    width = 0.8 / max(1, len(panel.series))
    for i, bars in enumerate(panel.series):
        positions = [c + (i - (len(panel.series) - 1) / 2) * width for c in range(len(categories))]
        heights = [y or 0 for y in bars.y]
        ax.bar(positions, heights, width, label=bars.label, hatch="//" if bars.source == "nccl-tests" else None)
        for position, y, note in zip(positions, bars.y, bars.notes):
            if y is None and note:
                ax.text(position, 0, note, rotation=90, ha="center", va="bottom", fontsize=7, color="firebrick")
    ax.set_xticks(range(len(categories)), panel.ticks or categories)
