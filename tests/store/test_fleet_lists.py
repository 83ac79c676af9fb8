"""A fleet's list of nodes or ids, of any size, in one read or write (issue 33): SQLite binds at
most 32,766 variables per statement and PostgreSQL 65,535, so a placeholder per node failed past
them. 40,000 nodes, on both databases: every node's latest check, its findings, its drains, and
a write that clears or releases them all.

On PostgreSQL the reads come right after the bulk insert, with autovacuum off for the tables
written, so the planner has no statistics of them: the moment of an operator's first `fleet
status` after 40,000 nodes were recorded. A list read back as rows was then planned as a nested
loop of 40,000 x 40,000 comparisons (read.Params.among), and whether the test passed depended on
autovacuum analysing the tables first. Each statement is bounded (STATEMENT_TIMEOUT) so that a
bad plan fails the test (QueryCanceled) instead of hanging it."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone

import pytest

FLEET = 40_000  # past SQLite's 32,766 variables per statement
AT = datetime(2026, 6, 1, tzinfo=timezone.utc)
WRITTEN = ("node_checks", "findings", "fleet_actions")
# Far above what a statement of this test takes with a sound plan (2 to 7 s on the shared 2-core
# machine), far below the minutes of the nested loop the planner chose without statistics.
STATEMENT_TIMEOUT = "120s"


def _fleet(store) -> list[str]:
    """FLEET nodes, each with two checks (the second one healthy), a finding and a claimed drain."""
    from sqlalchemy import insert

    from wirewise.orchestrator.store.schema import FINDINGS, FLEET_ACTIONS, NODE_CHECKS

    nodes = [f"n{i:05d}" for i in range(FLEET)]

    def work(session) -> None:
        for healthy, at in ((False, AT), (True, AT + timedelta(hours=1))):
            session.execute(insert(NODE_CHECKS), [dict(node=node, source="doctor", rules=["busbw"], healthy=healthy,
                                                       findings=0 if healthy else 1, checked_at=at) for node in nodes])
        session.execute(insert(FINDINGS), [dict(
            node=node, rule="busbw", key=f"{node}/all_reduce", metric="busbw", delta="-20%", evidence="e", advice="a",
            reference={}, source="doctor", status="open", confirmed=False, opened_at=AT, updated_at=AT) for node in nodes])
        session.execute(insert(FLEET_ACTIONS), [dict(
            node=node, action="drain", outcome="claimed", evidence={}, asked_by="test", at=AT + timedelta(seconds=i))
            for i, node in enumerate(nodes)])

    store.write(work)
    return nodes


@pytest.fixture
def sqlite_default_limit(monkeypatch) -> None:
    """Every SQLite connection bound to SQLite's own default of 32,766 variables per statement
    (SQLITE_MAX_VARIABLE_NUMBER): this machine's build raises it to 250,000, others do not."""
    connect = sqlite3.connect

    def limited(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 32_766)
        return conn

    monkeypatch.setattr(sqlite3, "connect", limited)


def _without_statistics(url: str):
    """The store at `url`; on PostgreSQL with each statement bounded (libpq's `options` in the
    URL, as an operator would set it) and autovacuum off for the tables the test writes."""
    from sqlalchemy import text

    from wirewise.orchestrator.store import Store

    if not url.startswith("postgresql"):
        return Store(url)
    store = Store(f"{url}?options=-c%20statement_timeout%3D{STATEMENT_TIMEOUT}")
    store.write(lambda session: [session.execute(text(f"ALTER TABLE {table} SET (autovacuum_enabled = false)"))
                                 for table in WRITTEN])
    return store


def test_a_fleet_past_the_bound_variables_is_read_and_written_whole(url, sqlite_default_limit):
    from wirewise.orchestrator.store import health

    store = _without_statistics(url)
    nodes = _fleet(store)
    wanted = nodes[::-1]  # any order: the answer is the database's
    latest = health.latest_checks(store, wanted)
    assert len(latest) == FLEET and all(row["healthy"] for row in latest.values())
    assert set(latest) == set(nodes)
    found = health.findings(store, wanted)
    assert len(found) == FLEET
    ids = [row["id"] for row in found]
    assert len(health.findings(store, ids=ids)) == FLEET
    claimed = health.actions(store, wanted, kinds=("drain",), outcomes=("claimed",), last=1)
    assert {row["node"] for row in claimed} == set(nodes)

    health.clear_findings(store, ids, by="test")
    assert health.findings(store, wanted) == []
    assert len(health.findings(store, ids=ids, status="cleared")) == FLEET
    health.release_claims(store, [row["id"] for row in claimed], outcome="abandoned", detail="test")
    assert health.actions(store, wanted, outcomes=("claimed",)) == []
    assert len(health.actions(store, wanted, outcomes=("abandoned",))) == FLEET
    # a short list still reads through a placeholder per value
    assert set(health.latest_checks(store, nodes[:3])) == set(nodes[:3])


def test_a_long_list_of_any_text_is_matched_exactly_in_and_out(url, sqlite_default_limit):
    """Past LIST_PLACEHOLDERS the list is one parameter (PostgreSQL: an array's text): names with
    the characters that text quotes or escapes, and ids of an INTEGER column, match themselves
    alone, with IN and with NOT IN; an empty list matches nothing, and leaves everything out."""
    from sqlalchemy import insert

    from wirewise.orchestrator.store.read import LIST_PLACEHOLDERS
    from wirewise.orchestrator.store.schema import NODE_CHECKS

    store = _without_statistics(url)
    odd = ['a"b', "c\\d", "e,f", "{g}", " h ", "NULL", "", "ünï", "it's", "x\ny"]
    names = odd + [f"n{i:05d}" for i in range(2 * LIST_PLACEHOLDERS)]
    store.write(lambda session: session.execute(insert(NODE_CHECKS), [dict(
        node=name, source="doctor", rules=[], healthy=True, findings=0, checked_at=AT) for name in names]))
    wanted = names[1::2]
    assert min(len(wanted), len(names[::2])) > LIST_PLACEHOLDERS

    def read(column: str, values: list, among: bool = True) -> list:
        with store.read() as db:
            p = db.params()
            condition = p.among(column, values) if among else p.not_among(column, values)
            return db.column(f"SELECT node FROM node_checks WHERE {condition} ORDER BY id", p)

    assert read("node", wanted) == wanted
    assert read("node", wanted, among=False) == names[::2]
    with store.read() as db:
        ids = db.column("SELECT id FROM node_checks ORDER BY id")
    assert read("id", ids[::2]) == names[::2]
    assert read("id", ids[::2], among=False) == wanted
    assert read("node", []) == []
    assert read("node", [], among=False) == names
