"""Classify and fingerprint big GPU matrices: a 72-GPU all-to-all (GB200 NVL72) and 16-GPU
mixed machines. Target: each under 50 ms (the job supervisor stamps every task with a
fingerprint). Prints the median of several runs, and the first run (cold caches)."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout's tests/ package

from wirewise.topology.classify import classify  # noqa: E402
from wirewise.topology.fingerprint import fingerprint  # noqa: E402
from wirewise.topology.parse import parse_topo_text  # noqa: E402
from tests.topology.common import fixture_text, matrix  # noqa: E402

RUNS = 15
TARGET_MS = 50.0

# DGX-1's hybrid cube mesh: no part of it splits off, so it goes through the search.
CUBE_MESH = parse_topo_text(fixture_text("v100-dgx1-8gpu-hybrid-cube-mesh-ib-old-legend.txt")).links


def quads_pairs_numa(i: int, j: int) -> str:
    """16 H200 NVL: NV6 quads, quads paired under PCIe switches (PXB), two per NUMA node."""
    if i // 4 == j // 4:
        return "NV6"
    if i // 8 == j // 8:
        return "PXB" if i % 4 // 2 == j % 4 // 2 else "NODE"
    return "SYS"


CASES = {
    "72-GPU all-to-all (NV18, GB200)": (matrix(72, lambda i, j: "NV18"), ["NVIDIA GB200"] * 72),
    "16-GPU mixed (NV6 quads, PXB/NODE/SYS)": (matrix(16, quads_pairs_numa), ["NVIDIA H200 NVL"] * 16),
    "16-GPU mixed (two cube meshes, searched)": (
        matrix(16, lambda i, j: CUBE_MESH[i % 8][j % 8] if i // 8 == j // 8 else "SYS"),
        ["Tesla V100-SXM2-32GB"] * 16,
    ),
}


def classify_and_fingerprint(links, names) -> tuple[str, str]:
    return classify(links, names).fabric, fingerprint(links, names)


def main() -> int:
    missed = []
    for name, (links, names) in CASES.items():
        times = []
        for _ in range(RUNS):
            start = time.perf_counter()
            fabric, print_ = classify_and_fingerprint(links, names)
            times.append((time.perf_counter() - start) * 1000)
        median = statistics.median(times)
        verdict = "ok" if median <= TARGET_MS else "MISSED"
        if verdict != "ok":
            missed.append(name)
        print(
            f"{name}: {fabric}, {print_[:12]}  median {median:.1f} ms over {RUNS} runs "
            f"(first {times[0]:.1f}, max {max(times):.1f}); target {TARGET_MS:.0f} ms: {verdict}"
        )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
