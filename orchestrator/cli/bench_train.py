"""`wirewise bench train`: one training benchmark on this machine, stored with its fingerprint.

Thin: options into jobs.train.params.TrainParams (which checks them; one clear line and exit 2
for anything the user can fix), the task, the same launch path as every workload
(orchestrator.bench), then print.
torch, transformers and DeepSpeed are imported only by the rank processes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.common import DbOption, JsonOption, console, print_json
from orchestrator.errors import UserError

# Every rank runs offline: models are built from configs, nothing is downloaded.
RANK_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def train(
    model: Annotated[str, typer.Option("--model", help="Registry name (mistral-7b, mistral-1b, dinov2-base, dinov2-large, tiny-mistral, tiny-dinov2) or a local config.json / model folder.")],
    strategy: Annotated[str, typer.Option("--strategy", help="ddp | fsdp | zero1 | zero2 | zero3.")],
    gpus: Annotated[str | None, typer.Option("--gpus", help="Physical GPU indices, one rank each, e.g. 0,1,2,3.")] = None,
    nproc: Annotated[int | None, typer.Option("--nproc", min=1, help="Ranks: the first N GPUs, or N CPU ranks without GPUs (default: 1, or one per --gpus).")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Micro-batch per rank.")] = 8,
    seq_len: Annotated[int | None, typer.Option("--seq-len", help="Sequence length for language models [default: the model's].")] = None,
    steps: Annotated[int, typer.Option("--steps", help="Timed steady-state steps.")] = 10,
    warmup_steps: Annotated[int, typer.Option("--warmup-steps", help="Untimed steps first (compilation, allocator warm-up).")] = 2,
    engine: Annotated[str, typer.Option("--engine", help="native (torch DDP/FSDP, deepspeed.initialize) or accelerate (HF Accelerate with configs from templates/; GPU only).")] = "native",
    precision: Annotated[str, typer.Option("--precision", help="auto (bf16-mixed on GPU, fp32 on CPU) | fp32 | bf16-mixed | bf16 (bf16 weights).")] = "auto",
    compile: Annotated[bool, typer.Option("--compile", help="torch.compile the model (per layer under FSDP).")] = False,
    memory_limit_gb: Annotated[float | None, typer.Option("--memory-limit-gb", help="Cap each GPU at this many GiB, e.g. 80 to act as an 80 GB card.")] = None,
    data: Annotated[str | None, typer.Option("--data", help="A Food-101 image folder or an Alpaca JSON/JSONL file [default: synthetic batches].")] = None,
    lr: Annotated[float, typer.Option("--lr", help="AdamW learning rate.")] = 1e-4,
    backend: Annotated[str | None, typer.Option("--backend", help="nccl or gloo (default: nccl with GPUs, gloo without).")] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1.0, help="Seconds before the run is stopped and stored as timeout.")] = 3600.0,
    topology_file: Annotated[str | None, typer.Option("--topology-file", help="Saved `nvidia-smi topo -m` output to fingerprint when NVML cannot see the wiring.")] = None,
    inject_memory_error_at_step: Annotated[int | None, typer.Option("--inject-memory-error-at-step", hidden=True, help="Test hook: raise MemoryError on every rank at this step.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Train a model for a few steps with one strategy; store throughput, peak memory and model-state bytes per rank."""
    from orchestrator.bench import run_and_record

    spec = build_spec(
        model=model, strategy=strategy, gpus=gpus, nproc=nproc, batch_size=batch_size, seq_len=seq_len, steps=steps,
        warmup_steps=warmup_steps, engine=engine, precision=precision, compile=compile,
        memory_limit_gb=memory_limit_gb, data=data, lr=lr, backend=backend, timeout=timeout,
        topology_file=topology_file, inject_memory_error_at_step=inject_memory_error_at_step,
    )
    where = f"GPUs {','.join(map(str, spec.gpus))}" if spec.gpus else f"{spec.nproc_per_node} CPU ranks"
    records = run_and_record(spec, db, f"train {model} {strategy} on {where}", quiet=json)
    record = records[0]
    if json:
        print_json(record.model_dump(mode="json"))
    else:
        _print_summary(record)
    if record.status != "ok":
        raise typer.Exit(1)


def build_spec(*, model, strategy, gpus, nproc, batch_size, seq_len, steps, warmup_steps, engine, precision, compile,
               memory_limit_gb, data, lr, backend, timeout, topology_file, inject_memory_error_at_step):
    """The TaskSpec for these options; UserError (one line, exit 2) for anything wrong.
    TrainParams checks the training options; this adds what depends on the placement."""
    from pydantic import ValidationError

    from jobs.spec import TaskSpec
    from jobs.train.models import MODELS
    from jobs.train.params import TrainParams
    from orchestrator.bench import checked_topology_file, choose_placement

    entry = MODELS.get(model)
    if seq_len is None and entry is not None and entry.kind == "causal-lm":
        seq_len = entry.default_seq_len  # explicit, so even a failed run's record says it
    raw = dict(
        model=model if entry or not Path(model).exists() else str(Path(model).resolve()), strategy=strategy,
        engine=engine, micro_batch=batch_size, seq_len=seq_len, steps=steps, warmup_steps=warmup_steps,
        precision=precision, compile=compile, lr=lr, data=str(Path(data).resolve()) if data else None,
        memory_limit_gb=memory_limit_gb, inject_memory_error_at_step=inject_memory_error_at_step,
    )
    try:
        params = TrainParams(**raw)
    except ValidationError as exc:
        raise UserError(_first_error(exc, {**raw, "model": model, "data": data})) from None
    place = choose_placement(gpus, nproc, backend, default_ranks=1)
    if not place.gpus:
        if engine == "accelerate":
            raise UserError("--engine accelerate runs on GPUs only: on CPU accelerate's FSDP plugin does not shard and "
                            "its DeepSpeed plugin miscounts processes; use --engine native")
        if memory_limit_gb is not None:
            raise UserError("--memory-limit-gb caps GPU memory, and this run has no GPU")
    return TaskSpec(
        workload="train", params=params.model_dump(exclude_none=True), gpus=place.gpus,
        nproc_per_node=place.ranks, backend=place.backend, timeout_s=timeout,
        topology_file=checked_topology_file(topology_file), env=dict(RANK_ENV),
    )


_FLAGS = {"model": "--model", "strategy": "--strategy", "engine": "--engine", "micro_batch": "--batch-size",
          "seq_len": "--seq-len", "steps": "--steps", "warmup_steps": "--warmup-steps", "precision": "--precision",
          "lr": "--lr", "data": "--data", "memory_limit_gb": "--memory-limit-gb",
          "inject_memory_error_at_step": "--inject-memory-error-at-step"}


def _first_error(exc, raw: dict) -> str:
    """One line for the first problem TrainParams found, named by its option as the user typed it."""
    error = exc.errors()[0]
    message = error["msg"].removeprefix("Value error, ")
    field = error["loc"][0] if error["loc"] else None
    if field not in _FLAGS:
        return message  # a check across options: its message names them
    value = raw[field]
    if error["type"] == "value_error" and repr(value) in message:
        return f"{_FLAGS[field]}: {message}"
    return f"{_FLAGS[field]} {value!r}: {message}"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def _sizes(values) -> str:
    return ", ".join(_size(v) for v in values) if values else "-"


def _print_summary(record) -> None:
    from rich.table import Table

    extra = record.extra
    ok = record.status == "ok"
    title = f"train {record.model} / {record.strategy} x{record.world_size}: [{'green' if ok else 'red'}]{record.status}[/]"
    table = Table(title=title, show_header=False)
    table.add_column("what")
    table.add_column("value")
    rows = [
        ("micro-batch / seq len", f"{record.micro_batch} / {record.seq_len or '-'}"),
        ("precision / engine", f"{extra.get('precision', '-')} / {record.params.get('engine', '-')}"),
    ]
    if ok:
        rows += [
            ("step time", f"{record.step_time_s * 1000:.1f} ms"),
            ("samples/s", f"{record.samples_per_s:,.1f}"),
            ("tokens/s", f"{record.tokens_per_s:,.0f}" if record.tokens_per_s else "-"),
            ("MFU", f"{record.mfu:.1%} (peak: {extra.get('peak_source')})" if record.mfu is not None else "-"),
            ("peak memory per rank", _sizes(record.peak_mem_bytes)),
            ("model state per rank", _sizes(record.model_state_bytes)),
            ("  params / grads / optimizer", " | ".join(_sizes(extra.get(k)) for k in ("param_bytes", "grad_bytes", "optimizer_bytes"))),
            ("loss first -> last", f"{extra['losses'][0]:.4f} -> {extra['losses'][-1]:.4f}"),
        ]
    else:
        rows += [("peak memory per rank", _sizes(record.peak_mem_bytes)), ("error", (record.error or "")[-600:])]
    for name, value in rows:
        table.add_row(name, value)
    console().print(table)
