"""Store topologies: one TopologyRow row per wiring (fingerprint), one NodeRow row per host, and
one Topology row per (node, wiring) pair holding what the fingerprint leaves out.

TopologyRow.parsed is the docs/contracts.md topology object of the first node seen with that wiring. GPU numbers
differ between nodes of one wiring (renumbered), so what is told by GPU index on a node (its
pair matrix, NVML's PCIe paths, hence its groups) lives in that node's row.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from wirewise.errors import UserError
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.models import NodeRow, NodeTopologyRow, TopologyRow
from wirewise.topology.classify import classify
from wirewise.topology.model import Topology

def save_topology(store: Store, topo: Topology, node: str | None = None) -> tuple[str, bool]:
    """Store `topo` as seen on `node` (default: this host). Returns (fingerprint, created):
    created is False when this node was already stored with this wiring (then only
    last_seen and the details change)."""
    from wirewise.topology import node_name

    node = node_name(topo, node)
    return store.write(lambda session: add_topology(session, topo, node))


def add_topology(session: Session, topo: Topology, node: str) -> tuple[str, bool]:
    """save_topology inside the caller's transaction (ingest stores a wiring and its results
    as one)."""
    topology = session.scalar(select(TopologyRow).where(TopologyRow.fingerprint == topo.fingerprint))
    if topology is None:
        topology = TopologyRow(
            fingerprint=topo.fingerprint,
            fabric=topo.fabric,
            switched=topo.switched,
            gpu_count=topo.gpus,
            gpu_model=topo.gpu_model,
            parsed=topo.contract(),
            raw_text=topo.raw_text,
        )
        session.add(topology)
    host = session.scalar(select(NodeRow).where(NodeRow.name == node))
    if host is None:
        host = NodeRow(name=node)
        session.add(host)
    session.flush()
    seen = session.scalar(
        select(NodeTopologyRow).where(NodeTopologyRow.node_id == host.id, NodeTopologyRow.topology_id == topology.id)
    )
    if seen is not None:
        seen.last_seen = datetime.now(timezone.utc)
        seen.details = _node_details(topo)
        return topo.fingerprint, False
    session.add(NodeTopologyRow(node_id=host.id, topology_id=topology.id, details=_node_details(topo)))
    return topo.fingerprint, True


def _node_details(topo: Topology) -> dict[str, Any]:
    """The NVML/file details plus the topology's fields in this node's GPU numbering."""
    fields = topo.model_dump(include={"links", "gpu_names", "cpu_affinity", "numa", "pcie_ancestors", "switch_seen"})
    return {**topo.details, **fields}


def node_groups(details: dict[str, Any], topology: TopologyRow) -> list[list[int]] | None:
    """NVLink groups in the node's own GPU numbering (rows stored before nodes kept their
    matrix: the first node's, from the wiring)."""
    if "links" not in details:
        return topology.parsed.get("groups")
    return classify(details["links"], details["gpu_names"]).groups


def list_topologies(store: Store) -> list[dict[str, Any]]:
    """Stored nodes with their wiring, most recently seen first."""
    with store.read() as session:
        rows = session.execute(
            select(NodeRow.name, TopologyRow, NodeTopologyRow.details, NodeTopologyRow.first_seen, NodeTopologyRow.last_seen)
            .join(NodeTopologyRow, NodeTopologyRow.node_id == NodeRow.id)
            .join(TopologyRow, TopologyRow.id == NodeTopologyRow.topology_id)
            .order_by(NodeTopologyRow.last_seen.desc(), NodeRow.name)
        ).all()
        return [
            {
                "node": name,
                "fabric": topology.fabric,
                "switched": topology.switched,
                "gpus": topology.gpu_count,
                "gpu_model": topology.gpu_model,
                "groups": node_groups(details, topology),
                "fingerprint": topology.fingerprint,
                "first_seen": first_seen,
                "last_seen": last_seen,
            }
            for name, topology, details, first_seen, last_seen in rows
        ]


_NODE_FIELDS = ("links", "gpu_names", "cpu_affinity", "numa", "pcie_ancestors", "switch_seen")


def load_topology(store: Store, node: str | None = None, fingerprint: str | None = None) -> Topology:
    """A stored wiring: the one last seen on `node` (in that node's own GPU numbering), or the
    wiring whose fingerprint starts with `fingerprint`. UserError when none, or a prefix matches
    more than one."""
    with store.read() as session:
        if node is not None:
            details = session.scalar(
                select(NodeTopologyRow.details).join(NodeRow, NodeRow.id == NodeTopologyRow.node_id)
                .where(NodeRow.name == node).order_by(NodeTopologyRow.last_seen.desc()).limit(1)
            )
            if details is None:
                raise UserError(f"no topology stored for node {node!r}: store it with `wirewise topo save --node {node}` "
                                "(on that node, or with --from-file)")
            if "links" in details:
                fields = {k: details[k] for k in _NODE_FIELDS if k in details}
                return Topology(**fields, details={k: v for k, v in details.items() if k not in _NODE_FIELDS})
            fingerprint = session.scalar(
                select(TopologyRow.fingerprint).join(NodeTopologyRow, NodeTopologyRow.topology_id == TopologyRow.id)
                .join(NodeRow, NodeRow.id == NodeTopologyRow.node_id).where(NodeRow.name == node)
            )
        matches = session.scalars(select(TopologyRow).where(TopologyRow.fingerprint.startswith(fingerprint or ""))).all()
        if len(matches) != 1:
            what = "no stored wiring" if not matches else f"{len(matches)} stored wirings"
            raise UserError(f"{what} with a fingerprint starting {fingerprint!r} (see `wirewise topo list`)")
        return Topology.model_validate({**matches[0].parsed, "raw_text": matches[0].raw_text})


def stored_gpu_models(store: Store, links: list[list[str]]) -> dict[str, list[str]]:
    """GPU model -> the stored nodes whose pair matrix is `links` up to GPU numbering and whose
    GPUs are named: where a saved matrix without names can take its GPUs' model from."""
    from wirewise.topology.fingerprint import fingerprint

    def unnamed(matrix: list[list[str]]) -> str:
        return fingerprint(matrix, [None] * len(matrix))

    wanted = unnamed(links)
    with store.read() as session:
        rows = session.execute(
            select(NodeRow.name, NodeTopologyRow.details, TopologyRow.parsed)
            .join(NodeTopologyRow, NodeTopologyRow.node_id == NodeRow.id)
            .join(TopologyRow, TopologyRow.id == NodeTopologyRow.topology_id)
            .where(TopologyRow.gpu_count == len(links), TopologyRow.gpu_model.is_not(None))
        ).all()
    found: dict[str, list[str]] = {}
    for node, details, parsed in rows:
        source = details if "links" in details else parsed
        names = [name for name in source.get("gpu_names") or [] if name]
        if names and unnamed(source["links"]) == wanted:
            found.setdefault(Counter(names).most_common(1)[0][0], []).append(node)
    return found
