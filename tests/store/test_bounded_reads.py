"""The reads issue 33 bounded, the same on SQLite and PostgreSQL: the prolog's history is the
newest results of the case it measured (not its wiring's whole history), and `baseline export`
aggregates each case in the database, giving what summarizing every result's rows gave."""

from __future__ import annotations

from datetime import datetime, timezone

from tests.report.conftest import import_log
from tests.store.test_prune import NEW, _records, history  # noqa: F401 - the fixture, two nodes' history
from tests.topology.common import NVL_QUADS


def test_the_prolog_reads_the_newest_results_of_its_case_alone(history, monkeypatch):
    """measured_history: only the measured case (1 GiB all_reduce on 4 GPUs), and of it only the
    newest BASELINE_RESULTS, whatever else the wiring's history holds."""
    import wirewise.orchestrator.health.baseline as baseline
    from wirewise.orchestrator.health.node import measured_history
    from wirewise.orchestrator.record.ingest import store_measurement
    from wirewise.topology import read_topology

    store, _ = history
    topo = read_topology(NVL_QUADS)
    now = datetime(2026, 7, 1, tzinfo=timezone.utc)
    just = _records("n1", topo, now, sizes=(1 << 30,), repeats=1)
    store_measurement(store, just + _records("n1", topo, now, sizes=(1 << 30,), repeats=2, op="all_gather"), topo, "n1")
    monkeypatch.setattr(baseline, "BASELINE_RESULTS", 5)
    rows = measured_history(store, just, include_cpu=False)
    assert {(r["op"], r["bytes"]) for r in rows} == {("all_reduce", 1 << 30)}
    assert len(rows) == 5 and max(r["started_at"] for r in rows) == now  # the newest five, the one just stored first
    assert min(r["started_at"] for r in rows) >= NEW


def test_baseline_export_aggregates_in_the_database_what_the_facts_give(url, tmp_path):
    """Two H100 nodes' nccl-tests logs (every size, in and out of place), a quad node's results
    and training runs, a CPU-rank run and a failed one: every case's baseline from the grouped
    read equals summarize over the result rows, on both databases."""
    from wirewise.orchestrator.health.baseline import group_by_case, stored_baselines, summarize
    from wirewise.orchestrator.record.ingest import store_measurement
    from wirewise.orchestrator.results.rows import result_rows
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.results import Filters
    from wirewise.record import ResultRecord
    from wirewise.topology import read_topology

    for node, factor in (("h100-a", 1.0), ("h100-b", 0.97)):
        import_log(tmp_path, url, node, factor)
    store, topo = Store(url), read_topology(NVL_QUADS)
    when = datetime(2026, 5, 1, tzinfo=timezone.utc)
    extra = _records("quad", topo, when) + [
        ResultRecord(workload="train", node="quad", gpus=[0, 1, 2, 3], gpu_count=4, fingerprint=topo.fingerprint,
                     fabric=topo.fabric, model="mistral-7b", strategy=strategy, world_size=4, micro_batch=1, seq_len=2048,
                     tokens_per_s=30_000.0 + i, step_time_s=0.3, started_at=when)
        for i, strategy in enumerate(("fsdp", "fsdp", "zero2"))] + [
        ResultRecord(workload="collective", node="quad", gpus=[], gpu_count=0, world_size=2, fingerprint=topo.fingerprint,
                     fabric=topo.fabric, op="all_reduce", bytes=1 << 20, busbw_gbs=1.5, started_at=when),
        ResultRecord(workload="collective", node="quad", gpus=[0, 1], gpu_count=2, fingerprint=topo.fingerprint,
                     fabric=topo.fabric, op="all_reduce", bytes=1 << 20, status="failed", error="boom", started_at=when)]
    store_measurement(store, extra, topo, "quad")
    for include_cpu in (False, True):
        filters = Filters(status="ok", include_cpu=include_cpu)
        expected = [summarize(key[0], key[1], {n: m[0][n] for n in m[0] if n in _case(key[1])}, m)
                    for key, m in group_by_case(result_rows(store, filters)).items()]
        found = stored_baselines(store, filters)
        assert _by_key(found) == _by_key(expected) and len(found) > 20
        assert {b.workload for b in found} == {"collective", "train"}
        assert any(b.case["device"] == "cpu" for b in found) == include_cpu


def _case(workload: str) -> tuple[str, ...]:
    from wirewise.case import CASE_FIELDS

    return CASE_FIELDS[workload]


def _by_key(baselines) -> dict:
    return {b.key: (b.median, round(b.scaled_mad, 9), b.results, b.nodes, b.sources, b.metric) for b in baselines}


def test_pair_tests_are_read_through_the_placement_index(tmp_path):
    """SQLite's statistics keep one average of rows per label: 2 pair results beside 2,000
    others (as 12,500 beside 2.5 million in docs/scale.md's fleet) look like half the table, and
    the pair tests' read (place --across-nodes, fleet pairs) walked every result in ended_at
    order unless the label is said to be seldom (Dialect.seldom): with ANALYZE's figures, the
    read the store runs goes through ix_results_placement, and still finds both tests."""
    import sqlite3

    from tests.placement.history import plant_pair_tests
    from wirewise.orchestrator.record.ingest import store_measurement
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.pair_results import pair_results
    from wirewise.record import ResultRecord

    path = tmp_path / "skewed.db"
    url = f"sqlite:///{path}"
    store_measurement(Store(url), [ResultRecord(workload="collective", node=f"n{i % 20}", gpus=[0, 1], gpu_count=2, op="all_reduce",
                                                bytes=1 << (10 + i % 20), params={"placement": "packed"}, busbw_gbs=100.0)
                                   for i in range(2000)])
    plant_pair_tests(url, "pairs-1", {("n1", "n2"): 90.0, ("n3", "n4"): 91.0})
    with sqlite3.connect(path) as conn:
        conn.execute("ANALYZE")
    store, statements = Store(url), []
    with store.read() as db:  # the store keeps this thread's connection: the read below runs on it
        db.connection.set_trace_callback(statements.append)
    assert {r.nodes for r in pair_results(store)} == {("n1", "n2"), ("n3", "n4")}
    (read,) = [sql for sql in statements if "node_count = 2" in sql]
    with sqlite3.connect(path) as conn:
        plan = " ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {read}"))
    assert "USING INDEX ix_results_placement" in plan, plan


def test_one_case_since_a_date_is_one_range_of_the_collective_index(tmp_path):
    """`results --fingerprint F --op OP --bytes N --since D` reads one case of one node type over
    the fleet: with the start time last in ix_results_collective (db/versions/0016) the read the
    store runs is one range of that index, not every sweep of the case (62,690 rows for 12,538
    at 10 million results, docs/scale.md), and still finds only the rows since D."""
    import sqlite3
    from datetime import datetime, timedelta, timezone

    from wirewise.orchestrator.record.ingest import store_measurement
    from wirewise.orchestrator.report.aggregate import aggregate
    from wirewise.orchestrator.results.filters import parse_filters, resolve
    from wirewise.orchestrator.store import Store
    from wirewise.record import ResultRecord

    path = tmp_path / "sweeps.db"
    url = f"sqlite:///{path}"
    start = datetime(2026, 11, 1, tzinfo=timezone.utc)
    store_measurement(Store(url), [ResultRecord(workload="collective", node=f"n{i % 50}", gpus=[0, 1], gpu_count=2, op="all_reduce",
                                                bytes=1 << (20 + i % 4), busbw_gbs=100.0 + i % 7,
                                                started_at=start + timedelta(days=i // 200))
                                   for i in range(2000)])
    with sqlite3.connect(path) as conn:
        conn.execute("ANALYZE")
        (fingerprint,) = conn.execute("SELECT DISTINCT fingerprint FROM results").fetchone() or (None,)
    store, statements = Store(url), []
    with store.read() as db:  # the store keeps this thread's connection: the read below runs on it
        db.connection.set_trace_callback(statements.append)
    filters = parse_filters(fingerprint=fingerprint, op="all_reduce", bytes="1M", since="2026-11-10", include_cpu=True)
    (group,) = aggregate(store, resolve(store, filters), None).rows
    assert group["count"] == 50  # the last day's 200 results, a quarter of them 1 MiB
    (read,) = [sql for sql in statements if "GROUP BY" in sql.upper()]
    with sqlite3.connect(path) as conn:
        plan = " ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {read}"))
    assert "USING INDEX ix_results_collective (" in plan and "op=? AND bytes=? AND started_at>?)" in plan, plan
