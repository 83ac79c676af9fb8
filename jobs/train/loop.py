"""The training benchmark: one loop for every strategy, like nccl-tests has one loop for every op.

On every rank (wirewise.jobs.worker calls `run_rank`): build the model and its batches, wrap them by
strategy, run warmup steps (untimed; the last one also takes the inventory of what this rank
holds), then the timed steady-state steps with a device sync around each. Rank 0 gathers the
per-rank figures and returns one row of ResultRecord fields; the rest goes to `extra`.

A failure anywhere (CUDA out-of-memory, MemoryError, anything else) propagates to
wirewise.jobs.worker, which records it with the memory figures of the moment; `ctx.notes` says how
far the run got.
"""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any

import torch
import torch.distributed as dist

from wirewise import registry
from wirewise.case import AUTO_PRECISION
from wirewise.jobs.failures import memory_now
from wirewise.jobs.train.data import dataset_classes, make_batches
from wirewise.jobs.train.flops import datasheet_flops, measured_flops, mfu, train_flops_per_token
from wirewise.jobs.train.models import build_model
from wirewise.record import MFU_BASIS
from wirewise.units import gb_bytes
from wirewise.workloads.train import TrainParams
from wirewise.jobs.train.strategies import Setup, Strategy, make_strategy



def run_rank(raw_params: dict[str, Any], ctx) -> list[dict[str, Any]]:
    params = TrainParams.model_validate(raw_params)
    device = ctx.device
    torch.manual_seed(params.seed)
    precision = resolve_precision(params.precision, device)
    ctx.notes.update(phase="setup", precision=precision, strategy=params.strategy, engine=params.engine)
    limit = apply_memory_limit(params.memory_limit_gb, device)

    started = time.perf_counter()
    built = build_model(params.model, device, model_dtype(precision, params), dataset_classes(params.data))
    n_params = built.n_params  # before wrapping: ZeRO-3 empties the module's own tensors
    seq_len = params.seq_len or built.default_seq_len
    batches = make_batches(built, params, ctx.rank, ctx.world_size, device, seq_len)
    ctx.notes.update(n_params=n_params)
    strategy = make_strategy(Setup(built, params, ctx, precision, ctx.run_dir))
    setup_s = time.perf_counter() - started
    setup_peak = _reset_peak_memory(device)

    run = _train(strategy, batches, params, ctx)
    mine = {
        **run.state,
        **_training_peaks(device),
        "setup_peak_allocated_bytes": setup_peak,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
    }
    ranks = _gather(mine, ctx.world_size)
    setting = {"precision": precision, "n_params": n_params, "setup_s": setup_s, **limit}
    row = _row(params, built, seq_len, batches, strategy, run, ranks, ctx.world_size, setting)
    _release(strategy, device)
    return [row] if ctx.is_main else []


# ------------------------------------------------------------------------ set-up


def resolve_precision(asked: str, device) -> str:
    """What --precision auto runs as on this device: the case's rule (wirewise.case.AUTO_PRECISION)."""
    if asked == "auto":
        return AUTO_PRECISION["gpu" if device.type == "cuda" else "cpu"]
    return asked


def model_dtype(precision: str, params: TrainParams) -> torch.dtype:
    """bf16 weights where the strategy computes on them directly: pure bf16, and DeepSpeed's bf16
    mode (it keeps its own fp32 master partitions; building in bf16 spares a full fp32 copy)."""
    if precision == "bf16" or (precision == "bf16-mixed" and registry.STRATEGIES[params.strategy].on_deepspeed):
        return torch.bfloat16
    return torch.float32


def apply_memory_limit(limit_gb: float | None, device) -> dict[str, Any]:
    """Cap this process's share of its GPU, so a smaller card can be imitated on a larger one;
    `limit_gb` in GB of 10^9 bytes (wirewise.units), as --gpu-mem-gb and datasheets count."""
    if limit_gb is None:
        return {}
    if device.type != "cuda":
        raise ValueError("--memory-limit-gb caps GPU memory; this rank runs on the CPU")
    total = torch.cuda.get_device_properties(device).total_memory
    limit = gb_bytes(limit_gb)
    fraction = min(1.0, limit / total)
    torch.cuda.set_per_process_memory_fraction(fraction, device)
    return {"memory_limit_bytes": limit, "memory_fraction": fraction, "device_total_bytes": total}


# ------------------------------------------------------------------------ the loop


class Run:
    def __init__(self) -> None:
        self.losses: list[float] = []
        self.step_times: list[float] = []
        self.state: dict[str, int] = {}


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _train(strategy: Strategy, batches, params: TrainParams, ctx) -> Run:
    run, device = Run(), ctx.device
    losses = []
    _sync(device)  # each step ends with a sync, so every step starts on an idle device
    for step in range(params.total_steps):
        timed = step >= params.warmup_steps
        ctx.notes.update(phase="timed" if timed else "warmup", step=step)
        if params.inject_memory_error_at_step == step:
            raise MemoryError(f"injected at step {step} (test hook inject_memory_error_at_step)")
        start = time.perf_counter()
        if step == params.warmup_steps - 1:
            loss = _accounting_step(strategy, batches[step], run, ctx)
        else:
            loss = strategy.loss(batches[step])
            strategy.backward(loss)
            strategy.optimizer_step()
        losses.append(loss.detach())
        _sync(device)
        if timed:
            run.step_times.append(time.perf_counter() - start)
        ctx.progress(step + 1, params.total_steps, "warmup" if not timed else "timed steps")
    run.losses = [float(x) for x in losses]  # one host transfer at the end, not one per step
    return run


def _accounting_step(strategy: Strategy, batch, run: Run, ctx) -> torch.Tensor:
    """A normal step that also counts what this rank holds: gradients at their high point (when
    autograd has produced them all, before any end-of-backward reduction frees them, and again
    before the optimizer step), then parameters and optimizer state once the step has run."""
    grad_samples: list[int] = []
    loss = strategy.loss(batch)

    def when_autograd_ends(_grad):
        # Queued first, so it runs before the callbacks DDP/FSDP/DeepSpeed queue to finish reducing.
        torch.autograd.Variable._execution_engine.queue_callback(lambda: grad_samples.append(strategy.grad_bytes()))

    loss.register_hook(when_autograd_ends)
    strategy.backward(loss)
    grad_samples.append(strategy.grad_bytes())
    strategy.optimizer_step()
    param_bytes, optimizer_bytes = strategy.params_and_optimizer_bytes()
    run.state = {"param_bytes": param_bytes, "grad_bytes": max(grad_samples), "optimizer_bytes": optimizer_bytes}
    run.state["model_state_bytes"] = param_bytes + run.state["grad_bytes"] + optimizer_bytes
    ctx.notes.update(model_state_bytes=run.state["model_state_bytes"])
    return loss


# ------------------------------------------------------------------------ figures


def _reset_peak_memory(device) -> int | None:
    """Peaks are for training: FSDP and ZeRO-3 first build the whole model, then shard it."""
    if device.type != "cuda":
        return None
    setup_peak = memory_now(device)["cuda_peak_allocated_bytes"]
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    return setup_peak


def _training_peaks(device) -> dict[str, int | None]:
    """wirewise.jobs.failures.memory_now's figures under this record's names; the peak is the allocator's
    on a GPU and the process RSS on a CPU, as in the record of a failed run (wirewise.jobs.supervise)."""
    now = memory_now(device)
    rss = now["host_peak_rss_bytes"]
    return {
        "peak_bytes": now.get("cuda_peak_allocated_bytes", rss),
        "peak_reserved_bytes": now.get("cuda_peak_reserved_bytes"),
        "peak_rss_bytes": rss,
    }


def _gather(mine: dict[str, Any], world_size: int) -> list[dict[str, Any]]:
    ranks: list[Any] = [None] * world_size
    dist.all_gather_object(ranks, mine)
    return ranks


def _row(params, built, seq_len, batches, strategy, run, ranks, world_size, setting) -> dict:
    """One ResultRecord's training fields; per-rank lists in rank order."""
    step_time = statistics.fmean(run.step_times)
    global_batch = params.micro_batch * world_size
    tokens_per_step = global_batch * batches.tokens_per_sample
    config = built.config
    dense, with_attention = train_flops_per_token(
        setting["n_params"], config.num_hidden_layers, config.hidden_size, batches.tokens_per_sample
    )
    device_name = ranks[0]["device_name"]
    peak, peak_source = datasheet_flops(device_name)
    measured, measured_source = measured_flops()
    on_gpu = device_name is not None
    per_rank = lambda key: [r[key] for r in ranks]  # noqa: E731
    return {
        "model": params.model,
        "strategy": params.strategy,
        "world_size": world_size,
        "micro_batch": params.micro_batch,
        "seq_len": seq_len if built.kind == "causal-lm" else None,
        "step_time_s": step_time,
        "samples_per_s": global_batch / step_time,
        "tokens_per_s": tokens_per_step / step_time if built.kind == "causal-lm" else None,
        "peak_mem_bytes": per_rank("peak_bytes"),
        "model_state_bytes": per_rank("model_state_bytes"),
        "mfu": mfu(dense * tokens_per_step, step_time, peak, world_size) if on_gpu else None,
        "extra": {  # what the record's fields and params do not already say
            "strategy_impl": strategy.name,
            "task": built.kind,
            "tokens_per_sample": batches.tokens_per_sample,
            "losses": run.losses,
            "step_times_s": run.step_times,
            "step_time_median_s": statistics.median(run.step_times),
            "param_bytes": per_rank("param_bytes"),
            "grad_bytes": per_rank("grad_bytes"),
            "optimizer_bytes": per_rank("optimizer_bytes"),
            "peak_reserved_bytes": per_rank("peak_reserved_bytes"),
            "peak_rss_bytes": per_rank("peak_rss_bytes"),
            "setup_peak_allocated_bytes": per_rank("setup_peak_allocated_bytes"),
            "peak_mem_source": "torch.cuda.max_memory_allocated over the training steps" if on_gpu
            else "ru_maxrss of the rank process",
            "device_name": device_name,
            "mfu_basis": MFU_BASIS,
            "peak_tflops": peak / 1e12 if peak else None,
            "peak_source": peak_source,
            "mfu_formula": "6 * n_params * tokens / step_time / (peak * gpus)",
            "mfu_with_attention": mfu(with_attention * tokens_per_step, step_time, peak, world_size) if on_gpu else None,
            **({"mfu_measured_peak": mfu(dense * tokens_per_step, step_time, measured, world_size),
                "measured_peak_tflops": measured / 1e12, "measured_peak_source": measured_source} if on_gpu and measured else {}),
            "data": batches.source,
            "framework_config": strategy.config,
            **strategy.extra,
            **setting,
        },
    }


def _release(strategy: Strategy, device) -> None:
    """Drop model, optimizer and engine before wirewise.jobs.worker's barrier and destroy: DDP ranks can
    abort at exit while their reducer still lives (docs/facts.md)."""
    strategy.close()
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
