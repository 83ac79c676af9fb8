"""Store result files in the database, idempotently (a record_id is stored once)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from wirewise.record import ResultRecord
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import insert_results


def store_records(store: Store, records: Iterable[ResultRecord]) -> int:
    """Insert records; returns how many were new."""
    return store_measurement(store, list(records))


def store_measurement(store: Store, records: list[ResultRecord], topology=None, node: str | None = None,
                      other_nodes: list[tuple[Any, str]] = ()) -> int:
    """Save the wiring the records were measured on (a Topology, when known) under `node`
    (default: the records' node), the wirings of the other nodes of a multi-node task
    ((Topology, name) pairs), and the records, in one transaction: a failure stores neither,
    so no node is left without its results. Returns how many records were new."""
    rows = [r.model_dump() for r in records]

    def write(session) -> int:
        from wirewise.orchestrator.store.topology import add_topology

        if topology is not None:
            from wirewise.topology import node_name

            add_topology(session, topology, node_name(topology, node or (records[0].node if records else None)))
        for other, name in other_nodes:
            add_topology(session, other, name)
        return sum(insert_results(session, rows[i : i + 500]) for i in range(0, len(rows), 500))

    return store.write(write)


def ingest_result_file(store: Store, path: str | Path) -> tuple[list[ResultRecord], int]:
    """A task's result.json (wirewise.jobs.launch): returns (records, how many were new)."""
    doc = json.loads(Path(path).read_text())
    records = [ResultRecord.model_validate(r) for r in doc["records"]]
    from wirewise.topology import Topology

    topology = Topology.model_validate(doc["topology"]) if doc.get("topology") else None
    others = [(Topology.model_validate(n["topology"]), n["node"]) for n in doc.get("node_topologies") or []]
    return records, store_measurement(store, records, topology, other_nodes=others)
