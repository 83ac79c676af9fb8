"""Store result files in the database, idempotently (a record_id is stored once)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from wirewise.errors import UserError, first_problem
from wirewise.limits import MAX_RESULT_BYTES, read_json
from wirewise.record import ResultRecord, record_problem
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import insert_results, too_long

# A field of a result file this wirewise does not know: most likely written by a newer one.
NEWER_FIELD = "a field this wirewise does not know (written by a newer wirewise? upgrade it)"
BATCH = 500  # records per INSERT
RESULT_FILE_FIX = "give the result.json a wirewise task wrote, or its folder, or result records as JSON lines"


def store_records(store: Store, records: Iterable[ResultRecord]) -> int:
    """Insert records; returns how many were new."""
    return store_measurement(store, list(records))


def store_measurement(store: Store, records: list[ResultRecord] | Callable[[], Iterable[ResultRecord]], topology=None,
                      node: str | None = None, other_nodes: list[tuple[Any, str]] = ()) -> int:
    """Save the wiring the records were measured on (a Topology, when known) under `node`
    (default: the records' node), the wirings of the other nodes of a multi-node task
    ((Topology, name) pairs), and the records, in one transaction: a failure stores neither,
    so no node is left without its results. `records` may be a function that makes them
    (an nccl-tests log's millions of rows): they are then checked and inserted BATCH at a time,
    never all in memory, and made again if the transaction is retried. Returns how many records
    were new. A record with a figure that is not a measurement (wirewise.record.record_problem),
    or with text wider than its column, stores nothing: UserError."""
    made = records if callable(records) else (lambda: records)
    first = next(iter(made()), None) if topology is not None and node is None else None

    def write(session) -> int:
        from wirewise.orchestrator.store.topology import add_topology

        if topology is not None:
            from wirewise.topology import node_name

            add_topology(session, topology, node_name(topology, node or (first.node if first else None)))
        for other, name in other_nodes:
            add_topology(session, other, name)
        from wirewise.orchestrator.store.cases import with_cases

        def insert(batch: list[dict]) -> int:
            return insert_results(session, with_cases(session.connection(), batch))  # after the wirings: the geometry reads them

        new, batch = 0, []
        for index, record in enumerate(made()):
            row = record.model_dump()
            problem = record_problem(record) or too_long(row)
            if problem:
                raise UserError(f"records[{index}]: {problem}; none of its records stored")
            batch.append(row)
            if len(batch) == BATCH:
                new += insert(batch)
                batch = []
        return new + insert(batch)

    return store.write(write)


def ingest_result_file(store: Store, path: str | Path) -> tuple[list[ResultRecord], int]:
    """A task's result.json (wirewise.jobs.supervise): returns (records, how many were new).
    UserError naming the file and the field for anything that is not a result file."""
    records, topology, others = read_result_file(path)
    try:
        return records, store_measurement(store, records, topology, other_nodes=others)
    except UserError as exc:
        raise UserError(f"{path}: {exc}") from None


def as_result_document(doc: Any) -> Any:
    """A result file's document: a task's result.json as it is; JSON lines of result records (one
    per line, as results are exported and the project's fixtures hold them; a file of one line
    is one record) as a document of those records, with no wiring."""
    from wirewise.limits import JsonLines
    from wirewise.orchestrator.record.formats import is_result_record

    if isinstance(doc, JsonLines) or is_result_record(doc):
        values = list(doc) if isinstance(doc, JsonLines) else [doc]
        return {"records": values, "lines": True}
    return doc


def read_result_file(path: str | Path) -> tuple[list[ResultRecord], Any, list[tuple[Any, str]]]:
    """(records, the Topology they ran on or None, (Topology, node) of the other nodes of a
    multi-node task) of a result.json, checked: a regular file within MAX_RESULT_BYTES, JSON
    within MAX_NESTING, records and wirings of this wirewise's schema."""
    from pydantic import ValidationError

    doc = as_result_document(read_json(path, "result file", MAX_RESULT_BYTES, RESULT_FILE_FIX, lines=True))
    if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
        raise UserError(f"{path}: not a wirewise result file (no list of records); {RESULT_FILE_FIX}")
    records, where = [], "topology"
    try:
        for index, raw in enumerate(doc["records"]):
            where = f"line {index + 1}" if doc.get("lines") else f"records[{index}]"
            records.append(ResultRecord.model_validate(raw))
        from wirewise.topology import Topology

        where = "topology"
        topology = Topology.model_validate(doc["topology"]) if doc.get("topology") else None
        others = []
        for index, other in enumerate(doc.get("node_topologies") or []):
            where = f"node_topologies[{index}]"
            others.append((Topology.model_validate(other["topology"]), str(other["node"])))
    except ValidationError as exc:
        raise UserError(f"{path}: {first_problem(exc, where, unknown=NEWER_FIELD)}") from None
    except (KeyError, TypeError):
        raise UserError(f"{path}: {where}: not a node and its topology") from None
    return records, topology, others
