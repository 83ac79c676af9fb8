"""Renumber the GPUs of an `nvidia-smi topo -m` text, keeping its exact layout.

GPU i becomes GPU perm[i]: its row is renamed and moved, and in every matrix row (GPU and
NIC rows) the GPU columns are permuted, separators untouched. Separate CPU-affinity blocks
and `nvidia-smi -L` lines are renamed too. The header stays as it is (GPU0..GPUn-1).
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_GPU_ROW = re.compile(r"^GPU(\d+)\b")
_SMI_LIST = re.compile(r"^GPU (\d+):")
_LABEL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")


def renumber_text(text: str, perm: list[int]) -> str:
    lines = text.split("\n")
    header_at = next(i for i, line in enumerate(lines) if _ANSI.sub("", line).strip().startswith("GPU0"))
    n = len(perm)
    out = lines[: header_at + 1]
    block: list[tuple[int, str]] = []  # GPU rows waiting to be written in their new order
    for line in lines[header_at + 1 :]:
        gpu = _GPU_ROW.match(line)
        if gpu and int(gpu.group(1)) < n:
            old = int(gpu.group(1))
            renamed = f"GPU{perm[old]}" + line[gpu.end() :]
            block.append((perm[old], _permute_cells(renamed, perm)))
            continue
        out.extend(row for _new, row in sorted(block))
        block = []
        listed = _SMI_LIST.match(line)
        if listed:
            line = f"GPU {perm[int(listed.group(1))]}:" + line[listed.end() :]
        elif line and not line[0].isspace() and _has_gpu_cells(line, n):
            line = _permute_cells(line, perm)  # a NIC row
        out.append(line)
    out.extend(row for _new, row in sorted(block))
    return "\n".join(out)


def _has_gpu_cells(line: str, n: int) -> bool:
    tokens = line.split()
    return len(tokens) > n and all(_LABEL.match(t) for t in tokens[1 : n + 1])


def _permute_cells(line: str, perm: list[int]) -> str:
    """Permute the first len(perm) link labels after the row name; other text stays put."""
    pieces = re.split(r"(\s+)", line)  # words at even positions, separators at odd ones
    cell_positions = [k for k in range(2, len(pieces), 2) if _LABEL.match(pieces[k])][: len(perm)]
    if len(cell_positions) < len(perm):
        return line
    cells = [pieces[k] for k in cell_positions]
    moved = [""] * len(perm)
    for old, cell in enumerate(cells):
        moved[perm[old]] = cell
    for k, cell in zip(cell_positions, moved):
        pieces[k] = cell
    return "".join(pieces)
