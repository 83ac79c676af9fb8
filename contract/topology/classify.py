"""Fabric class, NVLink groups and whether an NVSwitch is proven, from the pair matrix.

Classes (docs/contracts.md): `single` one GPU; `pcie` no NVLink; `nvlink-all-to-all` every pair
has the same NVLink count; `nvlink-groups` disjoint NVLink cliques with PCIe between them
(a GPU without NVLink is a group of its own); `nvlink-partial` anything else (DGX-1
hybrid cube mesh, a full mesh of unequal bonds).
"""

from __future__ import annotations

from dataclasses import dataclass

from wirewise.topology import hardware, labels

SINGLE = "single"
PCIE = "pcie"
NVLINK_GROUPS = "nvlink-groups"
NVLINK_ALL_TO_ALL = "nvlink-all-to-all"
NVLINK_PARTIAL = "nvlink-partial"
FABRICS = (SINGLE, PCIE, NVLINK_GROUPS, NVLINK_ALL_TO_ALL, NVLINK_PARTIAL)


@dataclass(frozen=True)
class Classification:
    fabric: str
    switched: bool | None
    groups: list[list[int]] | None


def classify(links: list[list[str]], gpu_names: list[str | None], switch_seen: bool | None = None) -> Classification:
    """`switch_seen`: what NVML said about NVSwitches on a live node (None: it did not say)."""
    counts = [[labels.nvlink_count(label) for label in row] for row in links]
    fabric, groups = _fabric_and_groups(counts)
    return Classification(fabric, _switched(fabric, counts, gpu_names, switch_seen), groups)


def _fabric_and_groups(counts: list[list[int]]) -> tuple[str, list[list[int]] | None]:
    n = len(counts)
    if n == 1:
        return SINGLE, [[0]]
    pair_counts = {counts[i][j] for i in range(n) for j in range(i + 1, n)}
    if pair_counts == {0}:
        return PCIE, [[i] for i in range(n)]
    if len(pair_counts) == 1:
        return NVLINK_ALL_TO_ALL, [list(range(n))]
    groups = [list(part) for part in components(range(n), lambda a, b: counts[a][b])]
    if len(groups) > 1 and all(_is_clique(c, counts) for c in groups):
        return NVLINK_GROUPS, groups
    return NVLINK_PARTIAL, None


def components(gpus, linked) -> list[tuple[int, ...]]:
    """The connected components of `gpus` under the pairs `linked(a, b)`, each sorted, ordered
    by their lowest member: NVLink groups here, and the parts of a GPU set that placement
    (wirewise.orchestrator.placement.wiring) asks about."""
    parts, seen = [], set()
    for start in gpus:
        if start in seen:
            continue
        seen.add(start)
        part, stack = [start], [start]
        while stack:
            a = stack.pop()
            for b in gpus:
                if b not in seen and linked(a, b):
                    seen.add(b)
                    part.append(b)
                    stack.append(b)
        parts.append(tuple(sorted(part)))
    return parts


def _is_clique(members: list[int], counts: list[list[int]]) -> bool:
    return all(counts[a][b] for a in members for b in members if a != b)


def _switched(fabric, counts, gpu_names, switch_seen) -> bool | None:
    if _switch_proven(counts, gpu_names):
        return True
    if switch_seen is not None:
        return switch_seen
    if fabric in (PCIE, NVLINK_GROUPS):
        return False
    return None


def _switch_proven(counts, gpu_names) -> bool:
    """A GPU bonded to its peers by more links than it has can only reach them through a switch
    (an H100 with NV18 to 7 peers would need 126 of its 18 links)."""
    return any(sum(row) > hardware.nvlink_budget(gpu_names[i]) for i, row in enumerate(counts))
