"""Store topologies: one TOPOLOGIES row per wiring (fingerprint), one NODES row per host, and
one NODE_TOPOLOGIES row per (node, wiring) pair holding what the fingerprint leaves out.

TOPOLOGIES.parsed is the docs/contracts.md topology object of the first node seen with that
wiring. GPU numbers differ between nodes of one wiring (renumbered), so what is told by GPU
index on a node (its pair matrix, NVML's PCIe paths, hence its groups) lives in that node's
row. `node_wirings` is the one join of the three tables: every reader of a node's wiring
(placement history, placement derived for reports, the report's wiring section, doctor, `topo
list`) goes through it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from wirewise.clock import utcnow
from wirewise.errors import UserError
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.read import UPPERMOST
from wirewise.topology.fabric import domain_json

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from wirewise.topology.model import Topology

# What a node's row holds in its own GPU numbering (the rest of its details: NVML, files, versions).
NODE_FIELDS = ("links", "gpu_names", "cpu_affinity", "numa", "pcie_ancestors", "switch_seen")


@dataclass(frozen=True)
class NodeWiring:
    """A node seen with a wiring: the wiring's row and what this node's row adds."""

    node: str
    fingerprint: str
    fabric: str
    switched: bool | None
    gpu_count: int
    gpu_model: str | None
    parsed: dict[str, Any]  # the wiring's topology object, in its first node's numbering
    details: dict[str, Any]  # this node's: its own pair matrix and GPU names, NVML details
    first_seen: datetime
    last_seen: datetime

    @property
    def _own(self) -> dict[str, Any]:
        """The node's own fields; rows stored before nodes kept their matrix: the wiring's."""
        return self.details if "links" in self.details else self.parsed

    @property
    def links(self) -> list[list[str]]:
        return self._own.get("links") or []

    @property
    def gpu_names(self) -> list[str | None]:
        return self._own.get("gpu_names") or [None] * len(self.links)

    @property
    def domain(self) -> tuple[str, int] | None:
        """The multi-node NVLink domain (cluster UUID, clique id) the node's GPUs reported when
        this wiring was saved; None: in none."""
        return domain_in(self.details)

    @property
    def groups(self) -> list[list[int]] | None:
        """NVLink groups in the node's own GPU numbering."""
        return wiring_groups(self.parsed, self.details)


def domain_in(details: dict[str, Any]) -> tuple[str, int] | None:
    """The multi-node NVLink domain a node's row says its GPUs reported (its details' GPUs'
    fabric: wirewise.topology.fabric.domain_of); None: in none."""
    from wirewise.topology.fabric import domain_of

    gpus = details.get("gpus") or []
    return domain_of([gpu.get("fabric") for gpu in gpus]) if gpus else None


def wiring_groups(parsed: dict[str, Any], details: dict[str, Any]) -> list[list[int]] | None:
    """A node's NVLink groups in its own GPU numbering, from its wiring's row (`parsed`) and the
    node's own (`details`); rows stored before nodes kept their matrix: the wiring's."""
    if "links" not in details:
        return parsed.get("groups")
    from wirewise.topology.classify import classify

    return classify(details["links"], details["gpu_names"]).groups


def node_wirings(store: Store, fingerprints: Iterable[str] | None = None, nodes: Iterable[str] | None = None) -> list[NodeWiring]:
    """Every (node, wiring) stored, or those of the given fingerprints and/or nodes; the most
    recently seen first (a node's current wiring is its first row). Each wiring's topology
    object is read and decoded once, shared by its nodes (read only): read with every node's
    row and decoded per node, it cost place --across-nodes 0.4 to 0.6 of its 2.5 s of CPU at
    12,500 nodes of three wirings (docs/scale.md)."""
    with store.read() as db:
        d, p = db.dialect, db.params()
        conditions = []
        if fingerprints is not None:
            conditions.append(p.among("t.fingerprint", fingerprints))
        if nodes is not None:
            conditions.append(p.among("n.name", nodes))
        rows = db.rows(
            "SELECT n.name, t.id, t.fingerprint, t.fabric, t.switched, t.gpu_count, t.gpu_model, nt.details, "
            "nt.first_seen, nt.last_seen FROM nodes n JOIN node_topologies nt ON nt.node_id = n.id "
            "JOIN topologies t ON t.id = nt.topology_id"
            + (f" WHERE {' AND '.join(conditions)}" if conditions else "")
            + " ORDER BY nt.last_seen DESC, n.name", p,
        )
        ids, p = sorted({row[1] for row in rows}), db.params()
        parsed = {topology_id: d.json(value) for topology_id, value in
                  (db.rows(f"SELECT id, parsed FROM topologies WHERE {p.among('id', ids)}", p) if ids else [])}
    return [
        NodeWiring(name, fingerprint, fabric, d.flag(switched), gpu_count, gpu_model, parsed[topology_id], d.json(details),
                   d.when(first_seen), d.when(last_seen))
        for name, topology_id, fingerprint, fabric, switched, gpu_count, gpu_model, details, first_seen, last_seen in rows
    ]


def node_domains(store: Store) -> dict[str, tuple[str, int] | None]:
    """Every stored node -> the multi-node NVLink domain of its current wiring (NodeWiring.domain)."""
    domains: dict[str, tuple[str, int] | None] = {}
    for wiring in node_wirings(store):  # the most recent first: a node's current wiring
        domains.setdefault(wiring.node, wiring.domain)
    return domains


def node_names(store: Store) -> set[str]:
    """Every node a wiring is stored for."""
    with store.read() as db:
        return set(db.column("SELECT name FROM nodes"))


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
    from sqlalchemy import insert, select, update

    from wirewise.orchestrator.store.schema import NODE_TOPOLOGIES, NODES, TOPOLOGIES

    topology_id = session.scalar(select(TOPOLOGIES.c.id).where(TOPOLOGIES.c.fingerprint == topo.fingerprint))
    if topology_id is None:
        topology_id = session.execute(insert(TOPOLOGIES).values(
            fingerprint=topo.fingerprint, fabric=topo.fabric, switched=topo.switched, gpu_count=topo.gpus,
            gpu_model=topo.gpu_model, parsed=topo.contract(), raw_text=topo.raw_text,
        )).inserted_primary_key[0]
    node_id = session.scalar(select(NODES.c.id).where(NODES.c.name == node))
    if node_id is None:
        node_id = session.execute(insert(NODES).values(name=node)).inserted_primary_key[0]
    details = _node_details(topo)
    seen = session.execute(select(NODE_TOPOLOGIES.c.id, NODE_TOPOLOGIES.c.details).where(
        NODE_TOPOLOGIES.c.node_id == node_id, NODE_TOPOLOGIES.c.topology_id == topology_id)).first()
    if seen is not None:
        session.execute(update(NODE_TOPOLOGIES).where(NODE_TOPOLOGIES.c.id == seen.id).values(
            last_seen=utcnow(), details=details))
    else:
        session.execute(insert(NODE_TOPOLOGIES).values(node_id=node_id, topology_id=topology_id, details=details))
    if seen is None or _plain(seen.details) != _plain(details):
        # what the wiring decides of results already stored (their geometry) follows it; the
        # same wiring seen again (every task's collect stores it) refills nothing
        from wirewise.orchestrator.store.cases import refill_for_wiring

        refill_for_wiring(session.connection(), node, topo.fingerprint)
    return topo.fingerprint, seen is None


def _plain(value: Any) -> Any:
    """A JSON value as the database gives it back (tuples as lists, keys as text)."""
    import json

    return json.loads(value) if isinstance(value, str) else json.loads(json.dumps(value))


def _node_details(topo: Topology) -> dict[str, Any]:
    """The NVML/file details plus the topology's fields in this node's GPU numbering."""
    fields = topo.model_dump(include=set(NODE_FIELDS))
    return {**topo.details, **fields}


def list_topologies(store: Store) -> list[dict[str, Any]]:
    """Stored nodes with their wiring, most recently seen first."""
    return [
        {
            "node": w.node, "fabric": w.fabric, "switched": w.switched, "gpus": w.gpu_count, "gpu_model": w.gpu_model,
            "groups": w.groups, "fingerprint": w.fingerprint, "first_seen": w.first_seen, "last_seen": w.last_seen,
            "domain": domain_json(w.domain),
            "fabrics": [gpu.get("fabric") for gpu in w.details.get("gpus") or []],
        }
        for w in node_wirings(store)
    ]


def load_topology(store: Store, node: str | None = None, fingerprint: str | None = None) -> Topology:
    """A stored wiring: the one last seen on `node` (in that node's own GPU numbering), or the
    wiring whose fingerprint starts with `fingerprint`. UserError when none, or a prefix matches
    more than one."""
    from wirewise.topology.model import Topology

    if node is not None:
        seen = node_wirings(store, nodes=[node])
        if not seen:
            raise UserError(f"no topology stored for node {node!r}: store it with `wirewise topo save --node {node}` "
                            "(on that node, or with --from-file)")
        details = seen[0].details
        if "links" in details:
            fields = {k: details[k] for k in NODE_FIELDS if k in details}
            return Topology(**fields, details={k: v for k, v in details.items() if k not in NODE_FIELDS})
        fingerprint = seen[0].fingerprint
    prefix = fingerprint or ""
    with store.read() as db:
        p = db.params()
        matches = db.rows(f"SELECT parsed, raw_text FROM topologies WHERE fingerprint >= {p(prefix)} "
                          f"AND fingerprint < {p(prefix + UPPERMOST)}", p)
    if len(matches) != 1:
        what = "no stored wiring" if not matches else f"{len(matches)} stored wirings"
        raise UserError(f"{what} with a fingerprint starting {fingerprint!r} (see `wirewise topo list`)")
    parsed, raw_text = matches[0]
    return Topology.model_validate({**db.dialect.json(parsed), "raw_text": raw_text})


def stored_gpu_models(store: Store, links: list[list[str]]) -> dict[str, list[str]]:
    """GPU model -> the stored nodes whose pair matrix is `links` up to GPU numbering and whose
    GPUs are named: where a saved matrix without names can take its GPUs' model from."""
    from wirewise.topology.fingerprint import fingerprint

    def unnamed(matrix: list[list[str]]) -> str:
        return fingerprint(matrix, [None] * len(matrix))

    wanted = unnamed(links)
    found: dict[str, list[str]] = {}
    for wiring in node_wirings(store):
        names = [name for name in wiring.gpu_names if name]
        if wiring.gpu_count == len(links) and names and unnamed(wiring.links) == wanted:
            found.setdefault(Counter(names).most_common(1)[0][0], []).append(wiring.node)
    return found


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
    from wirewise.topology.model import Topology

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
