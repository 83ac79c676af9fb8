"""The one timing and checking loop, after nccl-tests' src/common.cu, through torch.distributed.

For every op, every size of the sweep and every form torch has for the op (out of place,
in place: ops/base.py), on every rank:
1. buffers filled with known values (wirewise.jobs.collectives.data), then `warmup` untimed calls;
2. `iters` calls back to back, timed after a barrier so the ranks start together: CUDA
   events around the batch on a GPU (the device's clock, no host jitter), time.perf_counter
   on CPU (gloo calls return when done). With `cuda_graph` (nccl-tests' -G), the `iters`
   calls are captured once into a CUDA graph, replayed once untimed (the first launch
   uploads the graph) and then timed as one replay: the host's cost of launching each call
   leaves the measurement, as it leaves nccl-tests' with -G;
3. the size's time is the mean over ranks of each rank's time per call, as nccl-tests
   reports it by default (-a 1); the slowest rank's time is kept in `extra` too;
4. with `check`: fresh buffers, one call (through a graph too in graph mode, so the check
   covers the path that was timed), and the elements that differ from the expected result,
   summed over ranks: nccl-tests' #wrong.
Rank 0 returns one row per (op, size, form): ResultRecord fields, anything else under `extra`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import torch.distributed as dist

from wirewise.jobs.collectives.data import Values
from wirewise.jobs.collectives.ops import OPS, Collective, Geometry
from wirewise.units import bytes_text
from wirewise.workloads.collective import CollectiveParams, sweep_average
from wirewise.jobs.rank import RankContext


def run_rank(params: dict[str, Any], ctx: RankContext) -> list[dict[str, Any]]:
    p = CollectiveParams.model_validate(params)
    values = Values(ctx.world_size, p.dtype, _device(ctx))
    plan = _plan(p, ctx.world_size)
    if p.cuda_graph and values.device.type != "cuda":
        raise ValueError("cuda_graph needs NCCL ranks on GPUs (CUDA graphs capture GPU work)")
    if p.oom_rank == ctx.rank:
        torch.empty(2**50, dtype=torch.uint8, device=values.device)  # the documented test hook (CollectiveParams.oom_rank)
    rows = []
    for step, (op, geometry, in_place) in enumerate(plan):
        form = "in place" if in_place else "out of place"
        label = f"{op.name} {bytes_text(geometry.nbytes)} {form}"
        ctx.progress(step, len(plan), label)
        rows.append(_measure(op, geometry, in_place, p, ctx, values))
        ctx.progress(step + 1, len(plan), label, row=rows[-1])  # printed as measured, as nccl-tests prints its rows
    ctx.progress(len(plan), len(plan), "done")
    if not ctx.is_main:
        return []
    add_sweep_averages(rows)
    return rows


def _device(ctx: RankContext) -> torch.device:
    """NCCL ranks use their GPU; gloo ranks run on CPU even where GPUs are pinned to them."""
    return ctx.device if ctx.backend == "nccl" else torch.device("cpu")


def _plan(p: CollectiveParams, world_size: int) -> list[tuple[Collective, Geometry, bool]]:
    """(op, geometry, in_place) for every step, both forms of a size one after the other as
    nccl-tests runs them; steps whose buffer rounds down to nothing are left out."""
    plan = []
    for name in p.ops:
        op = OPS[name]
        for size in p.sizes:
            geometry = op.geometry(size, world_size, p.element_bytes)
            if geometry.count > 0:
                plan.extend((op, geometry, in_place) for in_place in op.forms)
    if not plan:
        raise ValueError(
            f"every size from -b {p.min_bytes} to -e {p.max_bytes} rounds down to an empty buffer "
            f"for {world_size} ranks of {p.dtype} (chunked ops need {world_size * 16} bytes); raise -e"
        )
    return plan


def _measure(op: Collective, geometry: Geometry, in_place: bool, p: CollectiveParams, ctx: RankContext, values: Values) -> dict:
    send, recv = op.buffers(geometry.count, ctx.rank, values, in_place)
    call = partial(op, send, recv)  # one call on these buffers, issued eagerly or captured
    # A graph capture is never an op's first call: NCCL sets up its connections on first use.
    for _ in range(max(p.warmup, 1 if p.cuda_graph else 0)):
        call()
    seconds = _seconds_per_call(call, p.iters, values.device, p.cuda_graph)
    del send, recv, call  # the check below allocates its own
    mean_s, slowest_s = _mean_and_max_over_ranks(seconds, values.device, ctx.world_size)
    wrong = _count_wrong(op, geometry, in_place, p, ctx, values) if p.check else None
    algbw = geometry.nbytes / mean_s / 1e9
    return {
        "op": op.name,
        "bytes": geometry.nbytes,
        "count": geometry.count,
        "dtype": p.dtype,
        "in_place": in_place,
        "time_us": mean_s * 1e6,
        "algbw_gbs": algbw,
        "busbw_gbs": algbw * op.busbw_factor(ctx.world_size),
        "wrong": wrong,
        "extra": {
            "redop": op.redop,
            "root": op.root,
            "time_us_slowest_rank": slowest_s * 1e6,
            "device": values.device.type,
            "timer": _timer_name(values.device, p.cuda_graph),
        },
    }


def _timer_name(device: torch.device, cuda_graph: bool) -> str:
    if device.type != "cuda":
        return "perf-counter"
    return "cuda-graph" if cuda_graph else "cuda-events"


def _seconds_per_call(call: Callable[[], None], iters: int, device: torch.device, cuda_graph: bool) -> float:
    if device.type != "cuda":
        dist.barrier()
        started = time.perf_counter()
        for _ in range(iters):
            call()
        return (time.perf_counter() - started) / iters
    if not cuda_graph:
        return _device_seconds(lambda: [call() for _ in range(iters)], device) / iters
    graph = _captured(call, iters)
    graph.replay()  # untimed: the first launch uploads the graph to the device
    seconds = _device_seconds(graph.replay, device) / iters
    graph.reset()
    return seconds


def _captured(call: Callable[[], None], times: int) -> torch.cuda.CUDAGraph:
    """`times` calls captured into one CUDA graph. thread_local: the process group's watchdog
    thread keeps querying its events during the capture, which global mode would refuse."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, capture_error_mode="thread_local"):
        for _ in range(times):
            call()
    return graph


def _device_seconds(run: Callable[[], Any], device: torch.device) -> float:
    """Seconds on the device's clock for what `run` enqueues, started together on all ranks."""
    torch.cuda.synchronize(device)
    dist.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def _mean_and_max_over_ranks(seconds: float, device: torch.device, world_size: int) -> tuple[float, float]:
    mine = torch.tensor([seconds], dtype=torch.float64, device=device)
    every = torch.empty(world_size, dtype=torch.float64, device=device)
    dist.all_gather_into_tensor(every, mine)
    times = every.tolist()
    return sum(times) / len(times), max(times)


def _count_wrong(op: Collective, geometry: Geometry, in_place: bool, p: CollectiveParams, ctx: RankContext, values: Values) -> int:
    send, recv = op.buffers(geometry.count, ctx.rank, values, in_place)
    if p.corrupt_rank == ctx.rank:
        send[0] += 1  # the documented test hook (CollectiveParams.corrupt_rank)
    if p.cuda_graph:
        _captured(partial(op, send, recv), 1).replay()
        torch.cuda.synchronize(values.device)
    else:
        op(send, recv)
    wrong = values.count_wrong(recv, op.expected(geometry.count, ctx.rank, values))
    total = torch.tensor([wrong], dtype=torch.int64, device=values.device)
    dist.all_reduce(total)
    return int(total.item())


def add_sweep_averages(rows: list[dict]) -> None:
    """nccl-tests' closing 'Avg bus bandwidth', per op, on each of that op's rows."""
    by_op: dict[str, list[dict]] = {}
    for row in rows:
        by_op.setdefault(row["op"], []).append(row)
    for op_rows in by_op.values():
        average = sweep_average([r["busbw_gbs"] for r in op_rows])
        for row in op_rows:
            row["extra"]["avg_busbw_gbs"] = average
