"""What the fleet stages read from the store: many nodes' wirings at once (fleet campaigns plan
every node of a partition), and the collectives measured between two nodes (pair tests, and
any other two-node measurement), which pair verdicts and placement across nodes read."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.models import NodeRow, NodeTopologyRow, ResultRow, TopologyRow
from wirewise.topology.model import Topology

# What a node's row holds in its own GPU numbering (wirewise.orchestrator.store.topology).
_NODE_FIELDS = ("links", "gpu_names", "cpu_affinity", "numa", "pcie_ancestors", "switch_seen")


def node_topologies(store: Store, names: Iterable[str]) -> dict[str, Topology]:
    """Each named node's wiring as last seen, in its own GPU numbering (what planning needs: the
    pair matrix, GPU names, CPU affinity, NUMA and PCIe paths, not the node's UUIDs); a node
    without a stored wiring is absent. One query, and one Topology per distinct numbering (a
    thousand nodes of three types build three)."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    with store.read() as session:
        rows = session.execute(
            select(NodeRow.name, NodeTopologyRow.details, TopologyRow.parsed, TopologyRow.raw_text)
            .join(NodeTopologyRow, NodeTopologyRow.node_id == NodeRow.id)
            .join(TopologyRow, TopologyRow.id == NodeTopologyRow.topology_id)
            .where(NodeRow.name.in_(wanted))
            .order_by(NodeTopologyRow.last_seen.desc())
        ).all()
    built: dict[str, Topology] = {}
    found: dict[str, Topology] = {}
    for name, details, parsed, raw_text in rows:
        if name in found:
            continue  # an older wiring of the same node
        if "links" in details:
            fields = {k: details[k] for k in _NODE_FIELDS if k in details}
            key = repr(fields)
            if key not in built:
                built[key] = Topology(**fields)
        else:  # stored before nodes kept their own matrix: the wiring's
            key = parsed["fingerprint"]
            if key not in built:
                built[key] = Topology.model_validate({**parsed, "raw_text": raw_text})
        found[name] = built[key]
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
    device: str  # cpu | gpu
    ended_at: datetime
    error: str | None = None


def pair_results(store: Store, campaign: str | None = None, nodes: Iterable[str] | None = None) -> list[PairResult]:
    """Collective results of tasks that ran on exactly two nodes, newest first: every result of
    one campaign, or every one naming any of `nodes`, or all."""
    query = (
        select(ResultRow.campaign, ResultRow.task_id, ResultRow.nodes, ResultRow.op, ResultRow.bytes, ResultRow.busbw_gbs,
               ResultRow.status, ResultRow.in_place, ResultRow.gpu_count, ResultRow.ended_at, ResultRow.error)
        .where(ResultRow.workload == "collective", ResultRow.node_count == 2)
        .order_by(ResultRow.ended_at.desc(), ResultRow.id.desc())
    )
    if campaign is not None:
        query = query.where(ResultRow.campaign == campaign)
    with store.read() as session:
        rows = session.execute(query).all()
    wanted = set(nodes) if nodes is not None else None
    found = []
    for name, task_id, pair, op, size, busbw, status, in_place, gpu_count, ended_at, error in rows:
        if len(pair or []) != 2 or (wanted is not None and not wanted & set(pair)):
            continue
        found.append(PairResult(name, task_id, (pair[0], pair[1]), op, size, busbw, status, in_place,
                                "cpu" if gpu_count == 0 else "gpu", ended_at, error))
    return found
