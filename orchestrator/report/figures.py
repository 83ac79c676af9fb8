"""The article's figures from stored results, as data (Figure, Panel, Series), drawn by
wirewise.orchestrator.report.draw. The data is what `report --json` prints and what the HTML
page tabulates, so a test reads back exactly the numbers that were drawn.

Drawn honestly (issue 32): bandwidth and throughput axes start at zero; a panel whose lines
would all sit at one x value is drawn as labelled bars, never as a line; a panel exists only
for cases with data, and a run that ended oom or failed is drawn as such, labelled; in-place
and out-of-place runs are panels apart; a wire (fabric, transport, placement got, CPU ranks,
across nodes) has one colour on every figure of the page, nccl-tests' figures the same colour
dashed (hatched bars); no figure repeats another (the forced-PCIe lines sit beside NVLink's in
the by-size panels, so there is no separate NVLink-against-PCIe figure).

- busbw by message size, per op, a panel per fabric and form (in place, out of place): one
  line per case (every case field but the op, the size and the form);
- busbw by GPU count, per op, at each line's largest measured size, where more than one GPU
  count was measured; with one GPU count, one figure of bars instead: busbw at the largest
  size per op, a panel per form (the article's three behaviours need several counts);
- the strategy dial per model: a row per training setting (precision, batch, ranks, ...), its
  throughput and peak memory per strategy side by side, one bar per wire, strategies in their
  descriptors' dial order (wirewise.registry.STRATEGIES; one no longer registered after them),
  the GPU's memory as a line on the memory panel. Throughput is tokens/s, or samples/s for a
  model without tokens (an image model). A run that did not end ok has its status written in
  its slot; where it reported its peak memory, that is drawn hatched, labelled with its status.

Values are medians over repeats of one case; only ok runs give throughput and bandwidth.

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
from wirewise.units import GB, bytes_text
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import Filters


@dataclass
class Series:
    label: str
    source: str
    x: list[Any]
    y: list[float | None]
    notes: list[str | None] = field(default_factory=list)  # per x: a status (oom, failed) where the run did not end ok
    wire: str = ""  # the colour's key: one colour per wire on the whole page


@dataclass
class Panel:
    title: str
    xlabel: str
    ylabel: str
    kind: str  # "size" (log2 bytes on x), "count" (GPUs on x) or "bars" (categories on x)
    series: list[Series]
    ticks: list[str] | None = None  # bars: what is written under each category (else the category)
    limits: list[tuple[float, str]] = field(default_factory=list)  # horizontal lines: (y, what it is)


@dataclass
class Figure:
    name: str  # the PNG's file name without .png
    title: str
    panels: list[Panel]
    columns: int = 1  # panels per row
    caption: str = ""  # what the figure shows and how to read it

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


DRAWN = {"collective": ("busbw_gbs",), "train": ("tokens_per_s", "samples_per_s", "peak_mem_bytes")}


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


def build_figures(cases: list[dict[str, Any]], gpu_memory_gb: dict[str, float] | None = None,
                  memory_caps: dict[tuple, float] | None = None) -> list[Figure]:
    """Every figure the cases (figure_cases) have data for; `gpu_memory_gb`: one card's memory
    per fabric, drawn as a line on the memory panels, as are the memory caps runs had
    (store.results.Span.memory_caps: (model, strategy, ranks, status) -> GB)."""
    collective = [c for c in cases if c["workload"] == "collective" and c["status"] == "ok" and c["busbw_gbs"]]
    train = [{**c, "memory_cap_gb": (memory_caps or {}).get((c["model"], c["strategy"], c["ranks"], c["status"]))}
             for c in cases if c["workload"] == "train"]
    figures = [*busbw_by_size(collective), *busbw_at_large_sizes(collective), *strategies(train, gpu_memory_gb or {})]
    for figure in figures:
        figure.panels = [honest(panel) for panel in figure.panels if has_data(panel)]
    return [figure for figure in figures if figure.panels]


def has_data(panel: Panel) -> bool:
    """A panel shows something: a value, or a status written in."""
    return any(y is not None or note for s in panel.series for y, note in zip(s.y, s.notes or [None] * len(s.y)))


def honest(panel: Panel) -> Panel:
    """A line panel whose lines all sit at one x value becomes bars with their values: a line
    through one point says nothing, and its zoomed axis makes a small gap look like a cliff."""
    xs = {x for s in panel.series for x, y in zip(s.x, s.y) if y is not None}
    if panel.kind == "bars" or len(xs) > 1:
        return panel
    [x] = xs or {None}
    tick = bytes_text(x) if panel.kind == "size" else f"{x} GPUs" if panel.kind == "count" else str(x)
    series = [Series(s.label, s.source, [x], [dict(zip(s.x, s.y)).get(x)], [None], s.wire) for s in panel.series]
    return Panel(panel.title, panel.xlabel, panel.ylabel, "bars", series, [tick], panel.limits)


# -- the wire: one colour per wire ------------------------------------------------------
def wire_of(case: dict[str, Any]) -> str:
    """What the data travelled over, as a reader names it: the fabric (or CPU ranks), the
    placement where it was spread across NVLink groups, forced PCIe, across nodes."""
    if case.get("device") == "cpu":
        wire = "CPU ranks (gloo)"
    else:
        wire = case.get("fabric") or "fabric unknown"
        if case.get("geometry") == "spread":
            wire += " spread"
        elif case.get("geometry") == "packed" and wire in ("nvlink-groups", "nvlink-partial"):
            wire += " packed"
    if case.get("transport") == "pcie":
        wire += ", PCIe forced"
    if (case.get("node_count") or 1) > 1:
        wire += ", across nodes"
    return wire


WIRE_FIELDS = ("fabric", "transport", "geometry", "device")  # what wire_of reads besides the node count


def _case_but(workload: str, *left: str) -> tuple[str, ...]:
    """The case's fields without those a figure puts on x, in a panel or in the title."""
    return tuple(name for name in CASE_FIELDS[workload] if name not in left)


READING = ("One colour per wire on every figure; solid lines and filled markers: wirewise's own measurements; dashed "
           "lines, hollow markers and hatched bars: nccl-tests' on the same case. Every axis starts at zero; under each "
           "figure, the numbers it drew.")
SIZE_CAPTION = ("Bus bandwidth (busbw, comparable to the wire's line rate per direction) by message size, a panel per "
                "fabric and form: small messages measure the launch latency, large ones the wire.")
GPUS_CAPTION = "Bus bandwidth at the largest size measured, by GPU count: how each wire scales as a job grows."
LARGE_CAPTION = ("Bus bandwidth at the largest size measured, per op and wire (one GPU count was measured, so bars, "
                 "not lines).")
DIAL_CAPTION = ("The strategy dial, from replicating everything (DDP) to sharding everything (FSDP): throughput and "
                "peak memory per rank side by side, a row per setting, one bar per wire; the dotted line is one GPU's "
                "memory. A run that ran out of memory or failed is cross-hatched and labelled with its status; where no run "
                "of a setting finished, only its memory is drawn.")

FORMS = {False: "out of place", True: "in place", None: "form unknown"}


# -- what each figure holds ---------------------------------------------------------
def busbw_by_size(cases: list[dict[str, Any]]) -> list[Figure]:
    figures = []
    line = ("fabric", *_case_but("collective", "op", "bytes", "in_place"))
    for op, mine in _by(cases, "op").items():
        panels = [Panel(f"{_place(fabric, rows)}, {FORMS[form]}", "message size", "busbw (GB/s)", "size",
                        _lines(rows, line, "bytes"))
                  for (fabric, form), rows in _by(mine, "fabric", "in_place").items()]
        figures.append(Figure(f"busbw-by-size-{_slug(op)}", f"{op}: bus bandwidth by message size", panels, 2, SIZE_CAPTION))
    return figures


def _place(fabric: str | None, rows: list[dict[str, Any]]) -> str:
    """A panel's fabric; CPU ranks where only they ran (their fabric says nothing of the data's path)."""
    if all(row["device"] == "cpu" for row in rows):
        return "CPU ranks (gloo)"
    return fabric or "fabric unknown"


def busbw_at_large_sizes(cases: list[dict[str, Any]]) -> list[Figure]:
    """busbw by GPU count per op where several counts were measured; else one figure of bars,
    busbw at the largest size per op (a panel per form)."""
    known = [f for f in cases if f["ranks"] is not None]  # None: an unknown count
    line = ("fabric", *_case_but("collective", "op", "bytes", "ranks", "ranks_per_node", "in_place"))
    largest = _at_largest_size(known, ("op", "in_place", *line, "ranks", "ranks_per_node"))
    if len({f["ranks"] for f in largest}) > 1:
        return [Figure(f"busbw-by-gpus-{_slug(op)}", f"{op}: bus bandwidth by GPU count (largest size measured)",
                       [Panel(FORMS[form], "GPUs", "busbw (GB/s)", "count", _lines(rows, line, "ranks"))
                        for form, rows in _by(mine, "in_place").items()], 2, GPUS_CAPTION)
                for op, mine in _by(largest, "op").items()]
    if not largest:
        return []
    ops = list(_by(largest, "op"))
    bar = ("fabric", *_case_but("collective", "op", "bytes", "in_place", "redop", "root"))  # redop and root go with the op
    panels = []
    for form, rows in _by(largest, "in_place").items():
        series = _lines(rows, bar, "op")
        sizes = {op: bytes_text(max(f["bytes"] for f in rows if f["op"] == op)) for op in ops if any(f["op"] == op for f in rows)}
        shown = [op for op in ops if op in sizes]
        for s in series:
            values = dict(zip(s.x, s.y))
            s.x, s.y, s.notes = shown, [values.get(op) for op in shown], [None] * len(shown)
        panels.append(Panel(FORMS[form], "op (largest size measured)", "busbw (GB/s)", "bars", series,
                            [f"{op} {sizes[op]}" for op in shown]))
    return [Figure("busbw-at-large-sizes", "bus bandwidth at the largest size measured, per op", panels, 2, LARGE_CAPTION)]


def strategies(cases: list[dict[str, Any]], gpu_memory_gb: dict[str, float]) -> list[Figure]:
    """Per model: a row per setting that ran several strategies (the dial), then one row of the
    settings that ran one strategy each (a precision or compile comparison), a bar per setting."""
    figures = []
    dial = registry.STRATEGIES.by_dial() if cases else []
    labels = {spec.name: spec.label for spec in dial}
    setting = (*_case_but("train", "model", "strategy", *WIRE_FIELDS), "device")
    wire = ("fabric", *WIRE_FIELDS[1:], "node_count", "source")
    for model, mine in _by(cases, "model").items():
        stored = {f["strategy"] for f in mine}
        order = [spec.name for spec in dial if spec.name in stored] + sorted(stored - set(labels))
        # tokens for a language model (it has a sequence length), also where no run of it finished
        metric, unit = ("tokens_per_s", "tokens/s") if any(f["tokens_per_s"] or f["seq_len"] for f in mine) else ("samples_per_s", "samples/s")
        settings = _by(mine, *setting)
        rows = sorted(((key, rows) for key, rows in settings.items() if len({f["strategy"] for f in rows}) > 1),
                      key=lambda item: (-len({f["strategy"] for f in item[1]}), str(item[0])))
        singles = [f for key, rows in settings.items() if len({f["strategy"] for f in rows}) == 1 for f in rows]
        panels = []
        for key, rows in rows:
            ran = [name for name in order if any(f["strategy"] == name for f in rows)]
            panels += _dial_row(setting_text(dict(zip(setting, key))), rows, wire, ran, [labels.get(name, name) for name in ran],
                                (metric, unit), gpu_memory_gb, lambda f: f["strategy"])
        if singles:
            same = [name for name in setting if len({f[name] for f in singles}) == 1]
            differ = [name for name in setting if name not in same]

            def slot_of(f: dict[str, Any]) -> tuple[str, str]:
                return f["strategy"], setting_text({name: f[name] for name in differ})

            slots = sorted({slot_of(f) for f in singles},
                           key=lambda slot: (order.index(slot[0]) if slot[0] in order else len(order), slot[1]))
            common = setting_text({name: singles[0][name] for name in same})
            title = f"one strategy per setting ({common})" if len(slots) > 1 else common
            panels += _dial_row(title, singles, wire, slots, [f"{labels.get(name, name)}\n{text}".strip() for name, text in slots],
                                (metric, unit), gpu_memory_gb, slot_of)
        figures.append(Figure(f"strategies-{_slug(model)}", f"{model}: the strategy dial, per wire", panels, 2, DIAL_CAPTION))
    return figures


def _dial_row(title: str, rows: list[dict[str, Any]], wire: tuple[str, ...], slots: list, ticks: list[str],
              throughput: tuple[str, str], gpu_memory_gb: dict[str, float], slot_of) -> list[Panel]:
    """Throughput and peak memory per slot (a strategy), side by side, one bar per wire, the GPU's memory as a line."""
    metric, unit = throughput
    memory = sorted({gpu_memory_gb[f["fabric"]] for f in rows if f["fabric"] in gpu_memory_gb})
    caps = sorted({f["memory_cap_gb"] for f in rows if f.get("memory_cap_gb")} - set(memory))
    head = f"{title}: " if title else ""
    speed = Panel(f"{head}throughput", "", unit, "bars", _bars(rows, wire, slots, metric, 1.0, slot_of), ticks)
    held = Panel(f"{head}peak memory per rank (largest rank)", "", "GB", "bars", _bars(rows, wire, slots, "peak_mem_bytes", GB, slot_of),
                 ticks, [(gb, f"GPU memory {gb:g} GB") for gb in memory] + [(gb, f"the run's memory cap {gb:g} GB") for gb in caps])
    # no run finished: the memory panel shows what they reached and their status; an empty
    # throughput axis beside it would say nothing
    return [held] if not _has_values(speed) and _has_values(held) else [speed, held]


def _has_values(panel: Panel) -> bool:
    return any(y is not None for s in panel.series for y in s.y)


# -- grouping ---------------------------------------------------------------------------
def _by(cases: list[dict[str, Any]], *names: str) -> dict[Any, list[dict[str, Any]]]:
    """Cases grouped by one field (key: its value) or several (key: a tuple), sorted by key."""
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for case in cases:
        groups[case[names[0]] if len(names) == 1 else tuple(case[name] for name in names)].append(case)
    return dict(sorted(groups.items(), key=lambda item: str(item[0])))


# How a case field reads in a label; None: the field says nothing there (the wire and the shape say it).
_LABELS = {
    "in_place": lambda v: "in place" if v else "out of place",
    "cuda_graph": lambda v: "CUDA graph" if v else "eager",
    "compile": lambda v: "compiled" if v else "not compiled",
    "micro_batch": lambda v: f"batch {v}", "seq_len": lambda v: f"seq {v}", "redop": lambda v: f"redop {v}",
    "root": lambda v: f"root {v}", "node_count": lambda v: None, "ranks_per_node": lambda v: None,
    "ranks": lambda v: None, "device": lambda v: None, "source": lambda v: None, "fabric": lambda v: None,
    "transport": lambda v: None, "geometry": lambda v: None,
}


def _labels(keys: list[tuple], names: tuple[str, ...], shape: bool = True) -> dict[tuple, str]:
    """Each line's label: its wire (where the key holds one), the fields that differ between the
    lines of one panel, the nodes x GPUs (or CPU ranks) where `shape`; '[nccl-tests]' for
    imported logs. Two keys never share a label."""
    shown = [i for i, name in enumerate(names) if len({k[i] for k in keys}) > 1]
    labels = {}
    for key in keys:
        case = dict(zip(names, key))
        parts = [wire_of(case)] if "fabric" in names else []
        parts += [text for i in shown if (text := _field_text(names[i], key[i])) is not None]
        if shape:
            parts.append(_shape(case))
        label = " ".join(part for part in parts if part) or "all"
        labels[key] = f"{label} [nccl-tests]" if case.get("source") == "nccl-tests" else label
    return labels


def _field_text(name: str, value: Any) -> str | None:
    if value is None:
        return None
    return _LABELS[name](value) if name in _LABELS else str(value)


def _shape(case: dict[str, Any]) -> str:
    """shape_text, or '' where the key holds no rank count (the figure's x is the rank count)."""
    if "ranks" not in case:
        nodes = case.get("node_count")
        return f"{nodes} nodes" if nodes and nodes > 1 else ""
    return shape_text(case)


def shape_text(case: dict[str, Any]) -> str:
    """'2 GPUs' on one node, '2 nodes x 4 GPUs' on several, '2 ranks' of CPU; '? GPUs' unknown."""
    unit = "ranks" if case.get("device") == "cpu" else "GPUs"  # CPU: the wire says "CPU ranks"
    ranks, nodes, per_node = case.get("ranks"), case.get("node_count"), case.get("ranks_per_node")
    if nodes and nodes > 1 and per_node:
        return f"{nodes} nodes x {per_node} {unit}"
    if ranks is None:
        return f"? {unit}"
    return f"{ranks} {unit[:-1] if ranks == 1 and unit == 'GPUs' else unit}"


def setting_text(case: dict[str, Any]) -> str:
    """A training setting as a reader names it: '2 GPUs, bf16-mixed, batch 4, seq 2048, compiled'
    (the fields `case` holds: a partial case gives part of it)."""
    parts = [shape_text(case) if "ranks" in case else None, case.get("precision"), f"batch {case['micro_batch']}" if case.get("micro_batch") else None,
             f"seq {case['seq_len']}" if case.get("seq_len") else None, "compiled" if case.get("compile") else None,
             case.get("engine") if case.get("engine") not in (None, "native") else None,
             "[nccl-tests]" if case.get("source") == "nccl-tests" else case.get("source") if case.get("source") == "job" else None]
    return ", ".join(str(part) for part in parts if part)


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
        case = dict(zip(key, k))
        series.append(Series(labels[k], case["source"], xs, [statistics.median(points[k][v]) for v in xs],
                             [None] * len(xs), wire_of(case)))
    return series


def _at_largest_size(cases: list[dict[str, Any]], key: tuple[str, ...]) -> list[dict[str, Any]]:
    """The cases at the largest size each key measured (bandwidth at large messages is the
    wire's; small ones measure latency)."""
    largest: dict[tuple, int] = {}
    for case in cases:
        k = tuple(case[name] for name in key)
        largest[k] = max(largest.get(k, 0), case["bytes"])
    return [f for f in cases if f["bytes"] == largest[tuple(f[name] for name in key)]]


def _bars(cases: list[dict[str, Any]], key: tuple[str, ...], order: list, metric: str, scale: float, slot_of) -> list[Series]:
    """One series per wire: the median metric of ok runs per slot (slot_of: a strategy, or a
    strategy and setting). Where a slot has no ok run, its runs' statuses as the note, and for
    memory the largest peak they reported."""
    runs: dict[tuple, dict[Any, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for case in cases:
        runs[tuple(case[name] for name in key)][slot_of(case)].append(case)
    keys = sorted(runs, key=lambda k: tuple(str(v) for v in k))
    labels = _labels(keys, key, shape=False)
    series = []
    for k in keys:
        ys, notes = [], []
        for strategy in order:
            ok = [value for case in runs[k][strategy] if case["status"] == "ok" for value in case[metric]]
            failed = [f for f in runs[k][strategy] if f["status"] != "ok"]
            seen = [value for f in failed for value in f[metric]] if metric == "peak_mem_bytes" else []
            ys.append(statistics.median(ok) / scale if ok else max(seen) / scale if seen else None)
            notes.append(None if ok else "/".join(sorted({f["status"] for f in failed})) or None)
        case = dict(zip(key, k))
        series.append(Series(labels[k], case["source"], [slot if isinstance(slot, str) else " ".join(part for part in slot if part) for slot in order],
                             ys, notes, wire_of(case)))
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
