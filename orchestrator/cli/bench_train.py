"""`wirewise bench train`: one training benchmark on this machine, stored with its fingerprint.

Thin: check the input (one clear line and exit 2 for anything the user can fix), build the
task, run it through the same launch path as every workload (orchestrator.bench), print.
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
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Micro-batch per rank.")] = 8,
    seq_len: Annotated[int | None, typer.Option("--seq-len", min=2, help="Sequence length for language models [default: the model's].")] = None,
    steps: Annotated[int, typer.Option("--steps", min=1, help="Timed steady-state steps.")] = 10,
    warmup_steps: Annotated[int, typer.Option("--warmup-steps", min=1, help="Untimed steps first (compilation, allocator warm-up).")] = 2,
    engine: Annotated[str, typer.Option("--engine", help="native (torch DDP/FSDP, deepspeed.initialize) or accelerate (HF Accelerate with configs from templates/; GPU only).")] = "native",
    precision: Annotated[str, typer.Option("--precision", help="auto (bf16-mixed on GPU, fp32 on CPU) | fp32 | bf16-mixed | bf16 (bf16 weights).")] = "auto",
    compile: Annotated[bool, typer.Option("--compile", help="torch.compile the model (per layer under FSDP).")] = False,
    memory_limit_gb: Annotated[float | None, typer.Option("--memory-limit-gb", min=0.001, help="Cap each GPU at this many GiB, e.g. 80 to act as an 80 GB card.")] = None,
    data: Annotated[str | None, typer.Option("--data", help="A Food-101 image folder or an Alpaca JSON/JSONL file [default: synthetic batches].")] = None,
    lr: Annotated[float, typer.Option("--lr", min=0.0, help="AdamW learning rate.")] = 1e-4,
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
    """Check every input and return the TaskSpec; UserError (one line, exit 2) for anything wrong."""
    from pydantic import ValidationError

    from jobs.spec import TaskSpec
    from jobs.train.models import MODELS, check_model_name
    from jobs.train.params import ENGINES, PRECISIONS, STRATEGIES, TrainParams

    _choice("--strategy", strategy, STRATEGIES)
    _choice("--engine", engine, ENGINES)
    _choice("--precision", precision, PRECISIONS)
    try:
        check_model_name(model)
    except ValueError as exc:
        raise UserError(f"--model: {exc}") from None
    if data is not None and not Path(data).exists():
        raise UserError(f"--data {data!r}: no such file or folder")
    if topology_file is not None and not Path(topology_file).is_file():
        raise UserError(f"--topology-file {topology_file!r}: no such file")
    if model in MODELS:
        kind = MODELS[model].kind
        if data is not None and Path(data).is_dir() == (kind == "causal-lm"):
            wanted = "a JSON/JSONL instruction file" if kind == "causal-lm" else "an image folder"
            raise UserError(f"--data {data!r}: {model} trains on {wanted}")
        if kind == "causal-lm" and seq_len is None:
            seq_len = MODELS[model].default_seq_len  # explicit, so even a failed run's record says it
    from orchestrator.bench import choose_placement

    place = choose_placement(gpus, nproc, backend, default_ranks=1)
    gpu_list, backend = place.gpus, place.backend
    if not gpu_list:
        if engine == "accelerate":
            raise UserError("--engine accelerate runs on GPUs only: on CPU accelerate's FSDP plugin does not shard and "
                            "its DeepSpeed plugin miscounts processes; use --engine native")
        if memory_limit_gb is not None:
            raise UserError("--memory-limit-gb caps GPU memory, and this run has no GPU")
    try:
        params = TrainParams(
            model=model if model in MODELS else str(Path(model).resolve()), strategy=strategy, engine=engine,
            micro_batch=batch_size, seq_len=seq_len, steps=steps, warmup_steps=warmup_steps, precision=precision,
            compile=compile, lr=lr, data=str(Path(data).resolve()) if data else None, memory_limit_gb=memory_limit_gb,
            inject_memory_error_at_step=inject_memory_error_at_step,
        )
        return TaskSpec(
            workload="train", params=params.model_dump(exclude_none=True), gpus=gpu_list,
            nproc_per_node=place.ranks, backend=backend, timeout_s=timeout,
            topology_file=str(Path(topology_file).resolve()) if topology_file else None, env=dict(RANK_ENV),
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UserError(f"{'.'.join(map(str, first['loc'])) or 'options'}: {first['msg']}") from None


def _choice(option: str, value: str, allowed) -> None:
    if value not in allowed:
        raise UserError(f"{option} {value!r}: use one of {', '.join(allowed)}")


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
        ("precision / engine", f"{extra.get('precision', '-')} / {extra.get('engine', '-')}"),
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
