"""Store result files in the database, idempotently (a record_id is stored once)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sqlalchemy import select

from wirewise.record import ResultRecord
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.models import ResultRow


def _insert_ignoring_duplicates(session, rows: list[dict]) -> int:
    """INSERT ... ON CONFLICT (record_id) DO NOTHING, in the dialect's own syntax."""
    if not rows:
        return 0
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    stmt = insert(ResultRow).values(rows).on_conflict_do_nothing(index_elements=["record_id"])
    # Count through RETURNING: PostgreSQL reports rowcount -1 for a multi-row insert.
    return len(session.execute(stmt.returning(ResultRow.record_id)).all())


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
        return sum(_insert_ignoring_duplicates(session, rows[i : i + 500]) for i in range(0, len(rows), 500))

    return store.write(write)


def stored_figures(store: Store, source: str, ops: set[str], sizes: set[int]) -> set[tuple]:
    """(op, bytes, count, dtype, in_place, time_us, algbw_gbs, busbw_gbs) of the stored rows of
    `source` with those ops and sizes: what an excerpt that names no run can be matched by."""
    columns = (ResultRow.op, ResultRow.bytes, ResultRow.count, ResultRow.dtype, ResultRow.in_place,
               ResultRow.time_us, ResultRow.algbw_gbs, ResultRow.busbw_gbs)
    query = select(*columns).where(ResultRow.source == source, ResultRow.op.in_(ops), ResultRow.bytes.in_(sizes))
    with store.read() as session:
        return {tuple(row) for row in session.execute(query)}


def ingest_result_file(store: Store, path: str | Path) -> tuple[list[ResultRecord], int]:
    """A task's result.json (wirewise.jobs.launch): returns (records, how many were new)."""
    doc = json.loads(Path(path).read_text())
    records = [ResultRecord.model_validate(r) for r in doc["records"]]
    from wirewise.topology import Topology

    topology = Topology.model_validate(doc["topology"]) if doc.get("topology") else None
    others = [(Topology.model_validate(n["topology"]), n["node"]) for n in doc.get("node_topologies") or []]
    return records, store_measurement(store, records, topology, other_nodes=others)
