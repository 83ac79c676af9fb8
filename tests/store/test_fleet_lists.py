"""A fleet's list of nodes or ids, of any size, in one read or write (issue 33): SQLite binds at
most 32,766 variables per statement and PostgreSQL 65,535, so a placeholder per node failed past
them. 40,000 nodes, on both databases: every node's latest check, its findings, its drains, and
a write that clears or releases them all."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone

import pytest

FLEET = 40_000  # past SQLite's 32,766 variables per statement
AT = datetime(2026, 6, 1, tzinfo=timezone.utc)


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


def test_a_fleet_past_the_bound_variables_is_read_and_written_whole(url, sqlite_default_limit):
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store import health

    store = Store(url)
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
