"""Fingerprint big GPU matrices that do not fall apart into NVLink groups or switch trees,
so the canonical search runs (issue 10 item 18: a 64-GPU matrix took 2.4 s, 128 took 25 s,
a 256-GPU hypercube did not finish in 150 s). Target: each under 1 s. Prints one run's
time per case (the search is deterministic; a second run shows the spread)."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout's tests/ package

from wirewise.topology.fingerprint import fingerprint  # noqa: E402
from wirewise.topology.parse import parse_topo_text  # noqa: E402
from tests.topology.common import fixture_text, matrix  # noqa: E402

TARGET_S = 1.0
CUBE_MESH = parse_topo_text(fixture_text("v100-dgx1-8gpu-hybrid-cube-mesh-ib-old-legend.txt")).links


def hypercube(n: int):
    return matrix(n, lambda i, j: "NV4" if bin(i ^ j).count("1") == 1 else "SYS")


def torus(side: int):
    """side x side 2D torus of NVLinks, PCIe elsewhere."""
    def label(i: int, j: int) -> str:
        (a, b), (c, d) = divmod(i, side), divmod(j, side)
        return "NV2" if (a == c and (b - d) % side in (1, side - 1)) or (b == d and (a - c) % side in (1, side - 1)) else "SYS"

    return matrix(side * side, label)


def random_labels(n: int, seed: int = 3):
    rng = random.Random(seed)
    upper = {(i, j): rng.choice(["NV1", "NV2", "PIX", "SYS"]) for i in range(n) for j in range(i + 1, n)}
    return matrix(n, lambda i, j: upper[min(i, j), max(i, j)])


CASES = {
    "64-GPU hypercube": hypercube(64),
    "128-GPU hypercube": hypercube(128),
    "256-GPU hypercube": hypercube(256),
    "256-GPU 16x16 torus": torus(16),
    "256-GPU random labels": random_labels(256),
    "256-GPU, 32 cube meshes under SYS": matrix(256, lambda i, j: CUBE_MESH[i % 8][j % 8] if i // 8 == j // 8 else "SYS"),
}


def main() -> int:
    missed = []
    for name, links in CASES.items():
        names = ["NVIDIA H100 80GB HBM3"] * len(links)
        times = []
        for _ in range(2):
            start = time.perf_counter()
            print_ = fingerprint(links, names)
            times.append(time.perf_counter() - start)
        verdict = "ok" if max(times) < TARGET_S else "MISSED"
        if verdict != "ok":
            missed.append(name)
        print(f"{name}: {print_[:12]}  {times[0]:.3f} s, again {times[1]:.3f} s; target {TARGET_S:.0f} s: {verdict}", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
