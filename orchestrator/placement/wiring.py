"""The bandwidth model of one node's wiring, and how a GPU set is ranked on it.

A collective over a set of GPUs runs as rings (NCCL's ring all-reduce; its trees on one node
follow the same links). A ring is as fast as its slowest hop, so a set that must cross PCIe
or the CPU interconnect gets that speed. A set whose GPUs can be joined in a ring over NVLink
alone is limited instead by what each GPU can push into the set: NCCL runs one ring per
link bundle, so a GPU's NVLink bandwidth to the other members adds up (an NVL quad: 3 peers x
NV6 at 25 GB/s per link), up to the links the GPU has (an NVSwitch node: 18 links whatever
the set size). Both are scaled by the ring's payload efficiency (~80% of line rate).

Checked against the seed article's H200 measurements (docs/facts.md): NV6 pair 150 GB/s x 0.8
= 120 (measured 114); a quad 450 x 0.8 = 360 (322); across quads, PCIe Gen5 through the
socket link 32 x 0.8 = 26 (28 to 39); NVSwitch 18 x 25 x 0.8 = 360 (330 to 467 with NVLS).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

from wirewise.topology import Topology, hardware, labels

# Payload share of the line rate a ring all-reduce reaches (docs/facts.md: ~80% on NVLink).
RING_EFFICIENCY = 0.8
# Above this set size the Hamiltonian-ring check by subset DP (2^k k^2) costs too much.
_EXACT_RING_LIMIT = 16


@dataclass(frozen=True)
class Wiring:
    """A node's wiring as plain matrices, built once per placement so each set is cheap to score."""

    gbs: tuple[tuple[float, ...], ...]  # per-direction GB/s between two GPUs (0 on the diagonal)
    nvlink: tuple[tuple[bool, ...], ...]
    group: tuple[int, ...]  # NVLink component (connected by NVLink) of each GPU
    numa: tuple[int | None, ...]
    pcie_rank: tuple[tuple[int | None, ...], ...]  # 0 PIX ... 4 SYS; None where unknown
    nvlink_cap: tuple[float, ...]  # the most NVLink GB/s one GPU can send (its links x rate)

    @classmethod
    def of(cls, topo: Topology) -> Wiring:
        n = topo.gpus
        gbs = tuple(tuple(topo.bandwidth_gbs(i, j) or 0.0 for j in range(n)) for i in range(n))
        nvlink = tuple(tuple(i != j and topo.nvlinks(i, j) > 0 for j in range(n)) for i in range(n))
        return cls(
            gbs=gbs,
            nvlink=nvlink,
            group=_components(nvlink),
            numa=tuple(topo.numa),
            pcie_rank=tuple(tuple(_pcie_rank(topo.pcie_level(i, j)) for j in range(n)) for i in range(n)),
            nvlink_cap=tuple(
                hardware.nvlink_budget(name) * hardware.nvlink_gbs_per_link(name) for name in topo.gpu_names
            ),
        )

    @property
    def size(self) -> int:
        return len(self.gbs)

    @cached_property
    def groups(self) -> list[list[int]]:
        members: dict[int, list[int]] = {}
        for gpu, group in enumerate(self.group):
            members.setdefault(group, []).append(gpu)
        return list(members.values())

    # -- the model ------------------------------------------------------
    def model_busbw(self, gpus: tuple[int, ...]) -> float | None:
        """Predicted all-reduce bus bandwidth (GB/s) of the set; None for one GPU (no traffic)."""
        if len(gpus) < 2:
            return None
        if self.groups_spanned(gpus) == 1 and _has_ring(gpus, lambda a, b: self.nvlink[a][b]):
            per_gpu = min(
                min(self.nvlink_cap[a], sum(self.gbs[a][b] for b in gpus if self.nvlink[a][b])) for a in gpus
            )
            return round(RING_EFFICIENCY * per_gpu, 1)
        return round(RING_EFFICIENCY * self.ring_bottleneck(gpus), 1)

    def ring_bottleneck(self, gpus: tuple[int, ...]) -> float:
        """The slowest hop of the best ring through the set: the highest pair rate t such that
        the pairs at t or faster still join every member in one ring. It lies between what
        every member has to half the set (Dirac: then a ring exists) and what every member has
        to two partners (a ring needs two)."""
        if len(gpus) == 2:
            return self.gbs[gpus[0]][gpus[1]]
        ranked = [sorted((self.gbs[a][b] for b in gpus if b != a), reverse=True) for a in gpus]
        upper = min(rates[1] for rates in ranked)
        dirac = min(rates[(len(gpus) + 1) // 2 - 1] for rates in ranked)
        between = sorted({rate for rates in ranked for rate in rates if dirac < rate <= upper}, reverse=True)
        for rate in between:
            if _has_ring(gpus, lambda a, b, t=rate: self.gbs[a][b] >= t):
                return rate
        return dirac

    # -- locality, after bandwidth ---------------------------------------
    def groups_spanned(self, gpus: tuple[int, ...]) -> int:
        return len({self.group[g] for g in gpus})

    def worst_pcie(self, gpus: tuple[int, ...]) -> int:
        """The farthest PCIe path among the pairs whose path is known (-1: none known)."""
        known = [self.pcie_rank[a][b] for a, b in combinations(gpus, 2) if self.pcie_rank[a][b] is not None]
        return max(known, default=-1)

    def numa_spanned(self, gpus: tuple[int, ...]) -> int:
        return len({self.numa[g] for g in gpus})

    def pair_gbs_sum(self, gpus) -> float:
        """How well connected a set is as a whole: what the next job on it can still get."""
        return sum(self.gbs[a][b] for a, b in combinations(gpus, 2))


def _pcie_rank(level: str | None) -> int | None:
    return labels.PCIE_LEVELS.index(level) if level else None


def _components(nvlink) -> tuple[int, ...]:
    """The NVLink component of each GPU, numbered by its lowest GPU."""
    n = len(nvlink)
    group = [-1] * n
    for start in range(n):
        if group[start] >= 0:
            continue
        group[start], stack = start, [start]
        while stack:
            gpu = stack.pop()
            for peer in range(n):
                if nvlink[gpu][peer] and group[peer] < 0:
                    group[peer] = start
                    stack.append(peer)
    return tuple(group)


def _has_ring(gpus: tuple[int, ...], joined) -> bool:
    """Whether the pairs `joined(a, b)` hold a cycle through every GPU of the set (two GPUs:
    the pair itself). Cheap checks first: every pair joined, a member with fewer than two
    partners, Dirac's condition, a split set; then a subset DP, exact up to 16 members."""
    k = len(gpus)
    if k == 2:
        return joined(*gpus)
    degree = {a: sum(1 for b in gpus if b != a and joined(a, b)) for a in gpus}
    low = min(degree.values())
    if low == k - 1 or low >= k / 2:
        return True
    if low < 2 or k > _EXACT_RING_LIMIT or not _connected(gpus, joined):
        return False
    return _hamiltonian_cycle(gpus, joined)


def _connected(gpus: tuple[int, ...], joined) -> bool:
    seen, stack = {gpus[0]}, [gpus[0]]
    while stack:
        a = stack.pop()
        for b in gpus:
            if b not in seen and joined(a, b):
                seen.add(b)
                stack.append(b)
    return len(seen) == len(gpus)


def _hamiltonian_cycle(gpus: tuple[int, ...], joined) -> bool:
    """Held-Karp reachability: paths from member 0 over each subset, as bitmasks of end points."""
    k = len(gpus)
    adjacent = [sum(1 << j for j in range(k) if j != i and joined(gpus[i], gpus[j])) for i in range(k)]
    ends = {1: 1}  # subset containing member 0 -> members a path from 0 through it can end on
    for mask in range(1, 1 << k):
        if not mask & 1 or mask not in ends:
            continue
        reach = ends[mask]
        for last in range(k):
            if reach >> last & 1:
                for nxt in range(1, k):
                    if adjacent[last] >> nxt & 1 and not mask >> nxt & 1:
                        wider = mask | 1 << nxt
                        ends[wider] = ends.get(wider, 0) | 1 << nxt
    full = (1 << k) - 1
    return any(ends.get(full, 0) >> last & 1 and adjacent[last] & 1 for last in range(1, k))
