"""Requests larger than one node: nodes first, then GPUs on each.

Nodes are taken from one wiring (one fingerprint), so every node of the job runs the same
intra-node rings; the same number of GPUs on each (data parallelism wants equal ranks per
node), as many per node as possible (fewer nodes, less traffic on the network); where Slurm's
network topology is known (leaf switches and their nodes, wirewise.orchestrator.slurm.nodes), under as
few leaf switches as possible, best fit first so whole switches stay free. A request that fits
one node goes to the node whose best set predicts fastest, then the one it fills most exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wirewise.orchestrator.placement import Unplaceable, select_gpus
from wirewise.orchestrator.placement.wiring import Wiring
from wirewise.topology import Topology


@dataclass
class NodeState:
    name: str
    topo: Topology
    free: list[int]


@dataclass
class NodeChoice:
    nodes: list[tuple[str, list[int]]]  # (node, its GPUs)
    per_node: int
    fingerprint: str
    predicted_busbw_gbs: float | None  # inside each node, by the wiring model
    switches: int | None  # leaf switches spanned, when the network topology is known
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "nodes": [{"node": name, "gpus": gpus, "cuda_visible_devices": ",".join(map(str, gpus))} for name, gpus in self.nodes],
            "per_node": self.per_node,
            "fingerprint": self.fingerprint,
            "predicted_busbw_gbs": self.predicted_busbw_gbs,
            "switches": self.switches,
            "reasons": self.reasons,
        }


def choose_nodes(nodes: list[NodeState], k: int, leaf_of: dict[str, str] | None = None) -> NodeChoice:
    """GPUs for k ranks over the nodes; Unplaceable with the reason when no wiring has room."""
    if k < 1:
        raise Unplaceable(f"the number of GPUs must be at least 1 (got {k})")
    picker = _SetCache()
    single = [node for node in nodes if len(node.free) >= k]
    if single:
        return _one_node(single, k, picker)
    best = None
    for fingerprint, members in _by_wiring(nodes).items():
        choice = _spread_over(members, k, fingerprint, picker, leaf_of)
        if choice and (best is None or _rank(choice) > _rank(best)):
            best = choice
    if best is None:
        total = sum(len(node.free) for node in nodes)
        raise Unplaceable(f"{k} GPUs cannot be placed with equal GPUs per node on one wiring ({total} free in all)")
    return best


def _rank(choice: NodeChoice) -> tuple:
    return (choice.per_node, choice.predicted_busbw_gbs or 0.0, -(choice.switches or 0))


def _one_node(nodes: list[NodeState], k: int, picker: _SetCache) -> NodeChoice:
    def key(node: NodeState):
        gpus, busbw = picker.best(node, k)
        return (-(busbw or 0.0), len(node.free), node.name)

    node = min(nodes, key=key)
    gpus, busbw = picker.best(node, k)
    return NodeChoice([(node.name, gpus)], k, node.topo.fingerprint, busbw, None,
                      [f"fits on one node: {node.name} ({len(node.free)} free)"])


def _spread_over(members: list[NodeState], k: int, fingerprint: str, picker: _SetCache,
                 leaf_of: dict[str, str] | None) -> NodeChoice | None:
    """The most GPUs per node that divides k and that enough nodes of this wiring have free."""
    for per_node in range(min(k, members[0].topo.gpus), 0, -1):
        if k % per_node:
            continue
        eligible = [node for node in members if len(node.free) >= per_node]
        count = k // per_node
        if len(eligible) < count:
            continue
        chosen, switches = _pick_nodes(eligible, count, per_node, leaf_of)
        placed = [(node.name, picker.best(node, per_node)[0]) for node in chosen]
        busbw = min((picker.best(node, per_node)[1] or 0.0) for node in chosen) if per_node > 1 else None
        reasons = [f"{count} node(s) of one wiring x {per_node} GPU(s)"]
        if switches is not None:
            reasons.append(f"under {switches} leaf switch(es)")
        return NodeChoice(placed, per_node, fingerprint, busbw, switches, reasons)
    return None


def _pick_nodes(eligible: list[NodeState], count: int, per_node: int,
                leaf_of: dict[str, str] | None) -> tuple[list[NodeState], int | None]:
    """`count` nodes, those the request fills most exactly first; under the fewest leaf switches
    when the network is known: the smallest switch that holds them all, else the largest first."""
    snug = sorted(eligible, key=lambda node: (len(node.free) - per_node, node.name))
    if not leaf_of:
        return snug[:count], None
    by_leaf: dict[str, list[NodeState]] = {}
    for node in snug:
        by_leaf.setdefault(leaf_of.get(node.name, "?"), []).append(node)
    leaves = sorted(by_leaf.values(), key=lambda group: (-len(group), group[0].name))
    taken: list[NodeState] = []
    used = 0
    while len(taken) < count:
        need = count - len(taken)
        fitting = [group for group in leaves if len(group) >= need]
        group = min(fitting, key=len) if fitting else leaves[0]
        leaves.remove(group)
        taken += group[:need]
        used += 1
    return taken, used


def _by_wiring(nodes: list[NodeState]) -> dict[str, list[NodeState]]:
    groups: dict[str, list[NodeState]] = {}
    for node in nodes:
        groups.setdefault(node.topo.fingerprint, []).append(node)
    return groups


class _SetCache:
    """select_gpus per (wiring as numbered, free GPUs, k): 256 nodes of one wiring are a handful
    of cases. Keyed by the matrix itself, not the fingerprint: renumbered nodes differ."""

    def __init__(self) -> None:
        self._found: dict[tuple, tuple[list[int], float | None]] = {}
        self._wirings: dict[tuple, Wiring] = {}

    def best(self, node: NodeState, k: int) -> tuple[list[int], float | None]:
        numbering = (tuple(map(tuple, node.topo.links)), tuple(node.topo.gpu_names), tuple(node.topo.numa))
        key = (numbering, tuple(node.free), k)
        if key not in self._found:
            if numbering not in self._wirings:
                self._wirings[numbering] = Wiring.of(node.topo)
            wiring = self._wirings[numbering]
            gpus = select_gpus(node.topo, k, "packed", node.free, predict=wiring.model_busbw)
            self._found[key] = (gpus, wiring.model_busbw(tuple(gpus)))
        return self._found[key]
