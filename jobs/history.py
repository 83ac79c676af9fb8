"""A real training job's own figures, into the history the advice reads.

    record_job(step_times_s, tokens_per_step=..., samples_per_step=...)   a custom loop, at its end
    wirewise.jobs.trainer_callback.WirewiseCallback                       the Hugging Face Trainer

Every rank calls record_job once, when training ends (a collective when torch.distributed is
initialised: the ranks' figures are gathered). Rank 0 writes one result record with
`source=job`, in the same record (wirewise.record) and the same atomic result file as the
benchmarks (`result.json`, jobs.records.result_document), and stores it in the database every
command would use: `db=`, else the setting db (wirewise.settings: WIREWISE_DB, which `wirewise
launch` sets, the user's file, the site's file, the default in the user's data folder). It
stores the file through `wirewise collect`'s own code (wirewise.collect, the contract's door to
it, in this process), the one path every result file takes into the store; where that fails (no
database reachable from the compute node, a configuration file it cannot read, a database busy
for STORE_DB_WAIT_S), the file stays for `wirewise collect PATH` later. The job never fails
because its figures could not be stored, nor waits on the store past STORE_TIMEOUT_S.

What the record says:
- steady state: the steps after `warmup_steps`; step time is the slowest rank's mean (the ranks
  wait for each other every step), tokens/s and samples/s are all ranks' counts over it;
- peak memory per rank: the allocator's peak on a GPU, the process's peak RSS on CPU ranks, as
  benchmark records say it (jobs.failures.memory_now);
- where it ran, as the control plane would state it: every rank says its node (Slurm's name for
  it, else the host's) and the GPUs it used by their physical index (wirewise.jobenv maps
  CUDA_VISIBLE_DEVICES through Slurm's renumbering and NVML's UUIDs), and rank 0 gathers them:
  the record names every node, node 0 first, node 0's GPUs, and counts every node's, with or
  without `wirewise launch` and with or without Slurm. Inside `wirewise launch` its launch file
  (wirewise.launch_file) adds the placement, the strategy chosen and why, and the node's wiring
  (fingerprint); otherwise the wiring is the one NVML reports;
- the strategy is what ran: read from accelerate's state where accelerate built one (DDP, FSDP,
  DeepSpeed's ZeRO stage), kept under the launch's name when that name's descriptor runs the
  same way (a plug-in's variant), and recorded beside the launch's choice when they differ.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from statistics import fmean
from typing import Any

from wirewise.clock import utcnow
from wirewise.collect import collect
from wirewise.configs import RAN_AS
from wirewise.launch_file import LaunchFile, launch_dir, read_launch
from wirewise.record import ResultRecord
from wirewise.runs import RunPaths, RunsRoot
from wirewise.settings import STRATEGY, setting

DEFAULT_WARMUP_STEPS = 2
# At the end of a job a busy database is waited on 60 s at most, not collect's default 600 (the
# setting db_wait_s, when shorter, holds): the job's nodes are held until it ends, and the file
# stays for `wirewise collect` later.
STORE_DB_WAIT_S = 60.0
# The whole store no longer than this: a database host that never answers (a dropped SYN is
# retried for 127 s by Linux's default tcp_syn_retries=6) does not hold the job's end.
STORE_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class RankFigures:
    """One rank's share, gathered to rank 0."""

    step_times_s: list[float]  # steady-state steps
    tokens_per_step: float | None
    samples_per_step: float | None
    peak_mem_bytes: int
    device: str  # cuda | cpu
    node: str  # the node the rank ran on, as Slurm names it (JobEnv.node_name)
    gpus: list[int]  # the GPUs it used, by physical index; [] on the CPU or where they could not be named
    gpu_problem: str | None = None  # why a GPU rank's GPUs could not be named


def record_job(
    step_times_s: list[float],
    *,
    tokens_per_step: float | None = None,
    samples_per_step: float | None = None,
    warmup_steps: int = DEFAULT_WARMUP_STEPS,
    model: str | None = None,
    strategy: str | None = None,
    micro_batch: int | None = None,
    seq_len: int | None = None,
    precision: str | None = None,
    run_dir: str | Path | None = None,
    db: str | None = None,
    started_at: datetime | None = None,
    extra: dict[str, Any] | None = None,
) -> Path | None:
    """Record this job's steady-state figures; call it on every rank once training ends.

    `step_times_s`: every step's seconds on this rank, in order (the first `warmup_steps` are
    left out); on a GPU, time each step after `torch.cuda.synchronize()`. `tokens_per_step` and
    `samples_per_step`: what this rank processes per step. Returns the result file on rank 0,
    None on the others."""
    steady = list(step_times_s)[warmup_steps:]
    if not steady:
        raise ValueError(f"record_job needs more than {warmup_steps} step time(s) (the warm-up is left out)")
    mine = RankFigures(steady, tokens_per_step, samples_per_step, *_rank_here())
    ranks, rank = _gather(mine)
    if rank != 0:
        return None
    launch = _launch(run_dir)
    folder = Path(run_dir) if run_dir else (launch[1] if launch else RunsRoot.configured().new_run("job"))
    record, topo = job_record(
        ranks, launch[0] if launch else None, model=model, strategy=strategy, micro_batch=micro_batch,
        seq_len=seq_len, precision=precision, ran=accelerate_engine(), warmup_steps=warmup_steps,
        started_at=started_at, extra=extra,
    )
    path = write_result(folder, record, topo)
    store_result(path, db)
    return path


def job_record(
    ranks: list[RankFigures],
    launch: LaunchFile | None,
    *,
    model: str | None = None,
    strategy: str | None = None,
    micro_batch: int | None = None,
    seq_len: int | None = None,
    precision: str | None = None,
    ran: dict[str, Any] | None = None,
    warmup_steps: int = DEFAULT_WARMUP_STEPS,
    started_at: datetime | None = None,
    extra: dict[str, Any] | None = None,
) -> tuple[ResultRecord, Any]:
    """(the record, the node's Topology or None) from every rank's figures and what the launch
    said; `ran` is accelerate's own view (accelerate_engine). Pure: tests feed it figures."""
    from wirewise.jobs.records import env_to_record

    step_time = max(fmean(r.step_times_s) for r in ranks)
    tokens = _summed([r.tokens_per_step for r in ranks])
    samples = _summed([r.samples_per_step for r in ranks])
    device = "cuda" if all(r.device == "cuda" for r in ranks) else "cpu"
    topo = _topology(launch, device)
    launched = launch.strategy if launch else STRATEGY.get()
    ran = ran or {}
    name, strategy_note = _strategy(strategy or launched, ran)
    where, where_notes = _where(ranks, device, topo)
    model = model or (launch.model if launch else None)
    ended = utcnow()
    steps = len(ranks[0].step_times_s)
    details = {
        "backend": ran.get("backend") or ("nccl" if device == "cuda" else "gloo"),
        "device": device,
        "step_times_s": ranks[0].step_times_s,
        "step_time_s_per_rank": [fmean(r.step_times_s) for r in ranks],
        "tokens_per_step": tokens,
        "samples_per_step": samples,
        "peak_mem_source": "torch.cuda.max_memory_allocated" if device == "cuda" else "ru_maxrss of the rank process",
        **({"accelerate_distributed_type": ran["distributed_type"]} if ran.get("distributed_type") else {}),
        **({"strategy_note": strategy_note} if strategy_note else {}),
        **where_notes,
        **_launch_details(launch, device),
        **(extra or {}),
    }
    record = ResultRecord(
        workload="train", source="job",
        params={k: v for k, v in {
            "model": model, "strategy": name, "engine": "accelerate" if ran else "custom", "micro_batch": micro_batch,
            "seq_len": seq_len, "precision": precision or RAN_AS.get(ran.get("mixed_precision")), "steps": steps,
            "warmup_steps": warmup_steps, "placement": launch.placement if launch else None, "transport": "default",
        }.items() if v is not None},
        **where, fingerprint=topo.fingerprint if topo else None, fabric=topo.fabric if topo else None,
        started_at=started_at or ended - timedelta(seconds=sum(ranks[0].step_times_s)), ended_at=ended,
        versions=_versions(), env=env_to_record(os.environ),
        model=model, strategy=name, world_size=len(ranks), micro_batch=micro_batch, seq_len=seq_len,
        step_time_s=step_time,
        tokens_per_s=tokens / step_time if tokens else None,
        samples_per_s=samples / step_time if samples else None,
        peak_mem_bytes=[r.peak_mem_bytes for r in ranks],
        extra=details,
    )
    return record, topo


def accelerate_engine() -> dict[str, Any]:
    """What an accelerate Accelerator built in this process (distributed type, ZeRO stage,
    backend, precision), {} where none was made (a custom loop, PartialState alone). Read through
    accelerate's public state (accelerate.state.is_initialized), never imported here for the
    asking; PartialState() and AcceleratorState() then read the state the Accelerator made."""
    if "accelerate" not in sys.modules:
        return {}
    from accelerate.state import AcceleratorState, PartialState, is_initialized

    if not is_initialized():
        return {}
    state, full = PartialState(), AcceleratorState()
    found = {"distributed_type": str(state.distributed_type), "backend": state.backend,
             "num_processes": state.num_processes, "mixed_precision": str(full.mixed_precision)}
    plugin = getattr(full, "deepspeed_plugin", None)
    if plugin is not None:
        found["zero_stage"] = plugin.zero_stage
    return found


def write_result(folder: Path, record: ResultRecord, topo) -> Path:
    """The result file in `folder` (result.json, or result-N.json beside an earlier one)."""
    from wirewise.atomic import write_json_atomic
    from wirewise.jobs.records import result_document

    folder.mkdir(parents=True, exist_ok=True)
    paths, n = RunPaths(folder), 1
    while paths.result_numbered(n).exists():
        n += 1
    path = paths.result_numbered(n)
    write_json_atomic(path, result_document("ok", topo, [record]))
    return path


def store_result(path: Path, db: str | None) -> bool:
    """The result file into the store as `wirewise collect PATH [--db DB]` stores it (its code:
    wirewise.collect): without `db`, the setting db, resolved as every command resolves it. A
    warning, never an exception, when it fails or takes past STORE_TIMEOUT_S (it runs in a
    daemon thread, so a store that never answers is left behind when the job exits)."""
    outcome: list[str | Exception] = []

    def store() -> None:
        try:
            patience_s = min(STORE_DB_WAIT_S, setting("db_wait_s").value)  # a site's shorter wait holds
            outcome.append(collect([path], db, patience_s))
        except Exception as exc:  # noqa: BLE001 - whatever storing does, the job's own work is done
            outcome.append(exc)

    worker = threading.Thread(target=store, name="wirewise-store-result", daemon=True)
    worker.start()
    worker.join(STORE_TIMEOUT_S)
    said = outcome[0] if outcome else TimeoutError(f"no answer from the database in {STORE_TIMEOUT_S:g} s")
    if isinstance(said, Exception):
        _say(f"warning: could not store {path} ({_one_line(said)}); later: wirewise collect {path}")
        return False
    _say(f"job figures stored: {said}")
    return True


# ------------------------------------------------------------------------ the pieces


def _rank_here() -> tuple[int, str, str, list[int], str | None]:
    """(peak bytes, device, node, physical GPUs used, why they could not be named) of this rank.
    The GPUs used are the current device and any other this process allocated memory on (a lone
    process may spread a model over several); torch numbers them as CUDA_VISIBLE_DEVICES lists
    them, which wirewise.jobenv maps to physical indices. An environment it cannot read (a
    SLURM_NODEID that is no number, a UUID NVML does not list) leaves the GPUs unnamed and says
    why: the job never fails at its end over its own record."""
    from wirewise.errors import UserError
    from wirewise.jobenv import read_job_env
    from wirewise.jobs.failures import memory_now
    from wirewise.topology.probe import short_hostname

    import torch

    on_gpu = torch.cuda.is_available() and torch.cuda.is_initialized()
    current = torch.cuda.current_device() if on_gpu else None
    peak = memory_now(torch.device("cuda", current))["cuda_peak_allocated_bytes"] if on_gpu else memory_now(None)["host_peak_rss_bytes"]
    try:
        job = read_job_env()
        physical = job.physical_gpus() if on_gpu else None
    except UserError as exc:
        return peak, "cuda" if on_gpu else "cpu", short_hostname(), [], str(exc) if on_gpu else None
    if not on_gpu:
        return peak, "cpu", job.node_name, [], None
    used = [i for i in range(torch.cuda.device_count()) if i == current or torch.cuda.max_memory_reserved(i) > 0]
    return peak, "cuda", job.node_name, used if physical is None else [physical[i] for i in used], None


def _gather(mine: RankFigures) -> tuple[list[RankFigures], int]:
    """Every rank's figures on rank 0 (all ranks take part), and this rank's number."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return [mine], 0
    ranks: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(ranks, mine)
    return ranks, dist.get_rank()


def _launch(run_dir: str | Path | None) -> tuple[LaunchFile, Path] | None:
    found = launch_dir()
    if found is None or (run_dir is not None and Path(run_dir).resolve() != found.resolve()):
        return None
    try:
        return read_launch(found), found
    except (OSError, ValueError):
        return None


def _topology(launch: LaunchFile | None, device: str):
    """The node's wiring: the launch's, else NVML's on a GPU; None for CPU ranks of their own."""
    from wirewise.errors import UserError
    from wirewise.topology import Topology, read_topology

    if launch is not None:
        return Topology.model_validate(launch.topology) if launch.topology else None
    if device != "cuda":
        return None
    try:
        return read_topology(None)
    except UserError:
        return None


def _strategy(named: str | None, ran: dict[str, Any]) -> tuple[str | None, str | None]:
    """(the strategy to record, a note when the launch's name and what ran disagree)."""
    from wirewise import registry

    seen = _seen_strategy(ran)
    if seen is None:
        return named, None
    if named in registry.STRATEGIES:
        spec = registry.STRATEGIES[named]
        if registry.STRATEGIES[seen].accelerate == spec.accelerate and registry.STRATEGIES[seen].zero_stage == spec.zero_stage:
            return named, None
    if named is None:
        return seen, None
    return seen, f"launched as {named}, but accelerate ran {ran['distributed_type']}: recorded as {seen}"


def _seen_strategy(ran: dict[str, Any]) -> str | None:
    """The built-in strategy accelerate's distributed type (and ZeRO stage) is."""
    kind = ran.get("distributed_type", "").removeprefix("DistributedType.")
    if kind == "DEEPSPEED":
        return f"zero{ran.get('zero_stage')}" if ran.get("zero_stage") in (1, 2, 3) else None
    if kind == "FSDP":
        return "fsdp"
    if kind.startswith("MULTI_") or kind == "NO":
        return "ddp"
    return None


def _where(ranks: list[RankFigures], device: str, topo) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the record's node and GPU fields, notes for its extra) from what every rank said: the
    nodes in rank order (node 0 first), node 0's GPUs, and every node's GPUs counted (a GPU rank
    whose GPU could not be named counts as one, and the notes say why). Only node 0's wiring is
    known here. CPU ranks hold no GPUs, as benchmark records say (wirewise.jobs.records)."""
    nodes = list(dict.fromkeys(r.node for r in ranks))
    held = {node: sorted({g for r in ranks if r.node == node for g in r.gpus}) for node in nodes}
    on_gpu = device == "cuda"
    notes: dict[str, Any] = {}
    if on_gpu and len({tuple(g) for g in held.values()}) > 1:
        notes["node_gpus"] = held  # the nodes held different GPUs: each node's, beside node 0's
    problems = sorted({r.gpu_problem for r in ranks if r.gpu_problem})
    if on_gpu and problems:
        notes["gpu_problem"] = "; ".join(problems)
    unnamed = sum(1 for r in ranks if not r.gpus) if on_gpu else 0
    return {"node": nodes[0], "node_count": len(nodes), "nodes": nodes,
            "node_fingerprints": [topo.fingerprint if topo else None, *[None] * (len(nodes) - 1)],
            "gpus": held[nodes[0]] if on_gpu else [],
            "gpu_count": sum(len(g) for g in held.values()) + unnamed if on_gpu else 0}, notes


def _launch_details(launch: LaunchFile | None, device: str) -> dict[str, Any]:
    if launch is None:
        return {}
    found = {
        "launch": {"chosen_by": launch.chosen_by, "advised": launch.advised, "strategy": launch.strategy,
                   "placement": launch.placement, "predicted_busbw_gbs": launch.predicted_busbw_gbs,
                   "busbw_basis": launch.busbw_basis, "nodes": launch.nodes, "slurm_job_id": launch.slurm_job_id,
                   "accelerate_config_file": launch.accelerate_config_file},
    }
    if device == "cpu" and launch.assigned_gpus:
        found["assigned_gpus"] = launch.assigned_gpus
    return found


def _summed(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else float(sum(values))


def _versions() -> dict[str, str | None]:
    from wirewise.jobs.versions import software_versions
    from wirewise.versions import code_hash

    return {**software_versions(), "wirewise_code": code_hash()}


def _one_line(exc: Exception) -> str:
    """An error as one line: wirewise's own (UserError) as it says itself, others by their type."""
    from wirewise.errors import UserError

    first = (str(exc).strip().splitlines() or ["no message"])[0]
    return first if isinstance(exc, UserError) else f"{type(exc).__name__}: {first}"


def _say(line: str) -> None:
    sys.stderr.write(f"wirewise: {line}\n")
