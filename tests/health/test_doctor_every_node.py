"""`doctor` over every node judges from one index of the history (issue 33): on both databases,
each node's verdict, judged rules, findings and notes equal what `doctor --node` gives it alone,
and each case's reference (its other results' median, spread, results, nodes) equals
summarize over those results, the calculation it replaced."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from tests.topology.common import NVL_QUADS, NVSWITCH_NAMED

SIZES = (1 << 28, 1 << 30)


def _plant(store) -> None:
    """Two wirings of four nodes each, two campaigns of three repeats of two collectives at two
    sizes and a training run per node; in the second, n2 runs 40% slow and n6's all_gather fails."""
    from wirewise.orchestrator.record.ingest import store_measurement
    from wirewise.record import ResultRecord
    from wirewise.topology import read_topology

    rng = random.Random(33)
    for wiring, nodes in ((NVL_QUADS, ("n1", "n2", "n3", "n4")), (NVSWITCH_NAMED, ("n5", "n6", "n7", "n8"))):
        topo = read_topology(wiring)
        for node in nodes:
            records = []
            for c, campaign in enumerate(("c1", "c2")):
                when = datetime(2026, 6, 1 + 7 * c, tzinfo=timezone.utc)
                slow = 0.6 if (node, campaign) == ("n2", "c2") else 1.0
                for op in ("all_reduce", "all_gather"):
                    failed = (node, campaign, op) == ("n6", "c2", "all_gather")
                    for size in SIZES:
                        for r in range(3):
                            at = when + timedelta(minutes=r)
                            records.append(ResultRecord(
                                workload="collective", node=node, gpus=[0, 1, 2, 3], gpu_count=4, campaign=campaign,
                                fingerprint=topo.fingerprint, fabric=topo.fabric, op=op, bytes=size, started_at=at,
                                busbw_gbs=None if failed else round(slow * rng.gauss(100, 2), 2),
                                status="failed" if failed else "ok", error="boom" if failed else None))
                records.append(ResultRecord(
                    workload="train", node=node, gpus=[0, 1, 2, 3], gpu_count=4, campaign=campaign, world_size=4,
                    fingerprint=topo.fingerprint, fabric=topo.fabric, model="mistral-7b", strategy="fsdp",
                    micro_batch=1, seq_len=2048, tokens_per_s=round(slow * rng.gauss(30_000, 300), 1),
                    step_time_s=0.3, started_at=when + timedelta(hours=1)))
            store_measurement(store, records, topo, node)


def test_every_node_at_once_judges_each_node_as_alone(url):
    from wirewise.orchestrator.health.doctor import doctor
    from wirewise.orchestrator.store import Store

    store = Store(url)
    _plant(store)
    every = doctor(store, record=False)
    assert every["nodes"] == [f"n{i}" for i in range(1, 9)]
    flagged = {(f["node"], f["check"]) for f in every["findings"]}
    assert {("n2", "busbw-below-baseline"), ("n2", "slower-than-peers"), ("n2", "tokens-below-baseline"),
            ("n6", "task-failed")} <= flagged
    for node in every["nodes"]:
        alone = doctor(store, node=node, record=False)
        assert alone["verdicts"][node] == every["verdicts"][node]
        assert alone["judged"][node] == every["judged"][node]
        assert alone["findings"] == [f for f in every["findings"] if f["node"] == node]
        assert alone["notes"] == [n for n in every["notes"] if n.startswith(f"{node}:")]


def test_each_reference_is_summarize_over_the_other_results(url):
    from wirewise.orchestrator.health.baseline import summarize
    from wirewise.orchestrator.health.judge import Cases, _latest, median_and_spread
    from wirewise.orchestrator.report.query import facts
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.results import Filters

    store = Store(url)
    _plant(store)
    cases = Cases(facts(store, Filters()))
    compared = 0
    for node, mine in cases.mine.items():
        for key, members in mine.items():
            for repeats in (1, 3, 5):
                judged = _latest(members, repeats)
                ids = {m["id"] for m in judged}
                others = [m for m in cases.groups[key] if m["id"] not in ids]
                old = summarize(key[0], key[1], {}, others)
                values, nodes = cases.others(key, node, judged)
                assert (*median_and_spread(values), len(values), nodes) == (old.median, old.scaled_mad, old.results, old.nodes)
                compared += 1
    assert compared == 8 * 5 * 3  # each node's four collective cases and its training case
