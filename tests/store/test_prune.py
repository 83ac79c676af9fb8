"""`wirewise db prune` on SQLite and PostgreSQL: results and node checks older than the date
removed in one transaction; findings, the results they rest on, imported baselines, the audit
trail and each node's latest check kept; with --keep-baselines each wiring's newest results of
every case too."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from tests.conftest import wirewise
from tests.topology.common import NVL_QUADS

OLD, NEW = datetime(2026, 1, 10, tzinfo=timezone.utc), datetime(2026, 6, 10, tzinfo=timezone.utc)
CUT = "2026-03-01"


def _records(node: str, topo, when: datetime, sizes=(1 << 20, 1 << 30), repeats: int = 3, op: str = "all_reduce"):
    from wirewise.record import ResultRecord

    return [ResultRecord(workload="collective", node=node, gpus=[0, 1, 2, 3], gpu_count=4, fingerprint=topo.fingerprint,
                         fabric=topo.fabric, op=op, bytes=size, busbw_gbs=100.0 + r, started_at=when + timedelta(minutes=r),
                         ended_at=when + timedelta(minutes=r, seconds=30))
            for size in sizes for r in range(repeats)]


@pytest.fixture
def history(url):
    """Two nodes of one wiring: 6 results each from January and 6 from June; checks and actions
    of both months; an open finding resting on one January result; an imported baseline."""
    from wirewise.orchestrator.record.ingest import store_measurement
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.health import import_baselines, record_action, record_check
    from wirewise.orchestrator.health.baseline import Baseline
    from wirewise.orchestrator.health.findings import Finding
    from wirewise.topology import read_topology

    store = Store(url)
    topo = read_topology(NVL_QUADS)
    for node in ("n1", "n2"):
        store_measurement(store, _records(node, topo, OLD) + _records(node, topo, NEW), topo, node)
    with store.read() as db:
        evidence = db.scalar("SELECT min(id) FROM results WHERE node = 'n1'")
    finding = Finding("n1", "busbw-below-baseline", "all_reduce 1M: 90 vs 100", "re-run", metric="all_reduce.busbw",
                      delta="-10%", key="k1", reference={"result_ids": [evidence]})
    record_check(store, "n1", "doctor", {"busbw-below-baseline"}, [finding])
    record_check(store, "n2", "doctor", {"busbw-below-baseline"}, [])
    record_action(store, "n1", "drain", "drained", "pytest", reason="wirewise:busbw-below-baseline")
    case = {"op": "all_reduce", "bytes": 1 << 30}
    import_baselines(store, [Baseline(topo.fingerprint, "collective", case, "busbw_gbs", 100.0, 1.0, 10, 2, {"wirewise": 10},
                                      origin="site.json")])
    with store.session() as session:  # the checks as if made in January, then one more of n2 in June
        from sqlalchemy import update

        from wirewise.orchestrator.store.schema import NODE_CHECKS

        session.execute(update(NODE_CHECKS).values(checked_at=OLD))
    record_check(store, "n2", "doctor", {"busbw-below-baseline"}, [])
    return store, evidence


def _count(store, sql: str) -> int:
    with store.read() as db:
        return db.scalar(sql)


def test_prune_removes_the_old_results_and_checks_and_keeps_what_it_must(history):
    from wirewise.orchestrator.results.filters import parse_since
    from wirewise.orchestrator.store.prune import prune

    store, evidence = history
    dry = prune(store, parse_since(CUT), dry_run=True)
    assert dry["removed"] == {"results": 11, "node_checks": 1} and dry["results_remaining"] == 13
    assert _count(store, "SELECT count(*) FROM results") == 24  # a dry run removes nothing
    done = prune(store, parse_since(CUT))
    assert done["removed"] == dry["removed"] and done["kept"]["results_older_kept_for_findings"] == 1
    with store.read() as db:
        assert db.column("SELECT id FROM results WHERE started_at < '2026-03-01' OR id = 0") in ([evidence],)
        assert db.scalar("SELECT count(*) FROM results") == 13
        # n1's January check is its latest: kept; n2's January one is not (its June one is)
        assert sorted(db.rows("SELECT node, count(*) FROM node_checks GROUP BY node")) == [("n1", 1), ("n2", 1)]
        assert db.scalar("SELECT count(*) FROM findings") == 1
        assert db.scalar("SELECT count(*) FROM fleet_actions") == 1
        assert db.scalar("SELECT count(*) FROM baselines") == 1
    assert prune(store, parse_since(CUT))["removed"] == {"results": 0, "node_checks": 0}  # nothing left to remove


def test_keep_baselines_keeps_each_cases_newest_results(history):
    """With a baseline of 4 results: each of the two cases (1 MiB, 1 GiB) has 6 June results on
    the wiring, so nothing older is needed; with 8, two January results of each are kept."""
    from wirewise.orchestrator.results.filters import parse_since
    from wirewise.orchestrator.store.prune import prune

    store, _ = history
    assert prune(store, parse_since(CUT), keep_per_case=4, dry_run=True)["removed"]["results"] == 11
    done = prune(store, parse_since(CUT), keep_per_case=8)
    # 12 January results: the finding's (1 MiB, n1's first) kept; of each case the 2 newest January ones
    assert done["kept"]["results_older_kept_for_baselines"] == 4 and done["removed"]["results"] == 7
    with store.read() as db:
        kept = db.rows("SELECT bytes, count(*) FROM results WHERE started_at < '2026-03-01' GROUP BY bytes ORDER BY bytes")
    assert kept == [(1 << 20, 3), (1 << 30, 2)]


def test_prune_from_the_command_line(history, url):
    proc = wirewise("db", "prune", "--before", CUT, "--dry-run", "--db", url, check=True)
    assert proc.stdout.startswith("would remove 11 results and 1 node checks from before 2026-03-01")
    done = json.loads(wirewise("db", "prune", "--before", CUT, "--keep-baselines", "--db", url, "--json", check=True).stdout)
    assert done["removed"]["results"] == 0 and done["kept"]["results_older_kept_for_baselines"] == 11


@pytest.mark.parametrize("before", ["2026-13-01", "yesterday", "99999d", ""])
def test_a_bad_date_is_one_line_and_exit_2(history, url, before):
    from wirewise.orchestrator.store import Store

    proc = wirewise("db", "prune", "--before", before, "--db", url)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "--before" in proc.stderr
    assert _count(Store(url), "SELECT count(*) FROM results") == 24
