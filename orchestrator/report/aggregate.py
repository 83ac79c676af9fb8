"""Results grouped over repeats: one row per case and status, with each metric's stats.

By default a row is a case (wirewise.case.CASE_FIELDS: every setting that decides the figure)
on a fabric; `--group-by` names other fields, any case field among them. Status is always part
of the key: an OOM, a failure or a timeout is its own row with its count, never averaged into
the figures of the runs that worked.

The database groups (wirewise.orchestrator.store.results.grouped): one GROUP BY per workload,
on the stored case key where the fields hold the whole case, gathers each group's present
metric values, so a query over a long history sends back a row per group, not per result (on
a million results the rows, not the query, were the cost). A missing value (NULL, NaN) is in
no stat: a run without tokens (an image model) or without MFU (CPU ranks) counts in `count`,
not in `tokens_per_s_median`. CPU-rank runs left out (without --include-cpu) are counted.

Rows are flat (`busbw_gbs_median`, `busbw_gbs_spread`, ...), the same columns in JSON and
CSV, so either reads back into the other. `count` is results (records): a run measures each
case once, so in one case it is also the runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wirewise.case import CASE_FIELDS
from wirewise.errors import UserError
from wirewise.orchestrator.report.stats import stats_of
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import GROUP_FIELDS, Filters, grouped

METRICS = {
    "collective": ("busbw_gbs", "algbw_gbs", "time_us"),
    "train": ("tokens_per_s", "step_time_s", "samples_per_s", "peak_mem_bytes", "mfu"),
}
DEFAULT_GROUPS = {workload: ("fabric", *fields) for workload, fields in CASE_FIELDS.items()}


def parse_group_by(text: str | None) -> tuple[str, ...] | None:
    """'node,op' -> ('node', 'op'); unknown fields refused with the choices."""
    if text is None:
        return None
    fields = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [name for name in fields if name not in GROUP_FIELDS]
    if unknown or not fields:
        raise UserError(f"--group-by {text!r}: choose fields among {', '.join(GROUP_FIELDS)}")
    return fields


@dataclass
class Aggregate:
    """The rows, and how many results matched the filters but are in no row, and why."""

    rows: list[dict[str, Any]]
    cpu_left_out: int = 0

    def left_out(self) -> list[dict[str, Any]]:
        """What was left out, each with its count, why, and how to show it (JSON and tables alike)."""
        if not self.cpu_left_out:
            return []
        return [{"results": self.cpu_left_out, "why": "run on CPU ranks (gloo): they measure the host, not the fabric",
                 "show": "--include-cpu"}]


def aggregate(
    store: Store, filters: Filters, group_by: tuple[str, ...] | Mapping[str, tuple[str, ...]] | None = None,
) -> Aggregate:
    """One flat row per (workload, case, status) of the results that match, sorted by workload
    then case. `group_by` gives the fields, for every workload or per workload (default: the
    fabric and the case)."""
    fields = group_by if isinstance(group_by, Mapping) else {w: group_by or DEFAULT_GROUPS[w] for w in DEFAULT_GROUPS}
    found = Aggregate([])
    for workload in filters.workloads():
        buckets, cpu = case_buckets(store, filters, workload, fields[workload])
        found.cpu_left_out += cpu
        found.rows += [_row(workload, fields[workload], key, status, bucket) for (key, status), bucket in buckets.items()]
    found.rows.sort(key=_sort_key)
    return found


def case_buckets(store: Store, filters: Filters, workload: str, fields: tuple[str, ...],
                 metrics: tuple[str, ...] | None = None) -> tuple[dict, int]:
    """((field values, status) -> Bucket, how many CPU-rank results were left out), from one
    GROUP BY, gathering `metrics` (else every metric of the workload); peak_mem_bytes as each
    run's largest rank."""
    metrics = metrics or METRICS[workload]
    buckets: dict[tuple, Bucket] = {}
    found = grouped(store, filters, workload, fields, metrics)
    for group in found.groups:
        bucket = buckets.setdefault((tuple(group[name] for name in fields), group["status"]), Bucket())
        bucket.count += group["count"]
        for metric in metrics:
            values = group[metric]
            bucket.values[metric] += [max(ranks) for ranks in values] if metric == "peak_mem_bytes" else values
    return buckets, found.cpu_left_out


@dataclass
class Bucket:
    """One case and status: how many results, and the values of each metric they reported."""

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
