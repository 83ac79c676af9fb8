"""A round of pair tests read back from the store (wirewise.orchestrator.fleet.pairs): each
test's figure (out of place where both forms were measured), the first line of a failed test's
error, a test with no result said so; the campaign's results read once for the round, however
many pairs it holds. The results are stored rows of a real SQLite store, as collect stores them."""

from __future__ import annotations

from datetime import datetime, timezone
from types import SimpleNamespace


def _row(task: str, pair: tuple[str, str], in_place: bool, busbw: float | None, status: str = "ok",
         error: str | None = None) -> dict:
    now = datetime.now(timezone.utc)
    return dict(record_id=f"{task}-{in_place}", task_id=task, campaign="pairs-t", workload="collective", params={"placement": "pair"}, placement="pair",
                node=pair[0], node_count=2, nodes=list(pair), gpus=[0], gpu_count=1, status=status, error=error,
                started_at=now, ended_at=now, versions={}, env={}, op="all_reduce", bytes=1 << 30, in_place=in_place,
                busbw_gbs=busbw, extra={})


def test_a_rounds_measures_read_the_campaign_once(tmp_path, monkeypatch):
    from sqlalchemy import insert

    from wirewise.orchestrator.fleet import pairs
    from wirewise.orchestrator.store import Store, pair_results
    from wirewise.orchestrator.store.schema import RESULTS

    store = Store(f"sqlite:///{tmp_path / 'wirewise.db'}")
    round_ = [("a", "b"), ("c", "d"), ("e", "f")]
    rows = [_row("t0", round_[0], True, 30.0), _row("t0", round_[0], False, 41.5),
            _row("t1", round_[1], False, None, "failed", "NCCL error: unhandled system error\nmore lines")]
    store.write(lambda session: session.execute(insert(RESULTS), rows))
    reads = []
    real = pair_results.pair_results
    monkeypatch.setattr(pair_results, "pair_results", lambda *a, **k: reads.append(k) or real(*a, **k))
    campaign = pairs._PairCampaign.__new__(pairs._PairCampaign)  # the store and name are all a read needs
    campaign.store, campaign.name = store, "pairs-t"
    campaign.spec = SimpleNamespace(workloads=[SimpleNamespace(collectives=SimpleNamespace(ops=["all_reduce"]))])
    tasks = [SimpleNamespace(spec=SimpleNamespace(task_id=f"t{i}")) for i in range(3)]
    found = campaign.measures(round_, tasks, {"t0": "done", "t1": "failed", "t2": "timeout"})
    assert [(m.busbw_gbs, m.error) for m in found] == [
        (41.5, None), (None, "NCCL error: unhandled system error"), (None, "the test ended timeout without a result")]
    assert reads == [{"campaign": "pairs-t"}]


def test_a_named_nodes_standing_is_judged_against_its_whole_campaign(tmp_path):
    """`place --node b` and `run --node b` ask the standing of b alone. b is slow in every pair
    (10 GB/s beside the fleet's 40): judged against the whole campaign it is avoided, as
    `fleet pairs` and the standing of every node say. Judged on its own two pairs (the results
    read were only those naming b) it was its own reference and passed as healthy."""
    from sqlalchemy import insert

    from wirewise.orchestrator.fleet.standing import pair_standing
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.schema import RESULTS

    store = Store(f"sqlite:///{tmp_path / 'wirewise.db'}")
    tests = {("a", "b"): 10.0, ("b", "d"): 10.0, ("c", "d"): 40.0, ("a", "c"): 40.0, ("a", "d"): 40.0}
    rows = [_row(f"t{i}", pair, False, busbw) for i, (pair, busbw) in enumerate(tests.items())]
    store.write(lambda session: session.execute(insert(RESULTS), rows))
    every = pair_standing(store, None, 0.2)
    alone = pair_standing(store, ["b"], 0.2)
    assert "b" in every.avoid and alone.avoid["b"] == every.avoid["b"] and "b" not in alone.healthy
    assert alone.avoid["b"].startswith("pair test pairs-t: best pair 10")
