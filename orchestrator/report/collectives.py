"""Collective sweeps as people read them: nccl-tests' own columns and names, one block per op,
and the JSON rows scripts read (`bench collectives --json`)."""

from __future__ import annotations

from typing import Any


def json_row(record) -> dict[str, Any]:
    """One row for scripts: the nccl-tests columns plus where and how it ran."""
    extra = record.extra or {}
    return {
        "op": record.op,
        "bytes": record.bytes,
        "count": record.count,
        "dtype": record.dtype,
        "in_place": record.in_place,
        "redop": extra.get("redop"),
        "root": extra.get("root"),
        "time_us": record.time_us,
        "algbw_gbs": record.algbw_gbs,
        "busbw_gbs": record.busbw_gbs,
        "wrong": record.wrong,
        "avg_busbw_gbs": extra.get("avg_busbw_gbs"),
        "ranks": record.world_size,
        "gpus": record.gpus,
        "backend": extra.get("backend"),
        "device": extra.get("device"),
        "transport": record.params.get("transport"),
        "transport_carried": record.transport_carried,
        "cuda_graph": bool(record.params.get("cuda_graph")),
        "timer": extra.get("timer"),
        "node": record.node,
        "fabric": record.fabric,
        "fingerprint": record.fingerprint,
        "env": record.env,
        "status": record.status,
        "error": record.error,
        "task_id": record.task_id,
        "record_id": record.record_id,
    }


# nccl-tests' own column layout (src/common.cu), one block per op.
_HEAD = "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}"


def format_table(rows: list[dict[str, Any]]) -> list[str]:
    """JSON rows (json_row) as nccl-tests prints them: a block per op and form (out of place,
    in place), then the op's 'Avg bus bandwidth' (the sweep's own over both forms, as
    nccl-tests averages them; avg_busbw_gbs on every row)."""
    lines: list[str] = []
    blocks = dict.fromkeys((row["op"], row["in_place"]) for row in rows)
    last_of_op = {op: (op, in_place) for op, in_place in blocks}
    for op, in_place in blocks:
        block = [row for row in rows if (row["op"], row["in_place"]) == (op, in_place)]
        lines += [
            f"# {op} ({'in place' if in_place else 'out of place'})",
            _HEAD.format("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"),
            _HEAD.format("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", ""),
        ]
        lines += [_table_line(row) for row in block]
        if last_of_op[op] == (op, in_place):
            lines += [f"# Avg bus bandwidth    : {block[0]['avg_busbw_gbs']:g}", "#"]
    return lines


def _table_line(row: dict[str, Any]) -> str:
    wrong = "N/A" if row["wrong"] is None else str(row["wrong"])
    return (
        f"{row['bytes']:12d}  {row['count']:12d}  {row['dtype']:>8}  {row['redop']:>6}  {row['root']:6d}"
        f"  {_time_text(row['time_us']):>7}  {row['algbw_gbs']:6.2f}  {row['busbw_gbs']:6.2f}  {wrong:>6}"
    )


def _time_text(us: float) -> str:
    """nccl-tests' time column: fewer decimals as the number grows."""
    if us >= 10000:
        return f"{us:.0f}"
    if us >= 100:
        return f"{us:.1f}"
    return f"{us:.2f}"


def format_report(rows: list[dict[str, Any]]) -> list[str]:
    """A heading that says where and how the sweep ran, then format_table."""
    first = rows[0]
    gpus = ",".join(map(str, first["gpus"])) if first["gpus"] else "none"
    fingerprint = first["fingerprint"][:12] if first["fingerprint"] else "none"
    return [
        f"# wirewise collectives: {first['ranks']} rank(s), backend {first['backend']} on {first['device']}, GPUs {gpus}, "
        f"transport {first['transport']}, node {first['node']}, timing {_timing(first)}",
        f"# fabric {first['fabric'] or 'unknown'}, fingerprint {fingerprint}, task {first['task_id']}",
        "#",
        *format_table(rows),
    ]


def _timing(row: dict[str, Any]) -> str:
    """How the calls were timed: eager (one launch per call) or replayed from a CUDA graph."""
    return "cuda-graph (nccl-tests -G)" if row.get("cuda_graph") else "eager"
