"""`wirewise db prune`: the history older than a date removed, what it must not lose kept.

A fleet's history grows by every sweep of every node (issue 33: about 1 KB a result with its
indexes, docs/scale.md). Pruning removes the results that started before the date, and the
node checks made before it, in one transaction, except:

- every result a stored finding rests on (its reference's result_ids): findings are kept, and
  so is their evidence;
- given keep_per_case (`--keep-baselines`: wirewise.orchestrator.health.baseline's
  BASELINE_RESULTS), each wiring's newest that many results of every case: what the baseline of
  a case rests on, so doctor and the prolog judge the case as before, however old its last
  results are;
- each node's latest check: a node's verdict is its latest check and its open findings.

Kept whole: the imported baselines, the findings, the audit trail of drains, re-tests and
resumes (fleet_actions), campaigns and their tasks, wirings. A dry run counts the same rows and
removes nothing. SQLite keeps the freed pages for new rows (its file does not shrink until a
VACUUM); PostgreSQL's autovacuum reuses them the same way.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.read import POSTGRESQL, SQLITE, Params


def prune(store: Store, before: datetime, keep_per_case: int | None = None, dry_run: bool = False) -> dict[str, Any]:
    """Remove (or, dry, count) what is older than `before`; returns what was removed and kept."""
    def work(session) -> dict[str, Any]:
        connection = session.connection()
        d = POSTGRESQL if session.bind.dialect.name == "postgresql" else SQLITE

        def scalar(sql: str, p: Params) -> Any:
            return connection.exec_driver_sql(sql, tuple(p.values)).scalar()

        evidence = _finding_results(connection)
        old = Params(d)
        older = f"started_at < {old(d.moment(before))}"
        counts: dict[str, Any] = {"older": scalar(f"SELECT count(*) FROM results WHERE {older}", old)}
        p = Params(d)
        condition = f"started_at < {p(d.moment(before))}"  # each placeholder bound in the order it is written
        condition += f" AND {p.among('id', evidence)}"
        counts["kept_for_findings"] = scalar(f"SELECT count(*) FROM results WHERE {condition}", p)
        counts["kept_for_baselines"] = 0
        if keep_per_case is not None:
            p = Params(d)
            condition = f"started_at < {p(d.moment(before))}"
            condition += f" AND id IN ({_newest_of_each_case(p, keep_per_case)})"
            condition += f" AND {p.not_among('id', evidence)}"
            counts["kept_for_baselines"] = scalar(f"SELECT count(*) FROM results WHERE {condition}", p)
        p = Params(d)
        doomed = _doomed_results(p, d, before, evidence, keep_per_case)
        counts["results"] = scalar(f"SELECT count(*) FROM results WHERE {doomed}", p)
        q = Params(d)
        checks = _doomed_checks(q, d, before)
        counts["node_checks"] = scalar(f"SELECT count(*) FROM node_checks WHERE {checks}", q)
        if not dry_run:
            connection.exec_driver_sql(f"DELETE FROM results WHERE {doomed}", tuple(p.values))
            connection.exec_driver_sql(f"DELETE FROM node_checks WHERE {checks}", tuple(q.values))
        counts["remaining"] = scalar("SELECT count(*) FROM results", Params(d)) - (counts["results"] if dry_run else 0)
        return counts

    counts = store.write(work)
    return {"before": before.isoformat(), "dry_run": dry_run, "keep_per_case": keep_per_case,
            "removed": {"results": counts["results"], "node_checks": counts["node_checks"]},
            "kept": {"results_older_kept_for_findings": counts["kept_for_findings"],
                     "results_older_kept_for_baselines": counts["kept_for_baselines"]},
            "results_older": counts["older"], "results_remaining": counts["remaining"]}


def _finding_results(connection) -> list[int]:
    """The result ids every stored finding rests on (its reference's result_ids), each once."""
    ids: set[int] = set()
    for (reference,) in connection.exec_driver_sql("SELECT reference FROM findings"):
        reference = json.loads(reference) if isinstance(reference, str) else reference
        ids.update(i for i in (reference or {}).get("result_ids") or [] if isinstance(i, int))
    return sorted(ids)


def _newest_of_each_case(p: Params, newest: int) -> str:
    """A subquery of the ids of each wiring's newest `newest` results of every case."""
    return (f"SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY fingerprint, case_key "
            f"ORDER BY started_at DESC, id DESC) AS place FROM results) ranked WHERE place <= {p(newest)}")


def _doomed_results(p: Params, d, before: datetime, evidence: list[int], baseline: int | None) -> str:
    """The condition of the results pruning removes."""
    condition = f"started_at < {p(d.moment(before))}"
    if evidence:
        condition += f" AND {p.not_among('id', evidence)}"
    if baseline is not None:
        condition += f" AND id NOT IN ({_newest_of_each_case(p, baseline)})"
    return condition


def _doomed_checks(p: Params, d, before: datetime) -> str:
    """The node checks made before the date, each node's latest (the last stored) kept."""
    return (f"checked_at < {p(d.moment(before))} AND id NOT IN (SELECT max(id) FROM node_checks GROUP BY node)")
