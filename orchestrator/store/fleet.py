"""What the fleet stages read from the store: many nodes' wirings at once (fleet campaigns plan
every node of a partition), and the pair tests' results (known by their label, the placement
`pair` their tasks record: another two-node collective, a 2 x 2 scaling run say, is no pair
test), which pair verdicts and placement across nodes read."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from wirewise.case import CASE_FIELDS, scope_of
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.topology import NODE_FIELDS, NodeWiring, node_wirings
from wirewise.topology.model import Topology


def node_topologies(store: Store, names: Iterable[str]) -> dict[str, Topology]:
    """Each named node's wiring as last seen, in its own GPU numbering (what planning needs: the
    pair matrix, GPU names, CPU affinity, NUMA and PCIe paths, not the node's UUIDs); a node
    without a stored wiring is absent. One query, and one Topology per distinct numbering (a
    thousand nodes of three types build three)."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    return topologies_of(node_wirings(store, nodes=wanted))


def topologies_of(wirings: Iterable[NodeWiring]) -> dict[str, Topology]:
    """node -> its Topology from its first wiring in `wirings` (the most recently seen first),
    one Topology per distinct numbering."""
    built: dict[str, Topology] = {}
    found: dict[str, Topology] = {}
    for wiring in wirings:
        if wiring.node in found:
            continue  # an older wiring of the same node
        if "links" in wiring.details:
            fields = {k: wiring.details[k] for k in NODE_FIELDS if k in wiring.details}
            key = repr(fields)
            if key not in built:
                built[key] = Topology(**fields)
        else:  # stored before nodes kept their own matrix: the wiring's
            key = wiring.fingerprint
            if key not in built:
                built[key] = Topology.model_validate(wiring.parsed)
        found[wiring.node] = built[key]
    return found


@dataclass(frozen=True)
class PairResult:
    """One collective measured between two nodes (one row of a two-node task)."""

    campaign: str | None
    task_id: str | None
    nodes: tuple[str, str]  # in node-rank order
    op: str | None  # None: the task failed before measuring
    bytes: int | None
    busbw_gbs: float | None
    status: str
    in_place: bool | None
    case: tuple[tuple[str, object], ...]  # the result's case (wirewise.case), as (field, value) pairs
    ended_at: datetime
    error: str | None = None

    @property
    def sizes_key(self) -> tuple[tuple[str, object], ...]:
        """The case less its size and form: the tests one verdict judges at one size (its largest)."""
        return tuple((name, value) for name, value in self.case if name not in ("bytes", "in_place"))


PAIR_LABEL = "pair"  # the placement a pair test's tasks ask for (wirewise.orchestrator.fleet.pairs; wirewise.case.PLACEMENTS)


CASE = CASE_FIELDS["collective"]


def pair_results(store: Store, campaign: str | None = None) -> list[PairResult]:
    """The pair tests' results (two nodes, labelled `pair`), newest first, each with its case:
    every result of one campaign, or all."""
    with store.read() as db:
        d, p = db.dialect, db.params()
        where = d.seldom(f"placement = {p(PAIR_LABEL)}")  # bound in the order they are written
        if campaign is not None:
            where += f" AND campaign = {p(campaign)}"
        rows = db.rows(
            f"SELECT campaign, task_id, nodes, busbw_gbs, status, ended_at, error, {', '.join(CASE)} "
            f"FROM results WHERE workload = 'collective' AND node_count = 2 AND {where} ORDER BY ended_at DESC, id DESC", p,
        )
    found = []
    for name, task_id, pair, busbw, status, ended_at, error, *values in rows:
        pair, ended_at = d.json(pair), d.when(ended_at)
        if len(pair or []) != 2:
            continue
        case = dict(zip(CASE, values))
        for flag in ("in_place", "cuda_graph"):
            case[flag] = d.flag(case[flag])
        found.append(PairResult(name, task_id, (pair[0], pair[1]), case["op"], case["bytes"], busbw, status,
                                case["in_place"], tuple(case.items()), ended_at, error))
    return found


def pair_scopes(store: Store):
    """A pair of nodes -> its fabric scope (wirewise.case.scope_of), from the NVLink domains the
    nodes' stored wirings reported: what keeps `fleet pairs` from judging a pair across domains
    against the pairs inside one."""
    from wirewise.orchestrator.store.topology import node_domains

    domains = node_domains(store)
    return lambda pair: scope_of(2, list(pair), domains)
