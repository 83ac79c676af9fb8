"""`wirewise bench collectives`: nccl-tests' bandwidth sweep on this machine, stored with the wiring.

The ranks run through jobs.launch.run_task (orchestrator.bench.run_and_record), the same
path a submitit task or a Slurm step takes; this module only turns options into a task
and prints what came back, as a table shaped like nccl-tests' output or as JSON rows.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from orchestrator.cli.common import DbOption, JsonOption, print_json
from orchestrator.errors import UserError


def collectives(
    gpus: Annotated[str | None, typer.Option("--gpus", help="Physical GPU indices, one rank each, e.g. 0,1,2,3.")] = None,
    nproc: Annotated[int | None, typer.Option("--nproc", help="Ranks: the first N GPUs with nccl, N CPU ranks with gloo.")] = None,
    backend: Annotated[str | None, typer.Option("--backend", help="nccl or gloo (default: nccl where GPUs are visible, else gloo).")] = None,
    ops: Annotated[str, typer.Option("--ops", help="Comma-separated: all_reduce, all_gather, reduce_scatter, broadcast, all_to_all.")] = "all_reduce,all_gather,reduce_scatter",
    min_bytes: Annotated[str, typer.Option("-b", "--min-bytes", metavar="SIZE", help="Smallest size (nccl-tests -b); K/M/G suffixes.")] = "1M",
    max_bytes: Annotated[str, typer.Option("-e", "--max-bytes", metavar="SIZE", help="Largest size (nccl-tests -e).")] = "1G",
    step_factor: Annotated[str, typer.Option("-f", "--step-factor", metavar="N", help="Size multiplier per step (nccl-tests -f).")] = "2",
    iters: Annotated[str, typer.Option("--iters", metavar="N", help="Timed iterations per size (nccl-tests -n).")] = "20",
    warmup: Annotated[str, typer.Option("--warmup", metavar="N", help="Untimed iterations per size (nccl-tests -w).")] = "5",
    dtype: Annotated[str, typer.Option("--dtype", help="float32, bfloat16 or float16.")] = "float32",
    check: Annotated[bool, typer.Option("--check", help="Verify every size and count wrong elements (nccl-tests -c 1).")] = False,
    transport: Annotated[str, typer.Option("--transport", help="default: NCCL as configured; pcie: no NVLink peer-to-peer (NCCL_P2P_DISABLE=1).")] = "default",
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds before the whole run is stopped and recorded as timeout.")] = 600.0,
    topology_file: Annotated[Path | None, typer.Option("--topology-file", help="Saved `nvidia-smi topo -m` text to fingerprint, when NVML cannot see the wiring.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """All-reduce, all-gather and reduce-scatter bandwidth over a size sweep, with nccl-tests' definitions."""
    params = _params(ops, min_bytes, max_bytes, step_factor, iters, warmup, dtype, check, transport)
    spec = _task(params, gpus, nproc, backend, timeout, topology_file)
    _warn_about_nvls(params, spec)

    from orchestrator.bench import run_and_record

    records = run_and_record(spec, db, label="collectives", quiet=json)
    failed = [r for r in records if r.status != "ok"]
    if json:
        print_json([json_row(r) for r in records])
    else:
        _print_tables(records)
    if failed or not records:
        _report_failure(failed, spec)
        raise typer.Exit(1)


# -- input ------------------------------------------------------------------
def _params(ops, min_bytes, max_bytes, step_factor, iters, warmup, dtype, check, transport):
    from pydantic import ValidationError

    from jobs.collectives.params import CollectiveParams

    raw = dict(
        ops=ops, min_bytes=min_bytes, max_bytes=max_bytes, step_factor=step_factor, iters=iters,
        warmup=warmup, dtype=dtype, check=check, transport=transport,
    )
    try:
        return CollectiveParams.model_validate(raw)
    except ValidationError as exc:
        raise UserError(_first_error(exc, raw)) from None


_FLAGS = {"min_bytes": "-b", "max_bytes": "-e", "step_factor": "-f", "ops": "--ops", "iters": "--iters",
          "warmup": "--warmup", "dtype": "--dtype", "transport": "--transport"}


def _first_error(exc, raw: dict[str, Any]) -> str:
    """One line for the first problem pydantic found, named by its option."""
    error = exc.errors()[0]
    message = error["msg"].removeprefix("Value error, ")
    field = error["loc"][0] if error["loc"] else None
    if field in _FLAGS:
        return f"{_FLAGS[field]} {raw[field]!r}: {message}"
    return message


def _task(params, gpus_text, nproc, backend, timeout, topology_file):
    from jobs.collectives.params import TRANSPORT_ENV
    from jobs.spec import TaskSpec

    if timeout <= 0:
        raise UserError(f"--timeout {timeout:g}: give a positive number of seconds")
    from orchestrator.bench import checked_topology_file, choose_placement

    place = choose_placement(gpus_text, nproc, backend, default_ranks=None)
    return TaskSpec(
        workload="collective",
        params=params.model_dump(mode="json", exclude={"corrupt_rank"}),
        gpus=place.gpus,
        nproc_per_node=place.ranks,
        backend=place.backend,
        env=TRANSPORT_ENV[params.transport],
        timeout_s=timeout,
        topology_file=checked_topology_file(topology_file),
    )


def _warn_about_nvls(params, spec) -> None:
    from jobs.collectives.params import transport_note

    note = transport_note(params.transport, spec.backend, spec.world_size, os.environ.get("NCCL_NVLS_ENABLE"))
    if note:
        sys.stderr.write(f"wirewise: note: {note}\n")


# -- output -----------------------------------------------------------------
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
    """JSON rows (json_row) as nccl-tests prints them: a block per op, then its 'Avg bus bandwidth'
    (the sweep's own, avg_busbw_gbs on every row)."""
    lines: list[str] = []
    for op in dict.fromkeys(row["op"] for row in rows):
        op_rows = [row for row in rows if row["op"] == op]
        where = "in place" if op_rows[0]["in_place"] else "out of place"
        lines += [
            f"# {op} ({where})",
            _HEAD.format("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"),
            _HEAD.format("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", ""),
        ]
        lines += [_table_line(row) for row in op_rows]
        lines += [f"# Avg bus bandwidth    : {op_rows[0]['avg_busbw_gbs']:g}", "#"]
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
        f"transport {first['transport']}, node {first['node']}",
        f"# fabric {first['fabric'] or 'unknown'}, fingerprint {fingerprint}, task {first['task_id']}",
        "#",
        *format_table(rows),
    ]


def _print_tables(records) -> None:
    ok = [json_row(r) for r in records if r.status == "ok"]
    if ok:
        typer.echo("\n".join(format_report(ok)))


def _report_failure(failed, spec) -> None:
    from orchestrator.bench import runs_root

    if failed:
        record = failed[0]
        sys.stderr.write(f"wirewise: collectives run {record.status}: {record.error}\n")
    else:
        sys.stderr.write("wirewise: collectives run returned no rows\n")
    sys.stderr.write(f"wirewise: rank logs in {runs_root() / spec.task_id}\n")
