"""Where an eager torch.distributed call's time goes on one GPU: the host's cost of issuing it.

    python3 tests/gpu/profile_one_call.py [--bytes 8] [--calls 2000]

One NCCL rank on GPU 0 (a process group of one). For an in-place all_reduce and an
out-of-place all_gather, the wall time of issuing --calls calls back to back divided by
--calls, after a warm-up and with the device drained first, so the host's issue rate is what
is timed wherever it is slower than the GPU's work:
- eager (what `bench collectives` times without --cuda-graph);
- the same calls captured in a CUDA graph of 20 and replayed (what --cuda-graph times).
With one rank an in-place all_reduce has nothing to move, so NCCL enqueues no work and its
graph is empty (torch warns so); the out-of-place all_gather copies its input, so its graph
holds one copy per call. Last, the torch.profiler's table of the eager all_reduce: the
host-side operations one call runs (c10d, the NCCL enqueue, event records).
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist

GRAPH_CALLS = 20


def host_seconds_per_call(issue, calls: int) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        issue()
    issued = time.perf_counter() - start
    torch.cuda.synchronize()
    return issued / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bytes", type=int, default=8)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=device)
    buffer = torch.ones(max(1, args.bytes // 4), device=device)
    gathered = torch.empty_like(buffer)
    calls = {
        "all_reduce (in place)": lambda: dist.all_reduce(buffer),
        "all_gather (out of place)": lambda: dist.all_gather_into_tensor(gathered, buffer),
    }
    print(f"# {args.bytes} B, 1 rank, {torch.cuda.get_device_name()}, torch {torch.__version__}, NCCL {torch.cuda.nccl.version()}")
    for name, call in calls.items():
        for _ in range(50):
            call()
        eager_s = host_seconds_per_call(call, args.calls)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            for _ in range(GRAPH_CALLS):
                call()
        graph.replay()
        replay_s = host_seconds_per_call(graph.replay, args.calls // GRAPH_CALLS) / GRAPH_CALLS
        print(f"{name}: host time per call eager {eager_s * 1e6:.2f} us, from a CUDA graph of {GRAPH_CALLS} {replay_s * 1e6:.3f} us")
    eager = calls["all_reduce (in place)"]
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(100):
            eager()
        torch.cuda.synchronize()
    print("# torch.profiler, 100 eager all_reduce calls (CPU and CUDA time per operation)")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=14, max_name_column_width=44))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
