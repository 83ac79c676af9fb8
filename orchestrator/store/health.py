"""Fleet health in the store: imported baselines, each node's checks and findings (its verdict),
and the audit trail of every drain, re-test and resume (wirewise.orchestrator.health).

A judgement of a node (`record_check`) keeps one open finding per rule and case: a finding
found again is updated in place (its id, first sighting and confirmation kept), one its rule no
longer finds is cleared, saying by what. Drains are claimed under the guardrails in one
transaction that holds the audit table for its length (SQLite's BEGIN IMMEDIATE, PostgreSQL's
table lock), so health checks that fire on every node at once cannot together drain more than
the guardrails allow. A claim holds its node until the time its claimant gave (`claim_until` in
its evidence): meanwhile another claim of the node is skipped, so two `fleet drain --apply` at
once repeat and drain a node once. A claim its claimant never resolved (the process was
killed) is marked `abandoned` once that time has passed, and counts against no guardrail.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from wirewise.clock import utcnow
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.read import POSTGRESQL, SQLITE, Dialect, Params, in_chunks

OPEN, CLEARED = "open", "cleared"
CLAIMED, DRAINED = "claimed", "drained"  # a drain's outcome while it is being applied, and once Slurm took it
SKIPPED, ABANDONED = "skipped", "abandoned"  # a claim not made (another holds the node); one its claimant left
DRAINING_ACTIONS = ("drain", "health-check", "prolog")  # the actions that drain: the guardrails count them all

# The columns the read path returns, each with how its value reads back (read.Dialect: json,
# flag, when; None: as the driver gives it). schema.py defines the tables; tests/store checks
# these against it, as it does store.results' columns.
BASELINE_COLUMNS = {"fingerprint": None, "workload": None, "case": "json", "metric": None, "median": None,
                    "scaled_mad": None, "results": None, "nodes": None, "sources": "json", "origin": None}
CHECK_COLUMNS = {"id": None, "node": None, "source": None, "rules": "json", "healthy": "flag", "findings": None,
                 "checked_at": "when"}
FINDING_COLUMNS = {"id": None, "node": None, "rule": None, "key": None, "metric": None, "delta": None, "evidence": None,
                   "advice": None, "gpus": "json", "measurement": "json", "reference": "json", "source": None,
                   "status": None, "confirmed": "flag", "opened_at": "when", "updated_at": "when", "cleared_at": "when",
                   "cleared_by": None}
ACTION_COLUMNS = {"id": None, "node": None, "action": None, "outcome": None, "reason": None, "detail": None,
                  "evidence": "json", "asked_by": None, "campaign": None, "at": "when"}


def _plain(value: Any) -> Any:
    """A JSON column's value with what JSON lacks (times) as text."""
    return json.loads(json.dumps(value, default=str))


def _select(store: Store, table: str, columns: dict[str, str | None], where: Callable | None = None,
            order: str = "id", newest: int | None = None, nodes: list[str] | None = None) -> list[dict[str, Any]]:
    """Rows of `table` as {column: value}, decoded as `columns` says, in `order` (columns, each
    ascending). `where(p, d)` writes the condition with the statement's Params `p` (each value
    through a placeholder) and Dialect `d`. `newest`: only that many of each node's rows, the
    last in `order`, picked in the database on the (node, time) index (`_newest_ids`). `nodes`:
    only these nodes' rows (None: every node's)."""
    with store.read() as db:
        d, p = db.dialect, db.params()
        names = ", ".join(f'"{name}"' for name in columns)  # quoted: `case` is a keyword in both databases
        if newest is None:
            condition = _all(where(p, d) if where else None, _of_nodes(nodes, p))
        else:
            condition = f"id IN ({_newest_ids(table, order, newest, where, nodes, p, d)})"
        rows = db.rows(f"SELECT {names} FROM {table}{' WHERE ' + condition if condition else ''} ORDER BY {order}", p)
    decoders = [getattr(d, kind) if kind else None for kind in columns.values()]
    return [{name: (decode(value) if decode else value) for name, decode, value in zip(columns, decoders, row)}
            for row in rows]


def _of_nodes(nodes: list[str] | None, p) -> str | None:
    return None if nodes is None else p.among("node", nodes)


def _newest_ids(table: str, order: str, newest: int, where: Callable | None, nodes: list[str] | None, p, d) -> str:
    """A subquery of the ids of each node's newest `newest` rows meeting `where`, of `nodes`
    (None: every node). The list of nodes is read once, by the nodes' scan: in the per-node
    probe it would be searched again for each node, n x n (208 s for 40,000 nodes on
    PostgreSQL, whose plan reads the list as a plain subplan there). A node's history
    grows with every check and action: reading it all to keep its last rows took 1 s for 1,000
    nodes of 100 checks each (on SQLite, the 2-core machine). One row per node is one index
    probe per node (17 ms there); several are ranked over the index (ROW_NUMBER, 230 ms for 20
    actions of each of 1,000 nodes, most of it their 20,000 rows)."""
    latest_first = ", ".join(f"{column.strip()} DESC" for column in order.split(","))

    def rows_where(*more: str, of_nodes: bool = True) -> str:  # written anew for each use: each writes its own placeholders
        condition = _all(where(p, d) if where else None, *more, _of_nodes(nodes, p) if of_nodes else None)
        return f" WHERE {condition}" if condition else ""

    if newest == 1:
        return (f"SELECT (SELECT id FROM {table}{rows_where('node = nodes.node', of_nodes=False)} ORDER BY {latest_first} LIMIT 1) "
                f"FROM (SELECT DISTINCT node FROM {table}{rows_where()}) nodes")
    return (f"SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY node ORDER BY {latest_first}) AS place "
            f"FROM {table}{rows_where()}) ranked WHERE place <= {p(newest)}")


def _all(*conditions: str | None) -> str:
    return " AND ".join(c for c in conditions if c)


# -- baselines ------------------------------------------------------------------------------
def import_baselines(store: Store, baselines: list) -> dict[str, int]:
    """Store baselines read from a file: a case already imported from a file of the same name
    is replaced. Returns how many were added and replaced."""
    from sqlalchemy import delete, insert

    from wirewise.orchestrator.store.schema import BASELINES

    def work(session) -> dict[str, int]:
        counts = {"added": 0, "replaced": 0}
        for b in baselines:
            key = json.dumps(b.case, sort_keys=True)
            gone = session.execute(delete(BASELINES).where(
                BASELINES.c.fingerprint == b.fingerprint, BASELINES.c.workload == b.workload,
                BASELINES.c.case_key == key, BASELINES.c.origin == b.origin)).rowcount
            counts["replaced" if gone else "added"] += 1
            session.execute(insert(BASELINES).values(
                fingerprint=b.fingerprint, workload=b.workload, case_key=key, case=b.case, metric=b.metric,
                median=b.median, scaled_mad=b.scaled_mad, results=b.results, nodes=b.nodes, sources=b.sources, origin=b.origin))
        return counts

    return store.write(work)


def imported_baselines(store: Store, fingerprints: set[str] | None = None) -> list[dict[str, Any]]:
    """The imported baselines (of these fingerprints), the newest import of each case first: the
    fields of wirewise.orchestrator.health.baseline.Baseline."""
    if fingerprints is not None and not fingerprints:
        return []
    where = None if fingerprints is None else (lambda p, d: p.among("fingerprint", sorted(fingerprints)))
    return _select(store, "baselines", BASELINE_COLUMNS, where, order="imported_at DESC, id DESC")


# -- results a finding rests on -------------------------------------------------------------
def result_runs(store: Store, ids: list[int]) -> dict[int, dict[str, Any]]:
    """{result id: its GPU indices, run parameters and device}: what a confirmation runs again."""
    if not ids:
        return {}
    with store.read() as db:
        d, p = db.dialect, db.params()
        rows = db.rows(f"SELECT id, gpus, params, gpu_count, extra FROM results WHERE {p.among('id', sorted(set(ids)))}", p)
    found = {}
    for result_id, gpus, params, gpu_count, extra in rows:
        gpus, params, extra = d.json(gpus), d.json(params), d.json(extra)
        found[result_id] = {"gpus": list(gpus or []), "params": dict(params or {}),
                            "device": "cpu" if gpu_count == 0 else (extra or {}).get("device")}
    return found


def results_in_one_domain(store: Store, ids: list[int]) -> dict[int, bool]:
    """{result id: whether the nodes it ran on all sit in one multi-node NVLink domain} (their
    current wirings, wirewise.orchestrator.store.topology.node_domains)."""
    from wirewise.orchestrator.store.topology import node_domains

    if not ids:
        return {}
    with store.read() as db:
        d, p = db.dialect, db.params()
        rows = db.rows(f"SELECT id, nodes FROM results WHERE {p.among('id', sorted(set(ids)))}", p)
    domains = node_domains(store)
    found = {}
    for result_id, nodes in rows:
        keys = {domains.get(name) for name in d.json(nodes) or []}
        found[result_id] = len(d.json(nodes) or []) > 1 and len(keys) == 1 and None not in keys
    return found


# -- checks and findings ----------------------------------------------------------------------
def record_check(store: Store, node: str, source: str, rules: set[str], findings: list,
                 confirmed: bool = False) -> dict[str, Any]:
    """One judgement of `node` by `rules`: its findings stored (updated where the same rule and
    case is open), the open findings of those rules it did not find again cleared. Returns the
    check's id with the open, new and cleared finding ids."""
    from sqlalchemy import insert

    from wirewise.orchestrator.store.schema import NODE_CHECKS as CHECKS

    now = utcnow()

    def work(session) -> dict[str, Any]:
        check_id = session.execute(insert(CHECKS).values(
            node=node, source=source, rules=sorted(rules), healthy=not findings, findings=len(findings), checked_at=now,
        )).inserted_primary_key[0]
        open_rows = _open_findings(session, [node])[node]
        return {"check": check_id, **_store_findings(session, node, source, rules, findings, open_rows, now, confirmed)}

    return store.write(work)


def record_checks(store: Store, source: str, checks: list[tuple[str, set[str], list]]) -> None:
    """record_check for each (node, rules, findings) of `checks`, a thousand nodes a transaction:
    the checks inserted at once and the nodes' open findings read in one query (doctor over
    12,500 nodes spent most of its writing in a transaction and a query per node)."""
    from sqlalchemy import insert

    from wirewise.orchestrator.store.schema import NODE_CHECKS as CHECKS

    for chunk in in_chunks(checks):
        now = utcnow()

        def work(session, chunk=chunk) -> None:
            session.execute(insert(CHECKS), [dict(node=node, source=source, rules=sorted(rules), healthy=not findings,
                                                  findings=len(findings), checked_at=now) for node, rules, findings in chunk])
            open_rows = _open_findings(session, [node for node, _, _ in chunk])
            for node, rules, findings in chunk:
                _store_findings(session, node, source, rules, findings, open_rows[node], now, False)

        store.write(work)


def _open_findings(session, nodes: list[str]) -> dict[str, dict[str, Any]]:
    """{node: {key: its open finding's (id, key, rule)}} for each of `nodes` (at most a thousand)."""
    from collections import defaultdict

    from sqlalchemy import select

    from wirewise.orchestrator.store.schema import FINDINGS

    found: dict[str, dict[str, Any]] = defaultdict(dict)
    for row in session.execute(select(FINDINGS.c.id, FINDINGS.c.key, FINDINGS.c.rule, FINDINGS.c.node)
                               .where(FINDINGS.c.node.in_(nodes), FINDINGS.c.status == OPEN)):
        found[row.node][row.key] = row
    return found


def _store_findings(session, node: str, source: str, rules: set[str], findings: list, open_rows: dict[str, Any],
                    now: datetime, confirmed: bool) -> dict[str, list[int]]:
    """A judgement's findings stored (updated where `open_rows` holds the same key) and the open
    ones of `rules` not found again cleared: the open, new and cleared finding ids."""
    from sqlalchemy import insert, update

    from wirewise.orchestrator.store.schema import FINDINGS

    open_rows = dict(open_rows)
    kept, new = [], []
    for f in findings:
        values = dict(rule=f.check, metric=f.metric, delta=f.delta, evidence=f.evidence, advice=f.advice, gpus=f.gpus,
                      measurement=f.measurement, reference=f.reference, source=source, updated_at=now)
        if confirmed:
            values["confirmed"] = True
        if f.key in open_rows:
            session.execute(update(FINDINGS).where(FINDINGS.c.id == open_rows[f.key].id).values(**values))
            kept.append(open_rows.pop(f.key).id)
        else:
            new.append(session.execute(insert(FINDINGS).values(
                node=node, key=f.key, status=OPEN, opened_at=now, **{"confirmed": confirmed, **values})).inserted_primary_key[0])
    cleared = [row.id for row in open_rows.values() if row.rule in rules]
    if cleared:
        for chunk in in_chunks(cleared):
            session.execute(update(FINDINGS).where(FINDINGS.c.id.in_(chunk)).values(
                status=CLEARED, cleared_at=now, cleared_by=f"{source}: not found again", updated_at=now))
    return {"open": kept + new, "new": new, "cleared": cleared}


def add_check(store: Store, node: str, source: str, rules: set[str], healthy: bool, findings: int) -> int:
    """A check of the node whose findings were stored or cleared one by one (a confirmation, a re-test)."""
    from sqlalchemy import insert

    from wirewise.orchestrator.store.schema import NODE_CHECKS as CHECKS

    return store.write(lambda session: session.execute(insert(CHECKS).values(
        node=node, source=source, rules=sorted(rules), healthy=healthy, findings=findings, checked_at=utcnow(),
    )).inserted_primary_key[0])


def clear_findings(store: Store, ids: list[int], by: str) -> None:
    if ids:
        from sqlalchemy import update

        from wirewise.orchestrator.store.schema import FINDINGS

        now = utcnow()

        def work(session) -> None:
            for chunk in in_chunks(ids):
                session.execute(update(FINDINGS).where(FINDINGS.c.id.in_(chunk), FINDINGS.c.status == OPEN)
                                .values(status=CLEARED, cleared_at=now, cleared_by=by, updated_at=now))

        store.write(work)


def confirm_findings(store: Store, ids: list[int], evidence: dict[int, str]) -> None:
    """Findings a repeat of their measurement showed again, with that repeat's evidence."""
    from sqlalchemy import update

    from wirewise.orchestrator.store.schema import FINDINGS

    now = utcnow()

    def work(session) -> None:
        for finding_id in ids:
            values: dict[str, Any] = {"confirmed": True, "updated_at": now}
            if finding_id in evidence:
                values["evidence"] = evidence[finding_id]
            session.execute(update(FINDINGS).where(FINDINGS.c.id == finding_id).values(**values))

    if ids:
        store.write(work)


def findings(store: Store, nodes: list[str] | None = None, status: str | None = OPEN,
             ids: list[int] | None = None) -> list[dict[str, Any]]:
    """Findings (open ones by default), oldest first."""
    if (nodes is not None and not nodes) or (ids is not None and not ids):
        return []

    def where(p, d) -> str:
        return _all(status is not None and f"status = {p(status)}", ids is not None and p.among("id", ids))

    return _select(store, "findings", FINDING_COLUMNS, where, nodes=nodes)


def latest_checks(store: Store, nodes: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Each node's latest check."""
    if nodes is not None and not nodes:
        return {}
    return {row["node"]: row for row in _select(store, "node_checks", CHECK_COLUMNS, order="checked_at, id", newest=1, nodes=nodes)}


# -- the audit trail ------------------------------------------------------------------------
def record_action(store: Store, node: str, action: str, outcome: str, asked_by: str, reason: str | None = None,
                  detail: str | None = None, evidence: dict[str, Any] | None = None, campaign: str | None = None) -> int:
    from sqlalchemy import insert

    from wirewise.orchestrator.store.schema import FLEET_ACTIONS as ACTIONS

    return store.write(lambda session: session.execute(insert(ACTIONS).values(
        node=node, action=action, outcome=outcome, reason=reason, detail=detail, evidence=_plain(evidence or {}),
        asked_by=asked_by, campaign=campaign, at=utcnow())).inserted_primary_key[0])


def set_outcome(store: Store, action_id: int, outcome: str, detail: str | None = None, campaign: str | None = None) -> None:
    from sqlalchemy import update

    from wirewise.orchestrator.store.schema import FLEET_ACTIONS as ACTIONS

    values: dict[str, Any] = {"outcome": outcome}
    if detail is not None:
        values["detail"] = detail
    if campaign is not None:
        values["campaign"] = campaign
    store.write(lambda session: session.execute(update(ACTIONS).where(ACTIONS.c.id == action_id).values(**values)))


def actions(store: Store, nodes: list[str] | None = None, since: datetime | None = None,
            kinds: tuple[str, ...] | None = None, outcomes: tuple[str, ...] | None = None,
            last: int | None = None) -> list[dict[str, Any]]:
    """The audit trail, oldest first: of these nodes, since then, of these actions and outcomes;
    `last`: only each node's newest that many."""
    if any(given is not None and not given for given in (nodes, kinds, outcomes)):
        return []

    def where(p, d) -> str:
        return _all(since is not None and f"at >= {p(d.moment(since))}", kinds is not None and p.among("action", kinds),
                    outcomes is not None and p.among("outcome", outcomes))

    return _select(store, "fleet_actions", ACTION_COLUMNS, where, order="at, id", newest=last, nodes=nodes)


def last_drains(store: Store, nodes: list[str]) -> dict[str, dict[str, Any]]:
    """Each node's latest drain that wirewise applied (outcome drained)."""
    return {row["node"]: row for row in actions(store, nodes, kinds=DRAINING_ACTIONS, outcomes=(DRAINED,), last=1)}


Budget = Callable[[str, int, set[str]], str | None]  # (node, drains in the last hour, nodes claimed lately) -> why not
DRAIN_WINDOW = timedelta(hours=1)  # the guardrails' max_per_hour: the drains of the last 60 minutes
RECENT_CLAIMS = timedelta(minutes=10)  # nodes drained this lately count as out: Slurm may not show their drain yet


def claim_drains(store: Store, wanted: list[dict[str, Any]], budget: Budget, asked_by: str, hold_s: float,
                 seen_at: datetime | None = None) -> list[dict[str, Any]]:
    """Claim drains under the guardrails, in one transaction that holds the audit table: each
    wanted drain (`node`, `reason`, `evidence`, `action` (default drain)) becomes an action row,
    `claimed` (for `hold_s` seconds at most) while `budget` says nothing against it, else `held`
    with what it said (`_budgeted`). A node another claimant holds, or one a drain of wirewise's
    took after `seen_at` (when the caller read Slurm's states), is not claimed: its row is
    returned `skipped`, with why, and not stored. Returns the rows, in order."""
    from sqlalchemy import insert, text

    from wirewise.orchestrator.store.schema import FLEET_ACTIONS as ACTIONS

    now = utcnow()

    def work(session) -> list[dict[str, Any]]:
        postgresql = session.bind.dialect.name == "postgresql"
        if postgresql:
            session.execute(text("LOCK TABLE fleet_actions IN SHARE ROW EXCLUSIVE MODE"))
        connection = session.connection()

        def rows_of(sql: str, p: Params) -> list[tuple]:  # read inside this transaction, under its lock
            return connection.exec_driver_sql(sql, tuple(p.values)).all()

        dialect = POSTGRESQL if postgresql else SQLITE
        _abandon_expired(session, rows_of, dialect, now)
        taken = _taken(rows_of, dialect, now, seen_at)
        free = [item for item in wanted if item["node"] not in taken]
        lately = _drains_lately(rows_of, dialect, now)
        said = dict(zip((id(item) for item in free), _budgeted(budget, [item["node"] for item in free], *lately)))
        rows = []
        for item in wanted:
            row = {"node": item["node"], "action": item.get("action", "drain"), "reason": item["reason"], "asked_by": asked_by,
                   "campaign": item.get("campaign"), "at": now}
            if item["node"] in taken:
                rows.append({**row, "outcome": SKIPPED, "detail": taken[item["node"]], "evidence": {}, "id": None})
                continue
            why = said[id(item)]
            evidence = _plain(item.get("evidence") or {})
            if why is None:
                evidence["claim_until"] = (now + timedelta(seconds=hold_s)).isoformat()
            row.update(outcome=CLAIMED if why is None else "held", detail=why, evidence=evidence)
            row["id"] = session.execute(insert(ACTIONS).values(**row)).inserted_primary_key[0]
            rows.append(row)
        return rows

    return store.write(work)


def release_claims(store: Store, ids: list[int], outcome: str, detail: str) -> None:
    """Claims still `claimed` given their outcome (an interrupted or failed claimant's): none dangles."""
    if ids:
        from sqlalchemy import update

        from wirewise.orchestrator.store.schema import FLEET_ACTIONS as ACTIONS

        def work(session) -> None:
            for chunk in in_chunks(ids):
                session.execute(update(ACTIONS).where(ACTIONS.c.id.in_(chunk), ACTIONS.c.outcome == CLAIMED)
                                .values(outcome=outcome, detail=detail))

        store.write(work)


def drain_budget(store: Store, nodes: list[str], budget: Budget, now: datetime | None = None) -> list[str | None]:
    """What claim_drains would say now for each of `nodes` (None: claimed), claiming nothing:
    a dry run's answer, told the same drains as a claim is."""
    with store.read() as db:
        lately = _drains_lately(db.rows, db.dialect, now or utcnow())
    return _budgeted(budget, nodes, *lately)


def _claims(rows_of: Callable[[str, Params], list[tuple]], d: Dialect, now: datetime) -> list[tuple[int, str, str, datetime]]:
    """(id, node, who, until) of every drain still `claimed`; `until` None where unknown."""
    p = Params(d)
    found = []
    for action_id, node, who, evidence, at in rows_of(
            f"SELECT id, node, asked_by, evidence, at FROM fleet_actions WHERE {p.among('action', DRAINING_ACTIONS)} "
            f"AND outcome = {p(CLAIMED)}", p):
        until = (d.json(evidence) or {}).get("claim_until")
        found.append((action_id, node, who, datetime.fromisoformat(until) if until else d.when(at) + RECENT_CLAIMS))
    return found


def _abandon_expired(session, rows_of, d: Dialect, now: datetime) -> None:
    from sqlalchemy import update

    from wirewise.orchestrator.store.schema import FLEET_ACTIONS as ACTIONS

    for action_id, _, _, until in _claims(rows_of, d, now):
        if until <= now:
            session.execute(update(ACTIONS).where(ACTIONS.c.id == action_id).values(
                outcome=ABANDONED, detail=f"its claimant did not resolve it by {until:%Y-%m-%d %H:%M:%S} UTC (it was stopped)"))


def _taken(rows_of, d: Dialect, now: datetime, seen_at: datetime | None) -> dict[str, str]:
    """node -> why it cannot be claimed now: another claim holds it, or wirewise drained it after `seen_at`."""
    taken = {node: f"claimed by {who} until {until:%H:%M:%S} UTC: its repeat and drain are under way there"
             for _, node, who, until in _claims(rows_of, d, now) if until > now}
    if seen_at is not None:
        p = Params(d)
        for node, who, at in rows_of(f"SELECT node, asked_by, at FROM fleet_actions WHERE {p.among('action', DRAINING_ACTIONS)} "
                                     f"AND outcome = {p(DRAINED)} AND at >= {p(d.moment(seen_at))}", p):
            taken.setdefault(node, f"drained by {who} at {d.when(at):%H:%M:%S} UTC, after its state was read")
    return taken


def _drains_lately(rows_of: Callable[[str, Params], list[tuple]], d: Dialect, now: datetime) -> tuple[int, set[str]]:
    """(how many drains wirewise holds claimed or applied in the DRAIN_WINDOW before `now`, the
    nodes of those: claimed now, or drained in the last RECENT_CLAIMS), read by `rows_of(sql, params)`."""
    p = Params(d)
    drained = rows_of(f"SELECT node, at FROM fleet_actions WHERE {p.among('action', DRAINING_ACTIONS)} "
                      f"AND outcome = {p(DRAINED)} AND at >= {p(d.moment(now - DRAIN_WINDOW))}", p)
    claimed = [(node, until) for _, node, _, until in _claims(rows_of, d, now) if until > now]
    recent = {node for node, at in drained if d.when(at) >= now - RECENT_CLAIMS} | {node for node, _ in claimed}
    return len(drained) + len(claimed), recent
def _budgeted(budget: Budget, nodes: list[str], hour: int, recent: set[str]) -> list[str | None]:
    """`budget`'s answer for each node in turn, told the drains of the last hour and the nodes
    claimed lately, each node it lets through counted in for the next."""
    recent = set(recent)
    said = []
    for node in nodes:
        why = budget(node, hour, recent)
        if why is None:
            hour += 1
            recent.add(node)
        said.append(why)
    return said
