"""Choosing k GPUs out of a node's free ones: every set for nodes up to 16 GPUs, a descent
through the wiring's hierarchy beyond (72-GPU NVLink domains), checked against the exact
search wherever both run (tests/placement/test_properties.py).

Sets are ranked, best first, by:
1. predicted bus bandwidth (measured where the store has it, else the wiring model);
2. fewest NVLink groups, then the nearest PCIe path, then fewest NUMA nodes;
3. the bandwidth left among the free GPUs not taken, so the next job finds a connected set
   and nodes do not fragment (2,3 rather than 5,6 when 0, 1 and 4 of two quads are busy);
4. the lowest GPU numbers, so the same question always gets the same answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import combinations

from wirewise.orchestrator.placement.wiring import Wiring, components

EXACT_LIMIT = 16  # free GPUs up to which every set is scored

Gpus = tuple[int, ...]
Predict = Callable[[Gpus], float | None]  # a set's predicted busbw (GB/s)


def score(wiring: Wiring, gpus: Gpus, free: Gpus, predict: Predict) -> tuple:
    """The ranking key of a set (higher is better; ties go to the first set in index order)."""
    left = tuple(g for g in free if g not in gpus)
    return (
        predict(gpus) or 0.0,
        -wiring.groups_spanned(gpus),
        -wiring.worst_pcie(gpus),
        -wiring.numa_spanned(gpus),
        round(wiring.pair_gbs_sum(left), 3),
    )


def ranked(wiring: Wiring, free: Gpus, k: int, predict: Predict) -> list[Gpus]:
    """Candidate sets, best first: all of them up to EXACT_LIMIT free GPUs, else the
    hierarchy's candidates."""
    sets = combinations(free, k) if len(free) <= EXACT_LIMIT else hierarchy_candidates(wiring, free, k)
    scored = [(score(wiring, s, free, predict), s) for s in sets]
    # Stable sort on the key alone keeps index order among equals.
    scored.sort(key=lambda item: item[0], reverse=True)
    return [s for _, s in scored]


def best_exact(wiring: Wiring, free: Gpus, k: int, predict: Predict) -> Gpus:
    return _best(wiring, free, combinations(free, k), predict)


def best_fast(wiring: Wiring, free: Gpus, k: int, predict: Predict) -> Gpus:
    return _best(wiring, free, hierarchy_candidates(wiring, free, k), predict)


def _best(wiring: Wiring, free: Gpus, sets: Iterable[Gpus], predict: Predict) -> Gpus:
    best, best_key = None, None
    for s in sets:
        key = score(wiring, s, free, predict)
        if best_key is None or key > best_key:
            best, best_key = s, key
    assert best is not None, "callers check that k <= len(free)"
    return best


# -- the fast method ----------------------------------------------------
def hierarchy_candidates(wiring: Wiring, free: Gpus, k: int) -> list[Gpus]:
    """Two sets per unit of the wiring's hierarchy that can hold k GPUs, for `score` to rank.

    The hierarchy: the free GPUs joined by pairs at least as close as each distinct closeness
    (pair rate, then PCIe path; farthest first: the whole node; closest last: NVLink groups),
    then NUMA nodes. Inside a unit,
    `_pack` fills k from its sub-units, best fit first, so whole groups stay whole; the second
    set is what remains once the best-packed rest is set aside for the next job."""
    levels = _levels(wiring, free)
    found: dict[Gpus, None] = {}

    def visit(members: Gpus, depth: int) -> None:
        if len(members) < k:
            return
        found[_pack(members, depth, k, levels)] = None
        # Also the set that leaves the best-connected rest behind (what the next job gets),
        # and the one made of the fewest NVLink groups.
        rest = set(_pack(members, depth, len(members) - k, levels)) if len(members) > k else set()
        found[tuple(g for g in members if g not in rest)] = None
        found[_whole_groups_first(wiring, members, k)] = None
        if depth < len(levels):
            for part in levels[depth](members):
                visit(part, depth + 1)

    visit(tuple(free), 0)
    return list(found)


def _whole_groups_first(wiring: Wiring, members: Gpus, k: int) -> Gpus:
    """The unit's NVLink groups largest first until one holds what is still needed; from that
    one (the smallest that does), its first GPUs. Fewest groups for k GPUs."""
    groups: dict[int, list[int]] = {}
    for gpu in members:
        groups.setdefault(wiring.group[gpu], []).append(gpu)
    pool = sorted(groups.values(), key=lambda g: (-len(g), g))
    taken: list[int] = []
    while len(taken) < k:
        need = k - len(taken)
        fitting = [g for g in pool if len(g) >= need]
        if fitting:
            taken += min(fitting, key=lambda g: (len(g), g))[:need]
            break
        taken += pool.pop(0)
    return tuple(sorted(taken))


def _levels(wiring: Wiring, free: Gpus) -> list[Callable[[Gpus], list[Gpus]]]:
    keys = sorted({_closeness(wiring, a, b) for a, b in combinations(free, 2)})
    levels: list[Callable[[Gpus], list[Gpus]]] = [
        (lambda members, t=key: _joined_parts(wiring, members, t)) for key in keys
    ]
    levels.append(lambda members: _numa_parts(wiring, members))
    return levels


def _closeness(wiring: Wiring, a: int, b: int) -> tuple[float, int]:
    """How close two GPUs sit: their pair rate, then the nearer PCIe path (paths staged through
    host memory share one rate, PHB to SYS, but not one place in the hierarchy)."""
    rank = wiring.pcie_rank[a][b]
    return wiring.gbs[a][b], -(rank if rank is not None else -1)


def _split(members: Gpus, depth: int, levels) -> list[Gpus]:
    return levels[depth](members) if depth < len(levels) else [(g,) for g in members]


def _pack(members: Gpus, depth: int, k: int, levels) -> Gpus:
    """k GPUs of a unit: the smallest sub-unit that holds what is still needed, else the
    largest sub-unit whole, until k are taken."""
    if len(members) == k:
        return members
    if depth >= len(levels):
        return members[:k]
    parts = _split(members, depth, levels)
    if len(parts) == 1:
        return _pack(members, depth + 1, k, levels)
    taken: list[int] = []
    parts = sorted(parts, key=lambda p: (-len(p), p))
    while len(taken) < k:
        need = k - len(taken)
        fitting = [p for p in parts if len(p) >= need]
        if fitting:
            smallest = min(fitting, key=lambda p: (len(p), p))
            taken += _pack(smallest, depth + 1, need, levels)
            break
        taken += parts.pop(0)
    return tuple(sorted(taken))


def _joined_parts(wiring: Wiring, members: Gpus, key: tuple[float, int]) -> list[Gpus]:
    """Components of the members joined by pairs at least as close as `key`."""
    return components(members, lambda a, b: _closeness(wiring, a, b) >= key)


def _numa_parts(wiring: Wiring, members: Gpus) -> list[Gpus]:
    by_node: dict[int | None, list[int]] = {}
    for gpu in members:
        by_node.setdefault(wiring.numa[gpu], []).append(gpu)
    return [tuple(part) for part in by_node.values()]
