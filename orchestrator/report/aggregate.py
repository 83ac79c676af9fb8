"""Results grouped over repeats and runs: one row per case and status, with each metric's stats.

A case is what was measured (by default: for collectives source, fabric, op, GPUs, placement,
transport, in place and size; for training source, fabric, model, strategy, GPUs, placement
and transport). Status is always part of the key: an OOM, a failure or a timeout is its own
row with its count, never averaged into the figures of the runs that worked.

The database groups: one GROUP BY per workload gathers each group's metric values as text,
so a query over a long history sends back a row per group, not per result (on a million
results the rows, not the query, were the cost). Python then derives the placement where a
run did not record it, merges the groups that share a case, and takes the stats.

Rows are flat (`busbw_gbs_median`, `busbw_gbs_spread`, ...), the same columns in JSON and
CSV, so either reads back into the other.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import String, case, cast, func, select

from wirewise.errors import UserError
from wirewise.orchestrator.report.query import (
    FIELD_SQL, GPU_LIST, RECORDED_PLACEMENT, RESULTS, Filters, GroupLookup, conditions, exact_text, workloads,
)
from wirewise.orchestrator.report.stats import stats_of
from wirewise.orchestrator.store import Store

METRICS = {
    "collective": ("busbw_gbs", "algbw_gbs", "time_us"),
    "train": ("tokens_per_s", "step_time_s", "samples_per_s", "peak_mem_bytes", "mfu"),
}
DEFAULT_GROUPS = {
    "collective": ("source", "fabric", "op", "gpus", "placement", "transport", "in_place", "bytes"),
    "train": ("source", "fabric", "model", "strategy", "gpus", "placement", "transport"),
}
GROUP_FIELDS = (
    "source", "campaign", "node", "fingerprint", "fabric", "op", "dtype", "in_place", "bytes", "model", "strategy",
    "gpus", "placement", "transport", "task_id",
)
STAT_NAMES = ("median", "min", "max", "count", "spread")
# What a run that did not record its placement is placed by: the node's wiring and its GPUs.
_UNRECORDED = {
    "node": RESULTS.node, "fingerprint": RESULTS.fingerprint, "gpu_count": RESULTS.gpu_count,
    "gpu_list": GPU_LIST,
}


def parse_group_by(text: str | None) -> tuple[str, ...] | None:
    """'node,op' -> ('node', 'op'); unknown fields refused with the choices."""
    if text is None:
        return None
    fields = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [name for name in fields if name not in GROUP_FIELDS]
    if unknown or not fields:
        raise UserError(f"--group-by {text!r}: choose fields among {', '.join(GROUP_FIELDS)}")
    return fields


def aggregate(
    store: Store, filters: Filters, group_by: tuple[str, ...] | Mapping[str, tuple[str, ...]] | None = None,
) -> list[dict[str, Any]]:
    """One flat row per (workload, case, status) of the results that match, sorted by workload
    then case. `group_by` gives the case's fields, for every workload or per workload."""
    fields = group_by if isinstance(group_by, Mapping) else {w: group_by or DEFAULT_GROUPS[w] for w in DEFAULT_GROUPS}
    placements = GroupLookup(store)
    rows = []
    for workload in workloads(filters):
        buckets = _buckets(store, filters, workload, fields[workload], placements)
        rows += [_row(workload, fields[workload], key, status, bucket) for (key, status), bucket in buckets.items()]
    return sorted(rows, key=_sort_key)


def _buckets(store: Store, filters: Filters, workload: str, fields: tuple[str, ...], placements: GroupLookup) -> dict:
    """(case values, status) -> Bucket, from one GROUP BY."""
    derive = "placement" in fields or filters.placement is not None
    keys = {name: FIELD_SQL[name] for name in fields if name != "placement"}
    if derive:  # the placement where recorded; else what derives it, which splits the groups
        keys["placement"] = RECORDED_PLACEMENT
        keys.update({f"unrecorded_{name}": case((RECORDED_PLACEMENT.is_(None), column)) for name, column in _UNRECORDED.items()})
    keys["status"] = RESULTS.status
    values = [_gathered(metric).label(metric) for metric in METRICS[workload]]
    query = (
        select(*(sql.label(name) for name, sql in keys.items()), func.count().label("count"), *values)
        .where(*conditions(filters), RESULTS.workload == workload)
        .group_by(*keys.values())  # the expressions, not their labels: PostgreSQL reads "gpus" as the column
    )
    with store.read() as session:
        found = session.connection().execute(query).mappings().all()
    buckets: dict[tuple, Bucket] = {}
    for group in found:
        placement = placements.placement(
            group["placement"], group["unrecorded_node"], group["unrecorded_fingerprint"], group["unrecorded_gpu_count"],
            group["unrecorded_gpu_list"],
        ) if derive else None
        if filters.placement is not None and placement != filters.placement:
            continue
        case_values = tuple(placement if name == "placement" else group[name] for name in fields)
        bucket = buckets.setdefault((case_values, group["status"]), Bucket())
        bucket.count += group["count"]
        for metric in METRICS[workload]:
            bucket.values[metric] += _values(metric, group[metric])
    return buckets


@dataclass
class Bucket:
    """One case and status: how many runs, and the values of each metric they reported."""

    count: int = 0
    values: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


def _gathered(metric: str):
    """A group's values of `metric`, joined as text (NULLs left out): numbers by ',', and the
    per-rank peak memory lists (JSON) by ';'."""
    if metric == "peak_mem_bytes":
        return func.aggregate_strings(cast(RESULTS.peak_mem_bytes, String), ";")
    return func.aggregate_strings(exact_text(RESULTS[metric]), ",")


def _values(metric: str, text: str | None) -> list[float]:
    if not text:
        return []
    if metric == "peak_mem_bytes":  # the largest rank's peak of each run
        return [max(ranks) for ranks in map(json.loads, text.split(";")) if ranks]
    return [float(value) for value in text.split(",")]


def _row(workload: str, fields: tuple[str, ...], values: tuple, status: str, bucket: Bucket) -> dict[str, Any]:
    row: dict[str, Any] = {"workload": workload, **dict(zip(fields, values)), "status": status, "count": bucket.count}
    if status != "ok":
        return row
    for metric in METRICS[workload]:
        stats = stats_of(bucket.values[metric])
        if stats is None:
            continue
        row.update({
            f"{metric}_median": stats.median, f"{metric}_min": stats.min, f"{metric}_max": stats.max,
            f"{metric}_count": stats.count, f"{metric}_spread": stats.spread,
        })
    return row


def _sort_key(row: dict[str, Any]) -> tuple:
    """Workload, then the key fields in order (absent values last), status ok first."""
    keys = []
    for name in GROUP_FIELDS:
        value = row.get(name)
        keys.append((value is None, value if isinstance(value, int | float) else str(value)))
    return (row["workload"], *keys, row["status"] != "ok", row["status"])


def columns(rows: list[dict[str, Any]]) -> list[str]:
    """Every column the rows use, in first-seen order (the CSV header)."""
    return list(dict.fromkeys(name for row in rows for name in row))
