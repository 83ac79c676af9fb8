"""`place` compute time: choosing GPUs on an 8-GPU node (target 5 ms), on a 72-GPU NVLink domain
(50 ms), and 64 GPUs out of a 256-node cluster (200 ms). Prints the median of several runs and
the first (cold caches). Times cover the choice itself on wirings already read (the store or
a file gives them); the wiring model predicts, no database."""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout's tests/ package

from wirewise.orchestrator.placement import select_gpus  # noqa: E402
from wirewise.orchestrator.placement.nodes import Candidate, choose_nodes  # noqa: E402
from wirewise.orchestrator.placement.place import place  # noqa: E402
from wirewise.topology import Topology, read_topology  # noqa: E402
from tests.benchmarks.bench_topology import quads_pairs_numa  # noqa: E402
from tests.topology.common import NVL_QUADS, matrix  # noqa: E402

RUNS = 15


def nvl72() -> Topology:
    """GB200 NVL72: 72 GPUs, every pair NV18 through the NVLink switches; 2 GPUs per Grace CPU."""
    return Topology(links=matrix(72, lambda i, j: "NV18"), gpu_names=["NVIDIA GB200"] * 72, numa=[i // 2 for i in range(72)])


def hgx16() -> Topology:
    """16 H200 NVL: NV6 quads, quad pairs under PCIe switches, two NUMA nodes (bench_topology's
    wiring): the largest node searched exhaustively (C(16, 8) = 12,870 sets for 8 GPUs)."""
    return Topology(links=matrix(16, quads_pairs_numa), gpu_names=["NVIDIA H200 NVL"] * 16, numa=[i // 8 for i in range(16)])


def cluster(nodes: int = 256, per_leaf: int = 16, seed: int = 7) -> tuple[list[Candidate], dict[str, str]]:
    """256 nodes of 8x H200 NVL (two quads), a third of them with 1-5 GPUs busy; 16 nodes per
    leaf switch."""
    rng = random.Random(seed)
    topo = read_topology(NVL_QUADS)
    candidates, leaf_of = [], {}
    for n in range(nodes):
        busy = set(rng.sample(range(8), rng.randint(1, 5))) if rng.random() < 0.33 else set()
        name = f"gpu{n:03d}"
        candidates.append(Candidate(name, topo, [g for g in range(8) if g not in busy]))
        leaf_of[name] = f"leaf{n // per_leaf}"
    return candidates, leaf_of


def timed(call, runs: int = RUNS) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = call()
        times.append((time.perf_counter() - start) * 1000)
    return times, result


def main() -> int:
    quads, domain, sixteen = read_topology(NVL_QUADS), nvl72(), hgx16()
    busy_domain = [g for g in range(72) if g not in {3, 17, 40, 41, 66}]
    nodes, leaf_of = cluster()
    cases = [
        ("8-GPU node (H200 NVL quads), 4 GPUs, select_gpus", 5.0, lambda: select_gpus(quads, 4)),
        ("8-GPU node, 4 GPUs, 0 and 1 busy, full place()", 5.0, lambda: place(quads, 4, free=[2, 3, 4, 5, 6, 7])["gpus"]),
        ("72-GPU NVLink domain (GB200 NVL72), 8 GPUs, 5 busy", 50.0, lambda: select_gpus(domain, 8, free=busy_domain)),
        ("72-GPU NVLink domain, 36 GPUs, 5 busy", 50.0, lambda: select_gpus(domain, 36, free=busy_domain)),
        ("16-GPU node (exact search), 8 GPUs", None, lambda: select_gpus(sixteen, 8)),
        ("256-node cluster (8x H200 NVL, 16 per leaf), 64 GPUs", 200.0,
         lambda: [name for name, _ in choose_nodes(nodes, 64, leaf_of).nodes]),
    ]
    missed = []
    for name, target, call in cases:
        times, result = timed(call, RUNS if target else 3)
        median = statistics.median(times)
        verdict = "no target" if target is None else "ok" if median <= target else "MISSED"
        if verdict == "MISSED":
            missed.append(name)
        shown = result if len(str(result)) < 60 else f"{str(result)[:57]}..."
        print(f"{name}: {shown}  median {median:.2f} ms over {len(times)} runs "
              f"(first {times[0]:.2f}, max {max(times):.2f}); target {target or '-'} ms: {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
