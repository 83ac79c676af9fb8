"""Run one task now on this machine (`wirewise bench ...`) and record its results.

The same jobs.launch.run_task that Slurm tasks call does the work; this module adds
what a person at a terminal wants: a progress bar, the run folder, and ingestion.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import UserError
from orchestrator.record.schema import ResultRecord


def runs_root() -> Path:
    """Where run folders (spec, rank logs, result file) go: $WIREWISE_RUNS or ./.wirewise/runs."""
    return Path(os.environ.get("WIREWISE_RUNS") or ".wirewise/runs")


def parse_gpu_list(text: str | None) -> list[int]:
    """'0,1,2,3' -> [0, 1, 2, 3]; one clear error for anything else."""
    if not text:
        return []
    try:
        gpus = [int(part) for part in text.split(",") if part.strip() != ""]
    except ValueError:
        raise UserError(f"--gpus {text!r}: give physical GPU indices separated by commas, e.g. --gpus 0,1,2,3") from None
    if any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
        raise UserError(f"--gpus {text!r}: indices must be distinct and not negative")
    return gpus


@dataclass(frozen=True)
class Placement:
    gpus: list[int]  # physical indices; [] = CPU ranks
    ranks: int
    backend: str


def choose_placement(gpus_text: str | None, nproc: int | None, backend: str | None, *, default_ranks: int | None) -> Placement:
    """GPUs, rank count and backend from --gpus / --nproc / --backend and the GPUs this machine has.

    Without --gpus or --nproc a run takes `default_ranks` ranks (None: every GPU here, or
    two CPU ranks). nccl needs GPUs; gloo may be given GPU indices on a machine without
    any (the ranks then run on CPU with those indices recorded)."""
    gpus = parse_gpu_list(gpus_text)
    if nproc is not None and nproc < 1:
        raise UserError(f"--nproc {nproc}: give at least 1 rank")
    if gpus and nproc is not None and nproc != len(gpus):
        raise UserError(f"--nproc {nproc} and --gpus {gpus_text} disagree (one rank per GPU): give one of them")
    if backend is not None and backend not in ("nccl", "gloo"):
        raise UserError(f"--backend {backend!r}: choose nccl or gloo")
    available = visible_gpu_count()
    explicit_gloo = backend == "gloo"
    backend = backend or ("nccl" if available else "gloo")
    if not available and (backend == "nccl" or (gpus and not explicit_gloo)):
        raise UserError("no GPU is visible on this machine (no NVIDIA driver or device): run CPU ranks with --backend gloo")
    if available and any(g >= available for g in gpus):
        raise UserError(f"--gpus {gpus_text}: this machine has GPUs 0..{available - 1}")
    if backend == "nccl" and not gpus:
        wanted = nproc or default_ranks or available
        if wanted > available:
            raise UserError(f"--nproc {wanted}: this machine has {available} GPU(s)")
        gpus = list(range(wanted))
    return Placement(gpus, len(gpus) or nproc or default_ranks or 2, backend)


def checked_topology_file(path: str | Path | None) -> str | None:
    """--topology-file, read now so a missing or malformed file is a one-line error before any
    rank starts; the task gets the absolute path (ranks may run from another folder)."""
    if path is None:
        return None
    from orchestrator.topology import read_topology

    read_topology(path)
    return str(Path(path).resolve())


def visible_gpu_count() -> int:
    """GPUs on this machine per NVML; 0 without a driver (no torch import)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return 0


def run_and_record(spec, db: str | None, label: str, quiet: bool = False) -> list[ResultRecord]:
    """Run `spec` (a jobs.spec.TaskSpec) here with a progress bar, store and return its records."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from jobs.launch import run_task
    from orchestrator.record.ingest import ingest_result_file
    from orchestrator.store import Store

    store = Store(db)  # open (and migrate) before spending minutes on the run
    run_dir = runs_root() / spec.task_id
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[step]}"),
        TimeElapsedColumn(),
        transient=True,
        disable=quiet,
    ) as bar:
        task = bar.add_task(label, total=None, step="starting ranks")

        def on_progress(done: int, total: int, step: str) -> None:
            bar.update(task, completed=done, total=total, step=step)

        result_file = run_task(spec, run_dir, on_progress=on_progress)
    records, _new = ingest_result_file(store, result_file)
    return records
