"""`wirewise bench collectives`: nccl-tests' bandwidth sweep on this machine, stored with the wiring.

Options in, CollectiveParams.to_task() (the workload's own rules), the run here, a table out
(wirewise.orchestrator.report.collectives) or JSON rows.
"""

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import DbOption, JsonOption, end_run, print_json, print_lines, warn


def collectives(
    gpus: Annotated[str | None, typer.Option("--gpus", help="Physical GPU indices, one rank each, e.g. 0,1,2,3 or 0-3.")] = None,
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
    cuda_graph: Annotated[bool, typer.Option("--cuda-graph", help="Capture each size's timed calls in a CUDA graph and replay it (nccl-tests -G): no host launch cost. NCCL only.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds before the whole run is stopped and recorded as timeout.")] = 600.0,
    topology_file: Annotated[Path | None, typer.Option("--topology-file", help="Saved `nvidia-smi topo -m` text to fingerprint, when NVML cannot see the wiring.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """All-reduce, all-gather and reduce-scatter bandwidth over a size sweep, with nccl-tests' definitions."""
    from pydantic import ValidationError

    from wirewise.errors import first_error
    from wirewise.orchestrator.report.collectives import SweepLines, json_row, report_heading
    from wirewise.orchestrator.bench.here import run_and_record, run_ending
    from wirewise.orchestrator.bench.sweep_time import cpu_sweep_estimate
    from wirewise.orchestrator.bench.ranks import checked_topology_file, choose_ranks, cpu_rank_warnings
    from wirewise.workloads.collective import CollectiveParams, transport_note

    raw = dict(ops=ops, min_bytes=min_bytes, max_bytes=max_bytes, step_factor=step_factor, iters=iters,
               warmup=warmup, dtype=dtype, check=check, transport=transport, cuda_graph=cuda_graph)
    try:
        params = CollectiveParams.model_validate(raw)
    except ValidationError as exc:
        raise first_error(exc, _FLAGS, raw) from None
    _check_shell_env(params.transport)
    ranks = choose_ranks(gpus, nproc, backend, default_ranks=None)
    spec = params.to_task(ranks, timeout_s=timeout, topology_file=checked_topology_file(topology_file))
    warn(cpu_rank_warnings(ranks, gpus, topology_file))
    note = transport_note(params.transport, spec.backend, spec.world_size, os.environ.get("NCCL_NVLS_ENABLE"))
    if note:
        sys.stderr.write(f"wirewise: note: {note}\n")

    table = SweepLines()
    records, result_file = run_and_record(spec, db, label="collectives", quiet=json,
                                          on_row=None if json else lambda row: print_lines(table.row(row)),
                                          note=cpu_sweep_estimate(params, spec))
    ok = [json_row(r) for r in records if r.status == "ok"]
    if json:
        print_json([json_row(r) for r in records])
    elif ok:
        print_lines([*table.end(), *report_heading(ok[0])])
    end_run(*run_ending("collectives", records, result_file, db))


def _check_shell_env(transport: str) -> None:
    """A shell that sets what the other transport means would record rows under the wrong one."""
    from wirewise.errors import UserError
    from wirewise.record import RECORDED_ENV_PREFIXES
    from wirewise.workloads import transport_env

    try:
        transport_env(transport, {k: v for k, v in os.environ.items() if k.startswith(RECORDED_ENV_PREFIXES)})
    except ValueError as exc:
        raise UserError(f"this shell's environment: {exc}") from None


_FLAGS = {"min_bytes": "-b", "max_bytes": "-e", "step_factor": "-f", "ops": "--ops", "iters": "--iters",
          "warmup": "--warmup", "dtype": "--dtype", "transport": "--transport"}
