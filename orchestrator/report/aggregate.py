"""Facts grouped over repeats and runs: one row per case and status, with each metric's stats.

A case is what was measured (by default: for collectives source, fabric, op, GPUs, placement,
transport, in place and size; for training source, fabric, model, strategy, GPUs, placement
and transport). Status is always part of the key: an OOM, a failure or a timeout is its own
row with its count, never averaged into the figures of the runs that worked.

Rows are flat (`busbw_gbs_median`, `busbw_gbs_spread`, ...), the same columns in JSON and
CSV, so either reads back into the other.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.report.stats import stats_of

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


def parse_group_by(text: str | None) -> tuple[str, ...] | None:
    """'node,op' -> ('node', 'op'); unknown fields refused with the choices."""
    if text is None:
        return None
    fields = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [name for name in fields if name not in GROUP_FIELDS]
    if unknown or not fields:
        raise UserError(f"--group-by {text!r}: choose fields among {', '.join(GROUP_FIELDS)}")
    return fields


def aggregate(facts: list[dict[str, Any]], group_by: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """One flat row per (workload, case, status), sorted by workload then case."""
    buckets: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for fact in facts:
        fields = group_by or DEFAULT_GROUPS[fact["workload"]]
        buckets[(fact["workload"], fields, tuple(fact[f] for f in fields), fact["status"])].append(fact)
    rows = [_row(workload, fields, values, status, members) for (workload, fields, values, status), members in buckets.items()]
    return sorted(rows, key=_sort_key)


def _row(workload: str, fields: tuple[str, ...], values: tuple, status: str, members: list[dict[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {"workload": workload, **dict(zip(fields, values)), "status": status, "count": len(members)}
    if status != "ok":
        return row
    for metric in METRICS[workload]:
        stats = stats_of([m[metric] for m in members])
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
