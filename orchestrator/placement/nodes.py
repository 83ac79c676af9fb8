"""Requests larger than one node: nodes first, then GPUs on each.

Nodes are taken from one wiring (one fingerprint), so every node of the job runs the same
intra-node rings; the same number of GPUs on each (data parallelism wants equal ranks per
node), as many per node as possible (fewer nodes, less traffic on the network). Which nodes:
what was measured between them first (Measured: pair tests, read from the store by
wirewise.orchestrator.fleet.standing): nodes to avoid are left out, nodes measured healthy
come first, best measured busbw first, and no two nodes joined by a link judged slow; where
nothing was measured among the candidates, Slurm's network topology (leaf switches and their
nodes, wirewise.orchestrator.slurm.nodes): under as few leaf switches as possible, best fit first so
whole switches stay free. Before either, the NVLink domain (rack-scale NVLink, GB200/GB300
NVL72: the stored fabric cluster UUID and clique of each node): when one domain has enough
eligible nodes, the job's nodes all come from it (over NVLink, not the network), the domain with
the fewest spare nodes first so larger ones stay whole; when none has, the choice says so, and
the job spans domains over the network. A request that fits one node goes to the node whose
best set predicts fastest, then the one it fills most exactly.

Between nodes, NVLink inside a domain and the network are different figures (CoreWeave's
nccl-tests README: 745 GB/s all_reduce busbw inside one NVL72 rack, 298 across twenty), so
what pair tests measured is read by fabric scope (wirewise.case.scope_of: the nodes' domains):
nodes are ranked by their best pair of the choice's own scope, and the choice predicts the
busbw between its nodes from pairs of that scope only: the slowest measured pair among the
chosen nodes, else the median of that scope's measured pairs; none where that scope has no
measured pair (an NVLink-domain figure never stands for a job over the network, nor the
reverse).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

from wirewise.case import scope_of
from wirewise.orchestrator.placement import Unplaceable, select_gpus
from wirewise.orchestrator.placement.wiring import Wiring
from wirewise.topology import Topology
from wirewise.topology.fabric import domain_json


@dataclass
class Candidate:
    """A node placement may take: its wiring and the GPUs free on it now."""

    name: str
    topo: Topology
    free: list[int]
    domain: tuple[str, int] | None = None  # its multi-node NVLink domain (cluster UUID, clique); None: in none


@dataclass
class Measured:
    """What was measured between nodes, as placement weighs it."""

    avoid: dict[str, str] = field(default_factory=dict)  # node -> why no job should go there
    busbw: dict[frozenset[str], float] = field(default_factory=dict)  # a pair's latest measured busbw
    slow_links: set[frozenset[str]] = field(default_factory=set)  # pairs of healthy nodes whose link is slow
    healthy: set[str] = field(default_factory=set)  # nodes their latest pair test found healthy

    def best_by_node(self, pairs: set[frozenset[str]] | None = None) -> dict[str, float]:
        """Each measured node's best measured pair (of `pairs` only, where given), in one pass
        over the pairs: asked node by node, it read every pair for every node (nodes x pairs:
        55 s of 131 in choosing 512 of 12,500 nodes, docs/scale.md)."""
        best: dict[str, float] = {}
        for pair, bw in self.busbw.items():
            if pairs is None or pair in pairs:
                for node in pair:
                    best[node] = max(best.get(node, bw), bw)
        return best

    def known(self) -> set[str]:
        """The nodes a pair test found healthy or measured."""
        return self.healthy | {node for pair in self.busbw for node in pair}

    def slow_partners(self) -> dict[str, set[str]]:
        """Each node -> the nodes it is joined to by a link judged slow."""
        partners: dict[str, set[str]] = {}
        for link in self.slow_links:
            for node in link:
                partners.setdefault(node, set()).update(link - {node})
        return partners


@dataclass
class NodeChoice:
    nodes: list[tuple[str, list[int]]]  # (node, its GPUs)
    per_node: int
    fingerprint: str
    predicted_busbw_gbs: float | None  # inside each node, by the wiring model
    switches: int | None  # leaf switches spanned, when the network topology is known
    reasons: list[str] = field(default_factory=list)
    domain: tuple[str, int] | None = None  # the NVLink domain every chosen node sits in; None: not one
    scope: str | None = None  # the fabric between the nodes (wirewise.case.scope_of)
    between_gbs: float | None = None  # busbw measured between nodes of that scope (pair tests)
    between_basis: str | None = None  # what between_gbs rests on

    def as_dict(self) -> dict:
        return {
            "nodes": [{"node": name, "gpus": gpus, "cuda_visible_devices": ",".join(map(str, gpus))} for name, gpus in self.nodes],
            "per_node": self.per_node,
            "fingerprint": self.fingerprint,
            "predicted_busbw_gbs": self.predicted_busbw_gbs,
            "switches": self.switches,
            "nvlink_domain": domain_json(self.domain),
            "scope": self.scope, "between_nodes_busbw_gbs": self.between_gbs, "between_nodes_basis": self.between_basis,
            "reasons": self.reasons,
        }


def choose_nodes(nodes: list[Candidate], k: int, leaf_of: dict[str, str] | None = None,
                 measured: Measured | None = None, per_node: int | None = None) -> NodeChoice:
    """GPUs for k ranks over the nodes; Unplaceable with the reason when no wiring has room.
    `per_node`: exactly that many GPUs on each node (a job that asked its node count), else
    as many as fit."""
    if k < 1:
        raise Unplaceable(f"the number of GPUs must be at least 1 (got {k})")
    measured = measured or Measured()
    avoided = [f"left out {node.name}: {measured.avoid[node.name]}" for node in nodes if node.name in measured.avoid]
    nodes = [node for node in nodes if node.name not in measured.avoid]
    if not nodes:
        raise Unplaceable(f"every node is to be avoided ({'; '.join(avoided[:3])})")
    picker = _SetCache()
    single = [node for node in nodes if len(node.free) >= k] if per_node in (None, k) else []
    if single:
        choice = _one_node(single, k, picker)
        choice.reasons += avoided
        return choice
    best = None
    for fingerprint, members in _by_wiring(nodes).items():
        choice = _spread_over(members, k, fingerprint, picker, leaf_of, measured, per_node)
        if choice and (best is None or _rank(choice) > _rank(best)):
            best = choice
    if best is None:
        total = sum(len(node.free) for node in nodes)
        shape = f"{k // per_node} node(s) x {per_node} GPU(s)" if per_node else f"{k} GPUs"
        raise Unplaceable(f"{shape} cannot be placed with equal GPUs per node on one wiring ({total} free in all"
                          + "".join(f"; {line}" for line in avoided) + ")")
    best.reasons += avoided
    return best


def _rank(choice: NodeChoice) -> tuple:
    return (choice.per_node, choice.domain is not None, choice.predicted_busbw_gbs or 0.0, -(choice.switches or 0))


def _one_node(nodes: list[Candidate], k: int, picker: _SetCache) -> NodeChoice:
    def key(node: Candidate):
        gpus, busbw = picker.best(node, k)
        return (-(busbw or 0.0), len(node.free), node.name)

    node = min(nodes, key=key)
    gpus, busbw = picker.best(node, k)
    return NodeChoice([(node.name, gpus)], k, node.topo.fingerprint, busbw, None,
                      [f"fits on one node: {node.name} ({len(node.free)} free)"])


def _spread_over(members: list[Candidate], k: int, fingerprint: str, picker: _SetCache,
                 leaf_of: dict[str, str] | None, measured: Measured, asked: int | None = None) -> NodeChoice | None:
    """The most GPUs per node that divides k (or the `asked` number) that enough nodes of this wiring have free."""
    for per_node in ([asked] if asked else range(min(k, members[0].topo.gpus), 0, -1)):
        if k % per_node:
            continue
        eligible = [node for node in members if len(node.free) >= per_node]
        count = k // per_node
        if len(eligible) < count:
            continue
        reasons = [f"{count} node(s) of one wiring x {per_node} GPU(s)"]
        eligible, domain, said = _one_domain(eligible, count)
        if said:
            reasons.append(said)
        domains = {node.name: node.domain for node in members}
        scope = "nvlink-domain" if domain is not None else "network"
        alike = _of_scope(measured, domains, scope)
        known = measured.known()
        if any(node.name in known for node in eligible):
            chosen = _pick_measured(eligible, count, per_node, measured, alike)
            switches = len({leaf_of.get(node.name, "?") for node in chosen}) if leaf_of else None
            reasons.append("by what pair tests measured: nodes found healthy first, best busbw first, "
                           "no two joined by a link judged slow")
        else:
            chosen, switches = _pick_nodes(eligible, count, per_node, leaf_of)
        placed = [(node.name, picker.best(node, per_node)[0]) for node in chosen]
        busbw = min((picker.best(node, per_node)[1] or 0.0) for node in chosen) if per_node > 1 else None
        if switches is not None:
            reasons.append(f"under {switches} leaf switch(es)")
        scope = scope_of(count, [node.name for node in chosen], domains)
        between, basis = _between(measured, {node.name for node in chosen}, _of_scope(measured, domains, scope), scope)
        return NodeChoice(placed, per_node, fingerprint, busbw, switches, reasons, domain, scope, between, basis)
    return None


def _one_domain(eligible: list[Candidate], count: int) -> tuple[list[Candidate], tuple[str, int] | None, str | None]:
    """(the candidates to choose from, the domain they share, what to say): the nodes of the
    NVLink domain that holds `count` eligible nodes with the fewest to spare; all of them, and
    why, when none does (only where some node sits in a domain at all)."""
    members: dict[tuple[str, int], list[Candidate]] = {}
    for node in eligible:
        if node.domain is not None:
            members.setdefault(node.domain, []).append(node)
    if not members:
        return eligible, None, None
    fitting = [(len(nodes), domain) for domain, nodes in members.items() if len(nodes) >= count]
    if not fitting:
        largest = max(len(nodes) for nodes in members.values())
        return eligible, None, (f"no NVLink domain has {count} such nodes (the most in one: {largest}): "
                                "the job spans domains, over the network")
    size, domain = min(fitting)
    return members[domain], domain, f"inside one NVLink domain ({domain[0]} clique {domain[1]}, {size} eligible node(s))"


def _pick_nodes(eligible: list[Candidate], count: int, per_node: int,
                leaf_of: dict[str, str] | None) -> tuple[list[Candidate], int | None]:
    """`count` nodes, those the request fills most exactly first; under the fewest leaf switches
    when the network is known: the smallest switch that holds them all, else the largest first."""
    snug = sorted(eligible, key=lambda node: (len(node.free) - per_node, node.name))
    if not leaf_of:
        return snug[:count], None
    by_leaf: dict[str, list[Candidate]] = {}
    for node in snug:
        by_leaf.setdefault(leaf_of.get(node.name, "?"), []).append(node)
    leaves = sorted(by_leaf.values(), key=lambda group: (-len(group), group[0].name))
    taken: list[Candidate] = []
    used = 0
    while len(taken) < count:
        need = count - len(taken)
        fitting = [group for group in leaves if len(group) >= need]
        group = min(fitting, key=len) if fitting else leaves[0]
        leaves.remove(group)
        taken += group[:need]
        used += 1
    return taken, used


def _of_scope(measured: Measured, domains: dict, scope: str | None) -> set[frozenset[str]]:
    """The measured pairs of this fabric scope, among nodes whose domain is known."""
    return {pair for pair in measured.busbw if scope_of(2, sorted(pair), domains) == scope}


def _between(measured: Measured, chosen: set[str], alike: set[frozenset[str]], scope: str | None) -> tuple[float | None, str | None]:
    """(busbw between the chosen nodes, what it rests on): the slowest measured pair among
    them, else the median of the measured pairs of their scope; (None, None) where it has none."""
    among = [measured.busbw[pair] for pair in alike if pair <= chosen]
    if among:
        return min(among), f"measured between these nodes ({len(among)} pair(s), the slowest)"
    if alike:
        return median(measured.busbw[pair] for pair in alike), f"measured between other nodes of scope {scope} ({len(alike)} pair(s), their median)"
    return None, None


def _pick_measured(eligible: list[Candidate], count: int, per_node: int, measured: Measured,
                   alike: set[frozenset[str]] | None = None) -> list[Candidate]:
    """`count` nodes by what was measured: healthy first, then by each node's best measured
    pair (of `alike`: the choice's fabric scope), then those the request fills most exactly; a
    node joined to one already chosen by a slow link comes only when nothing else is left."""
    best = measured.best_by_node(alike)
    order = sorted(eligible, key=lambda node: (node.name not in measured.healthy, -best.get(node.name, 0.0),
                                               len(node.free) - per_node, node.name))
    slow = measured.slow_partners()
    chosen: list[Candidate] = []
    taken: set[str] = set()
    later: list[Candidate] = []
    for node in order:
        if len(chosen) == count:
            break
        if slow.get(node.name, set()).isdisjoint(taken):  # its own slow partners only, not every chosen node (nodes x chosen before)
            chosen.append(node)
            taken.add(node.name)
        else:
            later.append(node)
    return (chosen + later)[:count]


def _by_wiring(nodes: list[Candidate]) -> dict[str, list[Candidate]]:
    groups: dict[str, list[Candidate]] = {}
    for node in nodes:
        groups.setdefault(node.topo.fingerprint, []).append(node)
    return groups


class _SetCache:
    """select_gpus per (wiring as numbered, free GPUs, k): 256 nodes of one wiring are a handful
    of cases. Keyed by the matrix itself, not the fingerprint: renumbered nodes differ."""

    def __init__(self) -> None:
        self._found: dict[tuple, tuple[list[int], float | None]] = {}
        self._wirings: dict[tuple, Wiring] = {}

    def best(self, node: Candidate, k: int) -> tuple[list[int], float | None]:
        numbering = (tuple(map(tuple, node.topo.links)), tuple(node.topo.gpu_names), tuple(node.topo.numa))
        key = (numbering, tuple(node.free), k)
        if key not in self._found:
            if numbering not in self._wirings:
                self._wirings[numbering] = Wiring.of(node.topo)
            wiring = self._wirings[numbering]
            gpus = select_gpus(node.topo, k, "packed", node.free, predict=wiring.model_busbw)
            self._found[key] = (gpus, wiring.model_busbw(tuple(gpus)))
        return self._found[key]
