"""The bandwidth model of one node's wiring, and how a GPU set is ranked on it.

All figures are all-reduce bus bandwidth (nccl-tests' busbw, GB/s) at large messages, per
direction, without NVLink SHARP (NVLS): NCCL's in-switch reduction lifts an 8-GPU NVSwitch
all-reduce from a ring's ~370 to ~480 (nccl-tests issue 212), but shared machines often run
with NCCL_NVLS_ENABLE=0 (the 2xH200 measurements did), and measured history replaces the model
wherever it exists. docs/placement.md has the calibration table against the seed article.

Inside one NVLink group (the set's GPUs joined in a ring over NVLink alone) NCCL runs a ring per
link bundle, so each GPU's NVLink bandwidth to the other members adds up, to at most the links
the GPU has: min over members of min(links x rate, NVLink GB/s to members), x RING_EFFICIENCY.
An NV6 pair of an NVL quad 150 x 0.8 = 120 (the article measured 114), the quad 450 x 0.8 = 360
(322), any NVSwitch set 18 x 25 x 0.8 = 360 (330 at 2 GPUs; a ring's ~370 at 8).

Over several NVLink groups, a cut bound. An all-reduce of S bytes over g groups is at least an
all-reduce among g super-nodes: every group must send and receive 2(g-1)/g x S across its
border, which NCCL carries over the best PCIe path between groups at rate C (the slowest hop
of the best ring through the groups); two groups: S each way. Inside each group of k GPUs the
data is first reduce-scattered and finally all-gathered over its NVLink (2(k-1)/k x S at the
group's own busbw B). The crossing waits for the reduction of what it carries and the in-group
gather waits for the crossing, so the times add:
    t / S  =  2(g-1)/g / C  +  max over groups of 2(k-1)/k / B,    busbw = 2(n-1)/n x S / t
which NCCL approaches when the groups' NVLink is fast enough to aggregate for the cut; where it
is not (a slow bond), a plain ring through the set, as fast as its slowest hop, does better and
is taken. GPUs on PCIe alone are groups of one: t/S = 2(n-1)/n / C, busbw = C, that same ring.
Two H200 quads over PCIe Gen5 through the socket link: C = 64 x 0.55 x 0.8 = 28.2; 2 GPUs
28.2 (the article 28), 2+2 34.2 (35), 4+4 44.1 (39).

A PCIe path's share of the line rate (wirewise.topology.hardware.PCIE_LEVEL_EFFICIENCY): NCCL
uses peer-to-peer DMA only under PCIe switches (PIX, PXB: its default P2P level, PATH_PXB in
src/graph/paths.cc) and stages farther pairs through host memory, measured at 27.8 GB/s (2xH200
with NCCL_P2P_DISABLE=1) and 28 (the article, across quads) on Gen5 x16.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations

from wirewise.topology import Topology, hardware, labels
from wirewise.topology.classify import components

# Payload share of the line rate a ring all-reduce reaches: an NVLink's 25 GB/s carries ~20 with
# the 128-byte payloads of SM copies (NCCL's maintainer, nccl-tests issue 149; NCCL's own graph
# search counts 20.0 per link on A100 and 20.6 on H100, src/graph/topo.h).
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
    named: bool = True  # every GPU's model is known (else NVLink and PCIe rates are nominal)
    _busbw: dict = field(default_factory=dict, compare=False, repr=False)  # set -> model busbw

    @classmethod
    def of(cls, topo: Topology) -> Wiring:
        n = topo.gpus
        gbs = tuple(tuple(topo.bandwidth_gbs(i, j) or 0.0 for j in range(n)) for i in range(n))
        nvlink = tuple(tuple(i != j and topo.nvlinks(i, j) > 0 for j in range(n)) for i in range(n))
        return cls(
            gbs=gbs,
            nvlink=nvlink,
            group=_group_ids(nvlink),
            numa=tuple(topo.numa),
            pcie_rank=tuple(tuple(_pcie_rank(topo.pcie_level(i, j)) for j in range(n)) for i in range(n)),
            nvlink_cap=tuple(
                hardware.nvlink_budget(name) * hardware.nvlink_gbs_per_link(name) for name in topo.gpu_names
            ),
            named=topo.named,
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
        gpus = tuple(sorted(gpus))
        if gpus not in self._busbw:
            self._busbw[gpus] = round(self._busbw_of(gpus), 1)
        return self._busbw[gpus]

    def _busbw_of(self, gpus: tuple[int, ...]) -> float:
        parts = self.nvlink_parts(gpus)
        if len(parts) == 1:
            if _has_ring(gpus, lambda a, b: self.nvlink[a][b]):
                return RING_EFFICIENCY * min(
                    min(self.nvlink_cap[a], sum(self.gbs[a][b] for b in gpus if self.nvlink[a][b])) for a in gpus
                )
            return RING_EFFICIENCY * self.ring_bottleneck(gpus)  # NVLink-connected, but no NVLink ring
        grouped, cut = self._across_groups(gpus, parts)
        if grouped >= cut:  # a plain ring crosses between groups too, so it is never faster than the cut
            return grouped
        # A slow bond inside a group: a plain ring through the set, as fast as its slowest hop.
        return max(grouped, RING_EFFICIENCY * self.ring_bottleneck(gpus))

    def _across_groups(self, gpus: tuple[int, ...], parts: list[tuple[int, ...]]) -> tuple[float, float]:
        """(the cut bound plus the time inside the groups, the cut's rate C): the module docstring."""
        g, n = len(parts), len(gpus)
        part_of = {gpu: i for i, part in enumerate(parts) for gpu in part}
        best = [[0.0] * g for _ in range(g)]  # the best path between two groups
        for a in gpus:
            for b in gpus:
                i, j = part_of[a], part_of[b]
                if i != j and self.gbs[a][b] > best[i][j]:
                    best[i][j] = self.gbs[a][b]
        cut = RING_EFFICIENCY * _ring_bottleneck(tuple(range(g)), lambda i, j: best[i][j])
        inside = max((2 * (len(p) - 1) / len(p) / self.model_busbw(p) for p in parts if len(p) > 1), default=0.0)
        return 2 * (n - 1) / n / (2 * (g - 1) / g / cut + inside), cut

    def nvlink_parts(self, gpus: tuple[int, ...]) -> list[tuple[int, ...]]:
        """The set's GPUs grouped by NVLink among themselves (links to GPUs outside do not help)."""
        return components(gpus, lambda a, b: self.nvlink[a][b])

    def ring_bottleneck(self, gpus: tuple[int, ...]) -> float:
        """The slowest hop (GB/s) of the best ring through the set."""
        return _ring_bottleneck(gpus, lambda a, b: self.gbs[a][b])

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


def _group_ids(nvlink) -> tuple[int, ...]:
    """The NVLink component of each GPU, numbered by its lowest GPU."""
    group = [0] * len(nvlink)
    for part in components(tuple(range(len(nvlink))), lambda a, b: nvlink[a][b]):
        for gpu in part:
            group[gpu] = part[0]
    return tuple(group)


def _ring_bottleneck(members: tuple[int, ...], rate) -> float:
    """The slowest hop of the best ring through `members` at pair rates `rate(a, b)`: the highest
    rate t such that the pairs at t or faster still join every member in one ring. It lies
    between what every member has to half the set (Dirac: then a ring exists) and what every
    member has to two partners (a ring needs two)."""
    if len(members) == 2:
        return rate(*members)
    ranked = [sorted((rate(a, b) for b in members if b != a), reverse=True) for a in members]
    upper = min(rates[1] for rates in ranked)
    dirac = min(rates[(len(members) + 1) // 2 - 1] for rates in ranked)
    between = sorted({r for rates in ranked for r in rates if dirac < r <= upper}, reverse=True)
    for t in between:
        if _has_ring(members, lambda a, b, t=t: rate(a, b) >= t):
            return t
    return dirac


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
    if low < 2 or k > _EXACT_RING_LIMIT or len(components(gpus, joined)) > 1:
        return False
    return _hamiltonian_cycle(gpus, joined)


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
