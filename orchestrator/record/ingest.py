"""Store result files in the database, idempotently (a record_id is stored once)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from orchestrator.record.schema import ResultRecord
from orchestrator.store import Store
from orchestrator.store.models import Result


def _insert_ignoring_duplicates(session, rows: list[dict]) -> int:
    """INSERT ... ON CONFLICT (record_id) DO NOTHING, in the dialect's own syntax."""
    if not rows:
        return 0
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    stmt = insert(Result).values(rows).on_conflict_do_nothing(index_elements=["record_id"])
    # Count through RETURNING: PostgreSQL reports rowcount -1 for a multi-row insert.
    return len(session.execute(stmt.returning(Result.record_id)).all())


def store_records(store: Store, records: Iterable[ResultRecord]) -> int:
    """Insert records; returns how many were new."""
    rows = [r.model_dump() for r in records]
    with store.session() as session:
        return sum(_insert_ignoring_duplicates(session, rows[i : i + 500]) for i in range(0, len(rows), 500))


def ingest_result_file(store: Store, path: str | Path) -> tuple[list[ResultRecord], int]:
    """A task's result.json: save the node's topology (if any) and its records.

    Returns (records, how many were new).
    """
    doc = json.loads(Path(path).read_text())
    records = [ResultRecord.model_validate(r) for r in doc["records"]]
    if doc.get("topology"):
        from orchestrator.topology import NodeTopology, save_topology

        node = records[0].node if records else None
        save_topology(store, NodeTopology.model_validate(doc["topology"]), node)
    return records, store_records(store, records)
