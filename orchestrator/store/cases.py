"""The case columns of the results table: computed once, when a record is stored, from the one
case definition (wirewise.case), and filled into rows stored before they existed.

Each derived field of wirewise.case.FIELDS is a column of its name, and `case_key` an indexed
column, so that results, compare, report and every decision group in SQL on one key. The
geometry needs node 0's NVLink groups: read from the wiring stored under the result's node and
fingerprint (a task's wiring is stored in the same transaction, before its records), else from
the wiring of that fingerprint first seen on another node, as the report derived it before.
The scope needs the NVLink domain of every node of a multi-node result: each node's as its
current wiring reported it. A result whose wiring was never stored has no geometry, one with a
node whose wiring was never stored no scope; storing that wiring (`topo save`, a probe, a
task's collect) derives them again (refill_for_wiring).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from wirewise.case import FIELDS, KEY_WIDTH, RECORD_FIELDS, derive

if TYPE_CHECKING:
    from sqlalchemy import Column
    from sqlalchemy.engine import Connection

# What a row must hold for its case to be derived (wirewise.case reads these).
SOURCE_COLUMNS = tuple(dict.fromkeys(("id", "workload", "params", "extra", "gpus", "gpu_count", "world_size", "node",
                                      "nodes", "fingerprint", *RECORD_FIELDS)))
JSON_SOURCES = ("params", "extra", "gpus", "nodes")
REFILL_BATCH = 5_000  # rows per read and per UPDATE of a refill


def case_columns() -> list[Column]:
    """The results table's columns of the case: one per derived field, and case_key."""
    from sqlalchemy import Boolean, Column, Integer, String

    types = {"int": lambda f: Integer(), "flag": lambda f: Boolean(), "text": lambda f: String(f.width)}
    return [Column(name, types[field.kind](field)) for name, field in FIELDS.items()] + [
        Column("case_key", String(KEY_WIDTH))
    ]


def with_cases(connection: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row (a record's model_dump) with its derived columns and case_key."""
    wirings = Wirings(connection, {(row["node"], row["fingerprint"]) for row in rows if row.get("fingerprint")})
    domains = node_domains(connection, _other_nodes(rows))
    return [{**row, **derive(row, wirings.groups(row.get("node"), row.get("fingerprint")), domains)} for row in rows]


def _other_nodes(rows: list[dict[str, Any]]) -> set[str]:
    """The nodes of the multi-node rows: whose domains decide their scope."""
    return {node for row in rows if (row.get("node_count") or 1) > 1 for node in row.get("nodes") or []}


def node_domains(connection: Connection, names: set[str]) -> dict[str, Any]:
    """Each named node whose wiring is stored -> its multi-node NVLink domain as its current
    wiring reported it (wirewise.orchestrator.store.topology.domain_in; None: in none)."""
    from sqlalchemy import bindparam, text

    from wirewise.orchestrator.store.topology import domain_in

    if not names:
        return {}
    statement = text("SELECT n.name, nt.details FROM nodes n JOIN node_topologies nt ON nt.node_id = n.id "
                     "WHERE n.name IN :names ORDER BY nt.last_seen DESC").bindparams(bindparam("names", expanding=True))
    found: dict[str, Any] = {}
    for name, details in connection.execute(statement, {"names": sorted(names)}):
        if name not in found:  # the most recently seen wiring is the node's current one
            found[name] = domain_in(_json(details))
    return found


class Wirings:
    """NVLink groups per (node, fingerprint), read in one query: a node's own (its numbering),
    else the wiring's as first stored (None, fingerprint)."""

    def __init__(self, connection: Connection, wanted: set[tuple[str | None, str]] | None = None):
        from sqlalchemy import bindparam, text

        sql = ("SELECT n.name, t.fingerprint, t.parsed, nt.details FROM nodes n JOIN node_topologies nt ON nt.node_id = n.id "
               "JOIN topologies t ON t.id = nt.topology_id")
        if wanted is not None:
            if not wanted:
                self._groups: dict = {}
                return
            sql += " WHERE t.fingerprint IN :fingerprints"
        sql += " ORDER BY nt.last_seen DESC"
        statement = text(sql)
        params = {}
        if wanted is not None:
            statement = statement.bindparams(bindparam("fingerprints", expanding=True))
            params = {"fingerprints": sorted({fingerprint for _, fingerprint in wanted})}
        self._groups = {}
        for node, fingerprint, parsed, details in connection.execute(statement, params):
            parsed, details = _json(parsed), _json(details)
            self._groups.setdefault((node, fingerprint), (parsed, details))
            self._groups.setdefault((None, fingerprint), (parsed, {}))
        self._decoded: dict = {}

    def groups(self, node: str | None, fingerprint: str | None) -> list[list[int]] | None:
        if fingerprint is None:
            return None
        key = (node, fingerprint) if (node, fingerprint) in self._groups else (None, fingerprint)
        if key not in self._groups:
            return None
        if key not in self._decoded:
            from wirewise.orchestrator.store.topology import wiring_groups

            self._decoded[key] = wiring_groups(*self._groups[key])
        return self._decoded[key]


def refill_cases(connection: Connection, where: str = "", params: dict[str, Any] | None = None) -> None:
    """Derive the case columns of the stored results again (those meeting the SQL condition
    `where`, its values in `params`; default every one), in id ranges of REFILL_BATCH rows:
    what a migration that adds a case field runs after adding its column (db/versions/0010),
    and what storing a node's wiring runs for the results it decides (refill_for_wiring).
    Only the columns the table has are written, so an older migration that calls it writes
    the columns of its own time."""
    from sqlalchemy import inspect, text

    present = {column["name"] for column in inspect(connection).get_columns("results")}
    if "case_key" not in present:  # a wiring stored by a migration older than the case columns
        return
    names = [name for name in (*FIELDS, "case_key") if name in present]
    update = text(f"UPDATE results SET {', '.join(f'{name} = :{name}' for name in names)} WHERE id = :row_id")
    for rows in _batches(connection, where, params or {}):
        wirings = Wirings(connection, {(row["node"], row["fingerprint"]) for row in rows if row["fingerprint"]})
        domains = node_domains(connection, _other_nodes(rows))
        values = []
        for row in rows:
            derived = derive(row, wirings.groups(row["node"], row["fingerprint"]), domains)
            values.append({"row_id": row["id"], **{name: derived[name] for name in names}})
        connection.execute(update, values)


def refill_for_wiring(connection: Connection, node: str, fingerprint: str) -> None:
    """Derive again the cases a node's newly stored (or changed) wiring decides: its own results
    of that wiring, results of that wiring on other nodes that had none to read (their geometry
    empty), and the multi-node results it took part in (their scope: its NVLink domain). A
    result stored before its node's wiring was saved gets its geometry and scope now."""
    from sqlalchemy import inspect

    where = "fingerprint = :fingerprint AND (node = :node OR geometry IS NULL)"
    if "scope" in {column["name"] for column in inspect(connection).get_columns("results")}:
        where = f"({where}) OR (node_count > 1 AND CAST(nodes AS VARCHAR) LIKE :named)"
    refill_cases(connection, where, {"fingerprint": fingerprint, "node": node, "named": f'%{json.dumps(node)}%'})


def _batches(connection: Connection, where: str, params: dict[str, Any]) -> Iterator[list[dict[str, Any]]]:
    from sqlalchemy import text

    condition = f" AND ({where})" if where else ""
    first, last = connection.execute(text(f"SELECT min(id), max(id) FROM results WHERE 1 = 1{condition}"), params).one()
    select = text(f"SELECT {', '.join(SOURCE_COLUMNS)} FROM results WHERE id >= :start AND id < :stop{condition}")
    for start in range(first or 0, (last or -1) + 1, REFILL_BATCH):
        rows = [dict(zip(SOURCE_COLUMNS, row))
                for row in connection.execute(select, {**params, "start": start, "stop": start + REFILL_BATCH})]
        for row in rows:
            for name in JSON_SOURCES:
                row[name] = _json(row[name])
        if rows:
            yield rows


def _json(value: Any) -> Any:
    """A JSON column as read through text(): SQLite gives the text, PostgreSQL the value."""
    return json.loads(value) if isinstance(value, str) else value
