"""Collective sweeps as people read them: nccl-tests' own columns and names, one block per op,
and the JSON rows scripts read (`bench collectives --json`)."""

from __future__ import annotations

from typing import Any

from wirewise.workloads.collective import sweep_average


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


# nccl-tests' columns and units, one line per size and form (nccl-tests prints the two forms
# side by side, 120 columns; here `place` says which), within 80 columns.
_HEAD = "# {:>10} {:>10} {:>8} {:>5} {:>4} {:>5} {:>7} {:>7} {:>7} {:>6}"
_HEADINGS = (_HEAD.format("size", "count", "type", "redop", "root", "place", "time", "algbw", "busbw", "#wrong"),
             _HEAD.format("(B)", "(elements)", "", "", "", "", "(us)", "(GB/s)", "(GB/s)", "").rstrip())


class SweepLines:
    """The table of a sweep, a row at a time as rank 0 measures it (nccl-tests prints each row
    as it is measured): a block per op, its headings when its first row comes, its 'Avg bus
    bandwidth' (over both forms, as nccl-tests averages them) once its last row is in: when the
    next op begins, or at end()."""

    def __init__(self) -> None:
        self.op: str | None = None
        self.busbw: list[float] = []

    def row(self, row: dict[str, Any]) -> list[str]:
        """The lines a row adds; `row` as json_row gives it or as the rank measured it (redop
        and root under extra)."""
        row = {**row.get("extra", {}), **row}
        lines = []
        if row["op"] != self.op:
            lines += self.end()
            self.op = row["op"]
            lines += [f"# {row['op']}", *_HEADINGS]
        self.busbw.append(row["busbw_gbs"])
        return [*lines, _table_line(row)]

    def end(self) -> list[str]:
        if not self.busbw:
            return []
        average, self.busbw = sweep_average(self.busbw), []
        return [f"# Avg bus bandwidth    : {average:g}", "#"]


def format_table(rows: list[dict[str, Any]]) -> list[str]:
    """JSON rows (json_row) in the order they were measured, as SweepLines prints them."""
    table = SweepLines()
    return [line for row in rows for line in table.row(row)] + table.end()


def _table_line(row: dict[str, Any]) -> str:
    wrong = "N/A" if row["wrong"] is None else str(row["wrong"])
    return (
        f"  {row['bytes']:10d} {row['count']:10d} {row['dtype']:>8} {row['redop']:>5} {row['root']:4d}"
        f" {'in' if row['in_place'] else 'out':>5} {_time_text(row['time_us']):>7} {row['algbw_gbs']:7.2f}"
        f" {row['busbw_gbs']:7.2f} {wrong:>6}"
    )


def _time_text(us: float) -> str:
    """nccl-tests' time column: fewer decimals as the number grows."""
    if us >= 10000:
        return f"{us:.0f}"
    if us >= 100:
        return f"{us:.1f}"
    return f"{us:.2f}"


def format_report(rows: list[dict[str, Any]]) -> list[str]:
    """format_table, then where and how the sweep ran (report_heading)."""
    return [*format_table(rows), *report_heading(rows[0])]


def report_heading(first: dict[str, Any]) -> list[str]:
    """Where and how a sweep ran, from its first row; known once the sweep is stored, so it
    follows the rows printed as they were measured."""
    gpus = ",".join(map(str, first["gpus"])) if first["gpus"] else "none"
    fingerprint = first["fingerprint"][:12] if first["fingerprint"] else "none"
    return [
        f"# wirewise collectives: {first['ranks']} rank(s), backend {first['backend']} on {first['device']}, GPUs {gpus}",
        f"# node {first['node']}, transport {first['transport']}, timing {_timing(first)}",
        f"# fabric {first['fabric'] or 'unknown'}, fingerprint {fingerprint}, task {first['task_id']}",
    ]


def _timing(row: dict[str, Any]) -> str:
    """How the calls were timed: eager (one launch per call) or replayed from a CUDA graph."""
    return "cuda-graph (nccl-tests -G)" if row.get("cuda_graph") else "eager"
