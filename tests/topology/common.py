"""Fixture files and expectations shared by the topology tests."""

from __future__ import annotations

import json

from tests.conftest import FIXTURES

TOPO = FIXTURES / "topo"
EXPECTED: dict[str, dict] = json.loads((TOPO / "expected.json").read_text())
FIXTURE_NAMES = sorted(EXPECTED)
NVL_QUADS = TOPO / "synthetic-h200-nvl-8gpu-two-quads.txt"
# The same wirings saved with `nvidia-smi -L` lines before the matrix, as the GPU scripts save them.
NVL_QUADS_NAMED = TOPO / "synthetic-h200-nvl-8gpu-two-quads-named.txt"  # NVIDIA H200 NVL
NVSWITCH_NAMED = TOPO / "synthetic-h200-sxm-8gpu-nvswitch-named.txt"  # NVIDIA H200 (SXM)


def fixture_text(name: str) -> str:
    return (TOPO / name).read_text()


def matrix(n: int, label_of) -> list[list[str]]:
    """An n-GPU label matrix from label_of(i, j) for i != j."""
    return [["X" if i == j else label_of(i, j) for j in range(n)] for i in range(n)]


def as_text(links: list[list[str]], names: list[str] | None = None, affinity: str = "0-15") -> str:
    """Tab-separated `nvidia-smi topo -m` text for a matrix (with `nvidia-smi -L` lines for names)."""
    n = len(links)
    lines = [f"GPU {i}: {name} (UUID: GPU-{i:08d})" for i, name in enumerate(names or [])]
    lines.append("\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\tNUMA Affinity")
    for i, row in enumerate(links):
        lines.append(f"GPU{i}\t" + "\t".join(" X " if c == "X" else c for c in row) + f"\t{affinity}\t0")
    return "\n".join(lines) + "\n"
