"""Which GPUs a job gets: sets chosen on the node's wiring by predicted collective bandwidth.

    select_gpus(topo, k, policy="packed", free=None) -> sorted physical GPU indices
    Unplaceable                                       the reason a request cannot be placed

Policies: "packed" the best-connected set; "spread" deliberately across NVLink groups, as
evenly as possible (the seed article's cross-quad case); "all" every free GPU; a list of
indices: exactly those. The campaign planner, `wirewise place` and `wirewise run` all call
this; the ranking is in search.py, the bandwidth model in wiring.py.
"""

from __future__ import annotations

from wirewise.errors import UserError
from wirewise.orchestrator.placement.search import EXACT_LIMIT, Predict, best_exact, best_fast
from wirewise.orchestrator.placement.wiring import Wiring
from wirewise.topology import Topology
from wirewise.topology.classify import NVLINK_GROUPS

POLICIES = ("packed", "spread", "all")

__all__ = ["POLICIES", "Unplaceable", "select_gpus"]


class Unplaceable(UserError):
    """A placement request that cannot be met on this node; str(exc) is the reason, one line."""


def select_gpus(
    topo: Topology,
    k: int | None,
    policy: str | list[int] = "packed",
    free: list[int] | None = None,
    predict: Predict | None = None,
) -> list[int]:
    """Physical GPU indices (sorted) for k ranks on this node's wiring.

    `free`: the GPUs not in use (default: all). `predict`: a set's busbw in GB/s (default:
    the wiring model; `wirewise.orchestrator.placement.history.predictor` adds measured history)."""
    wiring = Wiring.of(topo)
    free_gpus = check_free(topo, free)
    if isinstance(policy, list):
        return explicit(policy, k, free_gpus, topo.gpus)
    if policy == "all":
        return all_free(k, free_gpus)
    if policy not in POLICIES:
        raise Unplaceable(f"unknown placement policy {policy!r} (use one of {', '.join(POLICIES)} or GPU indices)")
    k = check_count(k, free_gpus)
    predict = predict or wiring.model_busbw
    if policy == "spread":
        return spread(topo, wiring, k, free_gpus, predict)
    return packed(wiring, k, free_gpus, predict)


def packed(wiring: Wiring, k: int, free: tuple[int, ...], predict: Predict) -> list[int]:
    search = best_exact if len(free) <= EXACT_LIMIT else best_fast
    return list(search(wiring, free, k, predict))


def spread(topo: Topology, wiring: Wiring, k: int, free: tuple[int, ...], predict: Predict) -> list[int]:
    """k GPUs over as many NVLink groups as possible, counts differing by at most one where the
    free GPUs allow; inside each group, its best-connected members."""
    if topo.fabric != NVLINK_GROUPS:
        raise Unplaceable(f"spread needs NVLink groups to spread across; this node's fabric is {topo.fabric}")
    if k < 2:
        raise Unplaceable("spread needs at least 2 GPUs")
    groups = [tuple(g for g in group if g in free) for group in topo.groups or []]
    groups = [group for group in groups if group]
    if len(groups) < 2:
        raise Unplaceable("the free GPUs are all in one NVLink group: nothing to spread across")
    counts = _even_counts([len(group) for group in groups], k)
    chosen: list[int] = []
    for group, count in zip(groups, counts):
        if count:
            chosen += packed(wiring, count, group, predict)
    return sorted(chosen)


def _even_counts(capacity: list[int], k: int) -> list[int]:
    """k GPUs dealt one at a time to the group holding the fewest so far (then the one with
    the most room, then the first), never beyond a group's free GPUs."""
    counts = [0] * len(capacity)
    for _ in range(k):
        open_groups = [i for i, cap in enumerate(capacity) if counts[i] < cap]
        target = min(open_groups, key=lambda i: (counts[i], -(capacity[i] - counts[i]), i))
        counts[target] += 1
    return counts


def explicit(indices: list[int], k: int | None, free: tuple[int, ...], gpus: int) -> list[int]:
    if not indices:
        raise Unplaceable("an explicit placement needs at least one GPU index")
    if len(set(indices)) != len(indices):
        raise Unplaceable(f"GPU indices {indices} name a GPU twice")
    missing = [i for i in indices if not 0 <= i < gpus]
    if missing:
        raise Unplaceable(f"GPU {missing[0]} does not exist (this node has GPUs 0-{gpus - 1})")
    busy = [i for i in indices if i not in free]
    if busy:
        raise Unplaceable(f"GPU {busy[0]} is not free (free: {_list(free)})")
    if k and k != len(indices):
        raise Unplaceable(f"{k} GPUs asked for but {len(indices)} indices given ({_list(indices)})")
    return sorted(indices)


def all_free(k: int | None, free: tuple[int, ...]) -> list[int]:
    if k and k != len(free):
        raise Unplaceable(f"policy 'all' gives every free GPU ({len(free)}), not {k}")
    if not free:
        raise Unplaceable("no GPU is free on this node")
    return list(free)


def check_free(topo: Topology, free: list[int] | None) -> tuple[int, ...]:
    if free is None:
        return tuple(range(topo.gpus))
    unknown = [i for i in free if not 0 <= i < topo.gpus]
    if unknown:
        raise Unplaceable(f"free GPU {unknown[0]} does not exist (this node has GPUs 0-{topo.gpus - 1})")
    return tuple(sorted(set(free)))


def check_count(k: int | None, free: tuple[int, ...]) -> int:
    if not k or k < 1:
        raise Unplaceable(f"the number of GPUs must be at least 1 (got {k})")
    if k > len(free):
        raise Unplaceable(f"{k} GPUs asked for but only {len(free)} free ({_list(free)})")
    return k


def _list(gpus) -> str:
    return ",".join(map(str, gpus)) or "none"
