"""The article's figures from stored results, as data (Figure, Panel, Series), drawn by
wirewise.orchestrator.report.draw. The data is what `report --json` prints and what the HTML
page tabulates, so a test reads back exactly the numbers that were drawn.

- busbw by message size, per op, a panel per fabric: one line per case (every case field but
  the op and the size: dtype, in or out of place, CUDA graph or eager, transport, nodes x GPUs,
  geometry, source, ...);
- busbw by GPU count, per op, at each line's largest measured size: one line per fabric and
  case without its rank count, single-node and multi-node runs on lines of their own (the
  article's three behaviours: flat on NVSwitch, a fall at the quad boundary on NVL, PCIe-bound
  across groups);
- NVLink against forced PCIe, per op, a panel per fabric, where both transports were measured
  in otherwise the same case;
- tokens/s and peak memory per strategy, per model, one bar per wire and training case (every
  case field but the model and the strategy: precision, compile, batch, ...), strategies in
  their descriptors' dial order under their labels (wirewise.registry.STRATEGIES); a strategy
  stored but no longer registered (a plug-in since removed) is still drawn, after the dial,
  under its name; a run that did not finish leaves its slot empty with its status written in.

A line's label names the case fields that differ between the lines of its panel (and always
its nodes x GPUs), so two lines never share a label. Values are medians over repeats of one
case; only ok runs are drawn. nccl-tests rows are drawn dashed and labelled [nccl-tests].

The database groups the results (`figure_cases`: one GROUP BY per workload on the stored case
key, as `results` does, wirewise.orchestrator.report.aggregate.case_buckets): a case per
(fabric, case, status) with its count and each drawn metric's present values, so the
benchmark's 100,000 results arrive as a few thousand cases. CPU-rank runs left out (without
--include-cpu) are counted, and the page and `report --json` say how many.
"""

from __future__ import annotations

import hashlib
import re
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from wirewise import registry
from wirewise.case import CASE_FIELDS
from wirewise.orchestrator.report.aggregate import case_buckets
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


DRAWN = {"collective": ("busbw_gbs",), "train": ("tokens_per_s", "peak_mem_bytes")}


@dataclass
class FigureCases:
    """The matching results as cases (fabric, CASE_FIELDS, workload, status, count and each
    DRAWN metric's present values), and how many CPU-rank results were left out."""

    cases: list[dict[str, Any]]
    cpu_left_out: int


def figure_cases(store: Store, filters: Filters) -> FigureCases:
    """The results that match as cases: fabric and the case, workload, status, count (how many
    results) and each DRAWN metric's present values (a list; peak_mem_bytes: each run's
    largest rank)."""
    cases, cpu = [], 0
    for workload in filters.workloads():
        fields = ("fabric", *CASE_FIELDS[workload])
        buckets, left = case_buckets(store, filters, workload, fields, DRAWN[workload])
        cpu += left
        for (values, status), bucket in buckets.items():
            cases.append({"workload": workload, **dict(zip(fields, values)), "status": status, "count": bucket.count,
                          **{metric: bucket.values[metric] for metric in DRAWN[workload]}})
    return FigureCases(cases, cpu)


def build_figures(cases: list[dict[str, Any]]) -> list[Figure]:
    """Every figure the cases (figure_cases) have data for."""
    collective = [c for c in cases if c["workload"] == "collective" and c["status"] == "ok" and c["busbw_gbs"]]
    train = [c for c in cases if c["workload"] == "train"]
    return [*busbw_by_size(collective), *busbw_by_gpus(collective), *nvlink_vs_pcie(collective), *strategies(train)]


def _case_but(workload: str, *left: str) -> tuple[str, ...]:
    """The case's fields without those a figure puts on x, in a panel or in the title."""
    return tuple(name for name in CASE_FIELDS[workload] if name not in left)


# -- what each figure holds ---------------------------------------------------------
def busbw_by_size(cases: list[dict[str, Any]]) -> list[Figure]:
    figures = []
    for op, mine in _by(cases, "op").items():
        panels = [Panel(fabric or "fabric unknown", "message size", "busbw (GB/s)", "size",
                        _lines(rows, _case_but("collective", "op", "bytes"), "bytes"))
                  for fabric, rows in _by(mine, "fabric").items()]
        figures.append(Figure(f"busbw-by-size-{_slug(op)}", f"{op}: bus bandwidth by message size", panels))
    return figures


def busbw_by_gpus(cases: list[dict[str, Any]]) -> list[Figure]:
    figures = []
    known = [f for f in cases if f["transport"] == "default" and f["ranks"] is not None]  # None: an unknown count
    line = ("fabric", *_case_but("collective", "op", "bytes", "ranks", "ranks_per_node"))
    for op, mine in _by(known, "op").items():
        largest = _at_largest_size(mine, (*line, "ranks"))
        series = _lines(largest, line, "ranks")
        figures.append(Figure(f"busbw-by-gpus-{_slug(op)}", f"{op}: bus bandwidth by GPU count (largest size measured)",
                              [Panel("", "GPUs", "busbw (GB/s)", "count", series)]))
    return figures


def nvlink_vs_pcie(cases: list[dict[str, Any]]) -> list[Figure]:
    figures = []
    wire = ("fabric", *_case_but("collective", "op", "bytes", "transport"))
    for op, mine in _by(cases, "op").items():
        wires = {tuple(f[k] for k in wire) for f in mine if f["transport"] == "pcie"}
        both = [f for f in mine if tuple(f[k] for k in wire) in wires]
        if {f["transport"] for f in both} < {"default", "pcie"}:
            continue
        panels = []
        for fabric, rows in _by(both, "fabric").items():
            series = _lines(rows, ("transport", *_case_but("collective", "op", "bytes", "transport")), "bytes")
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
        wire = ("fabric", *_case_but("train", "model", "strategy"))
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


# How a case field reads in a label; None: the field says nothing there.
_LABELS = {
    "in_place": lambda v: "in place" if v else "out of place",
    "cuda_graph": lambda v: "CUDA graph" if v else "eager",
    "compile": lambda v: "compiled" if v else "not compiled",
    "micro_batch": lambda v: f"batch {v}", "seq_len": lambda v: f"seq {v}", "redop": lambda v: f"redop {v}",
    "root": lambda v: f"root {v}", "node_count": lambda v: None, "ranks_per_node": lambda v: None,
    "ranks": lambda v: None, "device": lambda v: None, "source": lambda v: None,
}
ALWAYS = ("fabric", "geometry")  # named in every label that keys on them (and the nodes x GPUs), varying or not


def _labels(keys: list[tuple], names: tuple[str, ...]) -> dict[tuple, str]:
    """Each line's label: the fields that differ between the lines of one panel, the geometry,
    and the nodes x GPUs (or 'CPU ranks'); '[nccl-tests]' for imported logs."""
    shown = [i for i, name in enumerate(names) if name in ALWAYS or len({k[i] for k in keys}) > 1]
    labels = {}
    for key in keys:
        case = dict(zip(names, key))
        parts = [text for i in shown if (text := _field_text(names[i], key[i])) is not None]
        parts.append(_shape(case))
        label = " ".join(part for part in parts if part) or "all"
        labels[key] = f"{label} [nccl-tests]" if case.get("source") == "nccl-tests" else label
    return labels


def _field_text(name: str, value: Any) -> str | None:
    if value is None:
        return None
    return _LABELS[name](value) if name in _LABELS else str(value)


def _shape(case: dict[str, Any]) -> str:
    """'1 x 4 GPUs', '2 x 8 GPUs', '2 CPU ranks'; '' where the figure's x is the rank count."""
    unit = "CPU ranks" if case.get("device") == "cpu" else "GPUs"
    if "ranks_per_node" not in case:
        nodes = case.get("node_count")
        return unit if unit == "CPU ranks" else (f"{nodes} node{'s' if nodes > 1 else ''}" if nodes else "")
    if case.get("node_count") and case.get("ranks_per_node"):
        return f"{case['node_count']} x {case['ranks_per_node']} {unit}"
    return f"{case['ranks']} {unit}" if case.get("ranks") is not None else f"? {unit}"


def _lines(cases: list[dict[str, Any]], key: tuple[str, ...], x: str) -> list[Series]:
    """One series per key, the median busbw of its cases at each x, sorted by x."""
    points: dict[tuple, dict[Any, list[float]]] = defaultdict(lambda: defaultdict(list))
    for case in cases:
        points[tuple(case[name] for name in key)][case[x]] += case["busbw_gbs"]
    keys = sorted(points, key=lambda k: tuple(str(v) for v in k))
    labels = _labels(keys, key)
    series = []
    for k in keys:
        xs = sorted(points[k])
        series.append(Series(labels[k], dict(zip(key, k))["source"], xs, [statistics.median(points[k][v]) for v in xs]))
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
    """One series per wire and case: the median metric of ok runs per strategy; where a strategy
    has no ok run with the metric, the statuses of its other runs as the note."""
    runs: dict[tuple, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for case in cases:
        runs[tuple(case[name] for name in key)][case["strategy"]].append(case)
    keys = sorted(runs, key=lambda k: tuple(str(v) for v in k))
    labels = _labels(keys, key)
    series = []
    for k in keys:
        ys, notes = [], []
        for strategy in order:
            ok = [value for case in runs[k][strategy] if case["status"] == "ok" for value in case[metric]]
            ys.append(statistics.median(ok) / scale if ok else None)
            failed = sorted({f["status"] for f in runs[k][strategy] if f["status"] != "ok"})
            notes.append(None if ok else ("/".join(failed) or "not run"))
        series.append(Series(labels[k], dict(zip(key, k))["source"], list(order), ys, notes))
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
