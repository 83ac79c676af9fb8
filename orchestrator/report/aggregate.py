"""Results grouped over repeats and runs: one row per case and status, with each metric's stats.

A case is what was measured (by default: for collectives source, fabric, op, GPUs, placement,
transport, in place and size; for training source, fabric, model, strategy, GPUs, placement
and transport). Status is always part of the key: an OOM, a failure or a timeout is its own
row with its count, never averaged into the figures of the runs that worked.

The database groups (wirewise.orchestrator.store.results.grouped): one GROUP BY per workload
gathers each group's present metric values, so a query over a long history sends back a row
per group, not per result (on a million results the rows, not the query, were the cost).
Here the placement is derived where a run did not record it, the groups that share a case are
merged, and the stats taken. A missing value (NULL, NaN) is in no stat: a run without tokens
(an image model) or without MFU (CPU ranks) counts in `count`, not in `tokens_per_s_median`.

Rows are flat (`busbw_gbs_median`, `busbw_gbs_spread`, ...), the same columns in JSON and
CSV, so either reads back into the other.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.report.query import GroupLookup
from wirewise.orchestrator.report.stats import stats_of
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import GROUP_FIELDS, Filters, grouped

METRICS = {
    "collective": ("busbw_gbs", "algbw_gbs", "time_us"),
    "train": ("tokens_per_s", "step_time_s", "samples_per_s", "peak_mem_bytes", "mfu"),
}
DEFAULT_GROUPS = {
    "collective": ("source", "fabric", "op", "gpus", "placement", "transport", "in_place", "bytes"),
    "train": ("source", "fabric", "model", "strategy", "gpus", "placement", "transport"),
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
    for workload in filters.workloads():
        buckets = case_buckets(store, filters, workload, fields[workload], placements)
        rows += [_row(workload, fields[workload], key, status, bucket) for (key, status), bucket in buckets.items()]
    return sorted(rows, key=_sort_key)


def case_buckets(store: Store, filters: Filters, workload: str, fields: tuple[str, ...], placements: GroupLookup,
                 metrics: tuple[str, ...] | None = None) -> dict:
    """(case values, status) -> Bucket, from one GROUP BY, gathering `metrics` (else every
    metric of the workload); peak_mem_bytes as each run's largest rank."""
    metrics = metrics or METRICS[workload]
    derive = "placement" in fields or filters.placement is not None
    buckets: dict[tuple, Bucket] = {}
    for group in grouped(store, filters, workload, fields, metrics, unrecorded=derive):
        placement = placements.placement(
            group["placement"], group["unrecorded_node"], group["unrecorded_fingerprint"], group["unrecorded_gpu_count"],
            group["unrecorded_gpu_list"],
        ) if derive else None
        if filters.placement is not None and placement != filters.placement:
            continue
        case_values = tuple(placement if name == "placement" else group[name] for name in fields)
        bucket = buckets.setdefault((case_values, group["status"]), Bucket())
        bucket.count += group["count"]
        for metric in metrics:
            values = group[metric]
            bucket.values[metric] += [max(ranks) for ranks in values] if metric == "peak_mem_bytes" else values
    return buckets


@dataclass
class Bucket:
    """One case and status: how many runs, and the values of each metric they reported."""

    count: int = 0
    values: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


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
