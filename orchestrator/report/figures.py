"""The article's figures from stored results, as data (Figure, Panel, Series), drawn by
wirewise.orchestrator.report.draw. The data is what `report --json` prints and what the HTML
page tabulates, so a test reads back exactly the numbers that were drawn.

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

The database groups the results (`figure_cases`: one GROUP BY per workload, as `results` does,
wirewise.orchestrator.report.aggregate.case_buckets): a case per (what a figure keys on, x,
status) with its count and each drawn metric's present values, so the benchmark's 100,000
results arrive as about 6,100 cases: 0.8 s of CPU to the figures' data, where a dict per result
and the figures built from them took 2.9 s.
"""

from __future__ import annotations

import hashlib
import re
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from wirewise import registry
from wirewise.orchestrator.report.aggregate import case_buckets
from wirewise.orchestrator.report.query import GroupLookup
from wirewise.units import GB
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import Filters


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


# What the figures key on and draw, per workload: every field a figure groups, labels or puts on x.
CASE_FIELDS = {
    "collective": ("op", "fabric", "placement", "gpus", "transport", "source", "device", "bytes"),
    "train": ("model", "strategy", "fabric", "placement", "transport", "gpus", "source", "device"),
}
DRAWN = {"collective": ("busbw_gbs",), "train": ("tokens_per_s", "peak_mem_bytes")}


def figure_cases(store: Store, filters: Filters) -> list[dict[str, Any]]:
    """The results that match as cases: CASE_FIELDS, workload, status, count (how many
    results) and each DRAWN metric's present values (a list; peak_mem_bytes: each run's
    largest rank)."""
    placements = GroupLookup(store)
    cases = []
    for workload in filters.workloads():
        fields = CASE_FIELDS[workload]
        for (values, status), bucket in case_buckets(store, filters, workload, fields, placements, DRAWN[workload]).items():
            cases.append({"workload": workload, **dict(zip(fields, values)), "status": status, "count": bucket.count,
                          **{metric: bucket.values[metric] for metric in DRAWN[workload]}})
    return cases


def build_figures(cases: list[dict[str, Any]]) -> list[Figure]:
    """Every figure the cases (figure_cases) have data for."""
    collective = [c for c in cases if c["workload"] == "collective" and c["status"] == "ok" and c["busbw_gbs"]]
    train = [c for c in cases if c["workload"] == "train"]
    return [*busbw_by_size(collective), *busbw_by_gpus(collective), *nvlink_vs_pcie(collective), *strategies(train)]


# -- what each figure holds ---------------------------------------------------------
def busbw_by_size(cases: list[dict[str, Any]]) -> list[Figure]:
    figures = []
    for op, mine in _by(cases, "op").items():
        panels = [Panel(fabric or "fabric unknown", "message size", "busbw (GB/s)", "size",
                        _lines(rows, ("placement", "gpus", "transport", "source", "device"), "bytes"))
                  for fabric, rows in _by(mine, "fabric").items()]
        figures.append(Figure(f"busbw-by-size-{_slug(op)}", f"{op}: bus bandwidth by message size", panels))
    return figures


def busbw_by_gpus(cases: list[dict[str, Any]]) -> list[Figure]:
    figures = []
    known = [f for f in cases if f["transport"] == "default" and f["gpus"] is not None]  # None: an unknown count
    for op, mine in _by(known, "op").items():
        largest = _at_largest_size(mine, ("fabric", "placement", "source", "device", "gpus"))
        series = _lines(largest, ("fabric", "placement", "source", "device"), "gpus")
        figures.append(Figure(f"busbw-by-gpus-{_slug(op)}", f"{op}: bus bandwidth by GPU count (largest size measured)",
                              [Panel("", "GPUs", "busbw (GB/s)", "count", series)]))
    return figures


def nvlink_vs_pcie(cases: list[dict[str, Any]]) -> list[Figure]:
    figures = []
    wire = ("fabric", "gpus", "placement", "device")
    for op, mine in _by(cases, "op").items():
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


def strategies(cases: list[dict[str, Any]]) -> list[Figure]:
    figures = []
    dial = registry.STRATEGIES.by_dial() if cases else []
    labels = {spec.name: spec.label for spec in dial}
    for model, mine in _by(cases, "model").items():
        stored = {f["strategy"] for f in mine}
        order = [spec.name for spec in dial if spec.name in stored] + sorted(stored - set(labels))
        ticks = [labels.get(name, name) for name in order]
        wire = ("fabric", "placement", "transport", "gpus", "source", "device")
        throughput = _bars(mine, wire, order, "tokens_per_s", 1.0)
        memory = _bars(mine, wire, order, "peak_mem_bytes", GB)
        figures.append(Figure(f"strategies-{_slug(model)}", f"{model}: throughput and peak memory per strategy, per wire", [
            Panel("throughput", "strategy", "tokens/s", "bars", throughput, ticks),
            Panel("peak memory per rank (largest rank)", "strategy", "GB", "bars", memory, ticks),
        ]))
    return figures


# -- grouping ---------------------------------------------------------------------------
def _by(cases: list[dict[str, Any]], name: str) -> dict[Any, list[dict[str, Any]]]:
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for case in cases:
        groups[case[name]].append(case)
    return dict(sorted(groups.items(), key=lambda item: str(item[0])))


def _label(case: dict[str, Any], fields: tuple[str, ...]) -> str:
    """'nvlink-groups packed 4 GPUs', '... 2 CPU ranks', '... [nccl-tests]' from the key fields."""
    parts = []
    for name in fields:
        value = case[name]
        if value is None or name in ("source", "device") or (name == "transport" and value == "default" and fields[0] != "transport"):
            continue
        if name == "gpus":
            value = f"{value} CPU ranks" if case["device"] == "cpu" else f"{value} GPUs"
        parts.append(str(value))
    if case["device"] == "cpu" and "gpus" not in fields:
        parts.append("CPU ranks")
    label = " ".join(parts) or "all"
    return f"{label} [nccl-tests]" if case["source"] == "nccl-tests" else label


def _lines(cases: list[dict[str, Any]], key: tuple[str, ...], x: str) -> list[Series]:
    """One series per key, the median busbw of its cases at each x, sorted by x."""
    points: dict[tuple, dict[Any, list[float]]] = defaultdict(lambda: defaultdict(list))
    first: dict[tuple, dict[str, Any]] = {}
    for case in cases:
        k = tuple(case[name] for name in key)
        first.setdefault(k, case)
        points[k][case[x]] += case["busbw_gbs"]
    series = []
    for k in sorted(points, key=lambda k: tuple(str(v) for v in k)):
        xs = sorted(points[k])
        series.append(Series(_label(first[k], key), first[k]["source"], xs, [statistics.median(points[k][v]) for v in xs]))
    return series


def _at_largest_size(cases: list[dict[str, Any]], key: tuple[str, ...]) -> list[dict[str, Any]]:
    """The cases at the largest size each key measured (bandwidth at large messages is the
    wire's; small ones measure latency)."""
    largest: dict[tuple, int] = {}
    for case in cases:
        k = tuple(case[name] for name in key)
        largest[k] = max(largest.get(k, 0), case["bytes"])
    return [f for f in cases if f["bytes"] == largest[tuple(f[name] for name in key)]]


def _bars(cases: list[dict[str, Any]], key: tuple[str, ...], order: list[str], metric: str, scale: float) -> list[Series]:
    """One series per wire: the median metric of ok runs per strategy; where a strategy has no
    ok run with the metric, the statuses of its other runs as the note."""
    runs: dict[tuple, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    first: dict[tuple, dict[str, Any]] = {}
    for case in cases:
        k = tuple(case[name] for name in key)
        first.setdefault(k, case)
        runs[k][case["strategy"]].append(case)
    series = []
    for k in sorted(runs, key=lambda k: tuple(str(v) for v in k)):
        ys, notes = [], []
        for strategy in order:
            ok = [value for case in runs[k][strategy] if case["status"] == "ok" for value in case[metric]]
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
