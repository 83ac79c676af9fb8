"""The store's picks of each node's newest checks and actions (store/health.py: one index probe
per node, or a ranking, in the database) give what keeping the newest of the whole history
does, on SQLite and on the real PostgreSQL: times out of id order, ties on time (broken by id),
and conditions (the action, its outcome) that the newest row of a node must meet."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta, timezone

import pytest

T0 = datetime(2026, 12, 1, 8, 0, tzinfo=timezone.utc)
NODES = ["n1", "n2", "n3", "n4"]
# (node, minutes after T0): n1's third check is stored last but happened first; n2's two last tie.
CHECKS = [("n1", 5), ("n1", 9), ("n2", 3), ("n2", 7), ("n2", 7), ("n1", 1), ("n3", 2)]
# (node, minutes, action, outcome)
ACTIONS = [("n1", 1, "drain", "drained"), ("n1", 2, "retest", "failed"), ("n1", 3, "retest", "passed"),
           ("n1", 0, "drain", "held"), ("n2", 4, "prolog", "drained"), ("n2", 4, "health-check", "drained"),
           ("n2", 6, "retest", "passed"), ("n2", 5, "drain", "claimed"), ("n3", 8, "resume", "resumed"),
           ("n1", 3, "resume", "resumed")]


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    from sqlalchemy import insert

    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.schema import FLEET_ACTIONS, NODE_CHECKS

    url = f"sqlite:///{tmp_path / 'wirewise.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    store = Store(url)

    def plant(session) -> None:
        for i, (node, minutes) in enumerate(CHECKS):
            session.execute(insert(NODE_CHECKS).values(node=node, source=f"check{i}", rules=["r"], healthy=True, findings=0,
                                                       checked_at=T0 + timedelta(minutes=minutes)))
        for node, minutes, action, outcome in ACTIONS:
            session.execute(insert(FLEET_ACTIONS).values(node=node, action=action, outcome=outcome, evidence={},
                                                         asked_by="a test", at=T0 + timedelta(minutes=minutes)))

    store.write(plant)
    return store


def _by_node(rows: list[dict]) -> dict[str, list[dict]]:
    found = defaultdict(list)
    for row in rows:
        found[row["node"]].append(row)
    return dict(found)


def test_each_nodes_latest_check_is_the_newest_of_its_history(store):
    from wirewise.orchestrator.store.health import CHECK_COLUMNS, _select, latest_checks

    history = _select(store, "node_checks", CHECK_COLUMNS, order="checked_at, id")
    expected = {node: rows[-1] for node, rows in _by_node(history).items()}
    assert {n: c["source"] for n, c in latest_checks(store).items()} == {"n1": "check1", "n2": "check4", "n3": "check6"}
    assert latest_checks(store) == expected
    assert latest_checks(store, ["n2", "n4"]) == {"n2": expected["n2"]} and latest_checks(store, []) == {}


@pytest.mark.parametrize("last", [1, 2, 3])
def test_each_nodes_newest_actions_are_the_end_of_its_trail(store, last):
    from wirewise.orchestrator.store.health import actions

    trail = actions(store)
    newest = actions(store, NODES, last=last)
    assert newest == [a for a in trail if a in [row for rows in _by_node(trail).values() for row in rows[-last:]]]
    assert [(a["node"], a["action"]) for a in actions(store, ["n1"], last=2)] == [("n1", "retest"), ("n1", "resume")]


def test_the_newest_action_meeting_a_condition(store):
    from wirewise.orchestrator.store.health import DRAINING_ACTIONS, actions, last_drains

    drains = last_drains(store, NODES)
    assert {n: (a["action"], a["outcome"]) for n, a in drains.items()} == {"n1": ("drain", "drained"),
                                                                          "n2": ("health-check", "drained")}
    retests = {a["node"]: a["outcome"] for a in actions(store, NODES, kinds=("retest",), last=1)}
    assert retests == {"n1": "passed", "n2": "passed"}
    hour = actions(store, since=T0 + timedelta(minutes=4), kinds=DRAINING_ACTIONS, outcomes=("claimed", "drained"))
    assert [(a["node"], a["action"]) for a in hour] == [("n2", "prolog"), ("n2", "health-check"), ("n2", "drain")]
    assert actions(store, NODES, kinds=()) == [] and last_drains(store, []) == {}
