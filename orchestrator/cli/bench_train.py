"""`wirewise bench train`: one training benchmark on this machine, stored with its fingerprint.

Thin: options into wirewise.workloads.train.TrainParams and its to_task() (which check them; one
clear line and exit 2 for anything the user can fix), the run here, then print.
torch, transformers and DeepSpeed are imported only by the rank processes.
"""

from pathlib import Path
from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import DbOption, JsonOption, console, end_run, print_json, warn

def train(
    model: Annotated[str, typer.Option("--model", help="Registry name (mistral-7b, mistral-1b, dinov2-base, dinov2-large, tiny-mistral, tiny-dinov2) or a local config.json / model folder.")],
    strategy: Annotated[str, typer.Option("--strategy", help="ddp | fsdp | zero1 | zero2 | zero3, or a plug-in strategy's name.")],
    gpus: Annotated[str | None, typer.Option("--gpus", help="Physical GPU indices, one rank each, e.g. 0,1,2,3 or 0-3.")] = None,
    nproc: Annotated[int | None, typer.Option("--nproc", help="Ranks: the first N GPUs, or N CPU ranks without GPUs (default: 1, or one per --gpus).")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Micro-batch per rank.")] = 8,
    seq_len: Annotated[int | None, typer.Option("--seq-len", help="Sequence length for language models [default: the model's].")] = None,
    steps: Annotated[int, typer.Option("--steps", help="Timed steady-state steps.")] = 10,
    warmup_steps: Annotated[int, typer.Option("--warmup-steps", help="Untimed steps first (compilation, allocator warm-up).")] = 2,
    engine: Annotated[str, typer.Option("--engine", help="native (torch DDP/FSDP, deepspeed.initialize) or accelerate (HF Accelerate with configs from templates/; GPU only).")] = "native",
    precision: Annotated[str, typer.Option("--precision", help="auto (bf16-mixed on GPU, fp32 on CPU) | fp32 | bf16-mixed | bf16 (bf16 weights).")] = "auto",
    compile: Annotated[bool, typer.Option("--compile", help="torch.compile the model (per layer under FSDP).")] = False,
    memory_limit_gb: Annotated[float | None, typer.Option("--memory-limit-gb", help="Cap each GPU at this many GB (10^9 bytes, as --gpu-mem-gb and datasheets count), e.g. 80 to act as an 80 GB card.")] = None,
    data: Annotated[str | None, typer.Option("--data", help="A Food-101 image folder or an Alpaca JSON/JSONL file [default: synthetic batches].")] = None,
    lr: Annotated[float, typer.Option("--lr", help="AdamW learning rate.")] = 1e-4,
    backend: Annotated[str | None, typer.Option("--backend", help="nccl or gloo (default: nccl with GPUs, gloo without).")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds before the run is stopped and stored as timeout.")] = 3600.0,
    topology_file: Annotated[str | None, typer.Option("--topology-file", help="Saved `nvidia-smi topo -m` output to fingerprint when NVML cannot see the wiring.")] = None,
    inject_memory_error_at_step: Annotated[int | None, typer.Option("--inject-memory-error-at-step", hidden=True, help="Test hook: raise MemoryError on every rank at this step.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Train a model for a few steps with one strategy; store throughput, peak memory and model-state bytes per rank."""
    from pydantic import ValidationError

    from wirewise.errors import first_error
    from wirewise.models import MODELS
    from wirewise.orchestrator.report.train import summary_table
    from wirewise.orchestrator.bench.here import run_and_record, run_ending
    from wirewise.orchestrator.bench.ranks import checked_topology_file, choose_ranks, cpu_rank_warnings
    from wirewise.workloads.train import TrainParams

    local = model not in MODELS and Path(model).exists()
    raw = dict(
        model=str(Path(model).resolve()) if local else model, strategy=strategy, engine=engine,
        micro_batch=batch_size, seq_len=seq_len, steps=steps, warmup_steps=warmup_steps, precision=precision,
        compile=compile, lr=lr, data=str(Path(data).resolve()) if data else None, memory_limit_gb=memory_limit_gb,
        inject_memory_error_at_step=inject_memory_error_at_step,
    )
    try:
        params = TrainParams(**raw)
    except ValidationError as exc:
        raise first_error(exc, _FLAGS, {**raw, "model": model, "data": data}) from None
    ranks = choose_ranks(gpus, nproc, backend, default_ranks=1)
    spec = params.to_task(ranks, timeout_s=timeout, topology_file=checked_topology_file(topology_file))
    warn(cpu_rank_warnings(ranks, gpus, topology_file))

    where = f"GPUs {','.join(map(str, spec.gpus))}" if spec.gpus else f"{spec.nproc_per_node} CPU ranks"
    records, result_file = run_and_record(spec, db, f"train {model} {strategy} on {where}", quiet=json)
    record = records[0]
    if json:
        print_json(record.model_dump(mode="json"))
    else:
        console().print(summary_table(record))
    end_run(*run_ending("train", records, result_file, db))


_FLAGS = {"model": "--model", "strategy": "--strategy", "engine": "--engine", "micro_batch": "--batch-size",
          "seq_len": "--seq-len", "steps": "--steps", "warmup_steps": "--warmup-steps", "precision": "--precision",
          "lr": "--lr", "data": "--data", "memory_limit_gb": "--memory-limit-gb",
          "inject_memory_error_at_step": "--inject-memory-error-at-step"}
