"""The reads `doctor` over every node judges from (wirewise.orchestrator.health.every_node): a
case, a campaign's case or a slice of nodes at a time, in SQL order, so that memory holds one
case's values, never the fleet's history (issue 33: reading every result as a row took 4.9 GiB
for 1,000,000 results, and did not fit 6 GiB at 2,500,000).

A judged case is group_by_case's (wirewise.orchestrator.health.baseline): ok results of a
workload with a fingerprint and their metric, by (fingerprint, case_key). Every read here
applies the same Filters as the result rows (wirewise.orchestrator.results.rows) that
`doctor --node` judges (store.results._where: CPU-rank runs left out unless asked for), so
the fleet's judgement reads the rows the per-node one reads.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from wirewise.case import CASE_FIELDS
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.read import Params
from wirewise.orchestrator.store.results import (
    _COMMON, _WORKLOAD_COLUMNS, FLAG_FIELDS, Filters, _and, _any_value, _column_sql, _where, as_rows,
)


def _judged(filters: Filters, p: Params, workload: str, metric: str) -> list[str]:
    """The conditions of group_by_case's rows: ok, of the workload, with a fingerprint and its `metric`."""
    return [*_where(replace(filters, status="ok"), p), f"workload = {p(workload)}", "fingerprint IS NOT NULL",
            "fingerprint <> ''", f"{p.dialect.number(metric)} IS NOT NULL"]


def result_nodes(store: Store, filters: Filters) -> list[str]:
    """The nodes of the results that match."""
    with store.read() as db:
        p = db.params()
        return sorted(db.column(f"SELECT DISTINCT node FROM results WHERE {_and(_where(filters, p))} "
                                "AND node IS NOT NULL AND node <> ''", p))


def result_fingerprints(store: Store, filters: Filters) -> set[str]:
    """The fingerprints of the results that match."""
    with store.read() as db:
        p = db.params()
        return set(db.column(f"SELECT DISTINCT fingerprint FROM results WHERE {_and(_where(filters, p))} "
                             "AND fingerprint IS NOT NULL AND fingerprint <> ''", p))


def judged_cases(store: Store, filters: Filters, workload: str, metric: str) -> list[dict[str, Any]]:
    """Each judged case of the results that match: its fingerprint, case_key and case (the
    fields, one value per key), in the order of the case's first result (group_by_case's
    order over facts in id order)."""
    fields = CASE_FIELDS[workload]
    with store.read() as db:
        p = db.params()
        rows = db.rows(f"SELECT fingerprint, case_key, {', '.join(_any_value(name) for name in fields)}, min(id) AS first "
                       f"FROM results WHERE {_and(_judged(filters, p, workload, metric))} GROUP BY fingerprint, case_key "
                       "ORDER BY first", p)
    found = []
    for fingerprint, key, *case, _ in rows:
        case = dict(zip(fields, case))
        for name in FLAG_FIELDS & set(fields):
            if case[name] is not None:
                case[name] = bool(case[name])
        found.append({"fingerprint": fingerprint, "case_key": key, "case": case})
    return found


def case_rows(store: Store, filters: Filters, workload: str, metric: str, fingerprint: str,
              key: str) -> list[tuple[str, int, float]]:
    """(node, id, metric) of one judged case's results that match, each node's together and its
    newest first (started_at, then id: the order `judge._latest` and the prolog's `newest` read)."""
    with store.read() as db:
        p = db.params()
        conditions = _judged(replace(filters, fingerprint=fingerprint, case_key=key), p, workload, metric)
        return db.rows(f"SELECT node, id, {db.dialect.number(metric)} FROM results "
                       f"WHERE {_and(conditions)} ORDER BY node, started_at DESC, id DESC", p)


def latest_campaigns(store: Store, filters: Filters) -> dict[str, str]:
    """{node: the campaign of its results that ran last} (`judge._latest_campaign` over each
    node's results: a tie goes to the campaign the node first ran in)."""
    with store.read() as db:
        p = db.params()
        rows = db.rows(
            "SELECT node, campaign FROM (SELECT node, campaign, ROW_NUMBER() OVER (PARTITION BY node "
            "ORDER BY max(started_at) DESC, min(id)) AS n FROM results "
            f"WHERE {_and(_where(filters, p))} AND node IS NOT NULL AND campaign IS NOT NULL AND campaign <> '' "
            "GROUP BY node, campaign) AS latest WHERE n = 1", p)
    return dict(rows)


def passed_nodes(store: Store, filters: Filters, campaign: str, fingerprint: str | None, workload: str,
                 equal: dict[str, Any]) -> set[str]:
    """The nodes with an ok result in `campaign` of the wiring and workload whose fields equal `equal`."""
    with store.read() as db:
        p = db.params()
        conditions = [*_where(replace(filters, campaigns=(campaign,), status="ok", workload=workload), p),
                      "fingerprint IS NULL" if fingerprint is None else f"fingerprint = {p(fingerprint)}",
                      *(f"{name} = {p(value)}" for name, value in equal.items())]
        return set(db.column(f"SELECT DISTINCT node FROM results WHERE {_and(conditions)}", p))


def newest_carried(store: Store, filters: Filters, nodes: list[str]) -> list[dict[str, Any]]:
    """Each of `nodes`' newest ok result of each case_key whose NCCL transport was read
    (transport_carried), as select_rows' rows, in the order of each node's first such result of
    the case (what `judge.transport_off_nvlink` reads of a node's results)."""
    names = list(dict.fromkeys([*_COMMON, *(name for workload in filters.workloads() for name in _WORKLOAD_COLUMNS[workload])]))
    with store.read() as db:  # each name once: a subquery's columns are read by name
        p = db.params()
        columns = ", ".join(_column_sql(name, db.dialect) for name in names)
        rows = db.rows(
            f"SELECT {', '.join(names)} FROM (SELECT {columns}, "
            "ROW_NUMBER() OVER (PARTITION BY node, case_key ORDER BY started_at DESC, id DESC) AS newest_n, "
            "min(id) OVER (PARTITION BY node, case_key) AS first_id FROM results "
            f"WHERE {_and(_where(replace(filters, status='ok'), p))} AND {p.among('node', nodes)} "
            "AND transport_carried IS NOT NULL AND transport_carried <> '') AS carried "
            "WHERE newest_n = 1 ORDER BY node, first_id", p)
        return as_rows(names, rows, db.dialect.when, ordered=False)


__all__ = ["result_nodes", "result_fingerprints", "judged_cases", "case_rows", "latest_campaigns", "passed_nodes",
           "newest_carried"]
