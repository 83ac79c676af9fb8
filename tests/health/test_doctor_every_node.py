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
    from wirewise.orchestrator.results.rows import result_rows
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.results import Filters

    store = Store(url)
    _plant(store)
    cases = Cases(result_rows(store, Filters()))
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


def _plant_fleet(store) -> None:
    """Three wirings (four, five and two nodes), three campaigns the nodes took part in unevenly
    (b4 and b5 sat out the last, the c nodes ran only the first), collectives at three sizes in
    and out of place (one below min_bytes) and a training case; a slow node in the last campaign
    (a2) and one slow only before it (b3), failed and timed-out tasks, repeats started at the same
    moment, and NCCL transports read, one of them off NVLink (a1's newest packed run)."""
    from tests.topology.common import NVL_QUADS_NAMED
    from wirewise.orchestrator.record.ingest import store_measurement
    from wirewise.record import ResultRecord
    from wirewise.topology import read_topology

    rng = random.Random(3300)
    fleet = ((NVL_QUADS, ("a1", "a2", "a3", "a4")), (NVSWITCH_NAMED, ("b1", "b2", "b3", "b4", "b5")),
             (NVL_QUADS_NAMED, ("c1", "c2")))
    campaigns = {"s1": 1, "s2": 8, "s3": 15}
    for wiring, nodes in fleet:
        topo = read_topology(wiring)
        for node in nodes:
            records = []
            for campaign, day in campaigns.items():
                if (node[0] == "c" and campaign != "s1") or (node in ("b4", "b5") and campaign == "s3"):
                    continue
                when = datetime(2026, 6, day, tzinfo=timezone.utc)
                slow = 0.6 if (node, campaign) in (("a2", "s3"), ("b3", "s2")) else 1.0
                for op in ("all_reduce", "all_gather"):
                    for size in (1 << 20, *SIZES):
                        for in_place in (False, True):
                            failed = (node, campaign, op) == ("b2", "s3", "all_gather")
                            for r in range(3):
                                at = when + timedelta(minutes=0 if node == "a4" else r)  # a4's repeats start together
                                carried = None
                                if op == "all_reduce" and size == SIZES[0] and not in_place:
                                    carried = "SHM" if (node, campaign, r) == ("a1", "s3", 2) else "P2P/CUMEM"
                                records.append(ResultRecord(
                                    workload="collective", node=node, nodes=[node], gpus=[0, 1, 2, 3], gpu_count=4,
                                    world_size=4, campaign=campaign, fingerprint=topo.fingerprint, fabric=topo.fabric,
                                    op=op, bytes=size, in_place=in_place, started_at=at, ended_at=at,
                                    params={"transport": "default"}, extra={"device": "cuda"}, transport_carried=carried,
                                    busbw_gbs=None if failed else round(slow * rng.gauss(100, 3), 2),
                                    status="failed" if failed else "ok", error="boom" if failed else None))
                timeout = (node, campaign) == ("a3", "s3")
                records.append(ResultRecord(
                    workload="train", node=node, gpus=[0, 1, 2, 3], gpu_count=4, campaign=campaign, world_size=4,
                    fingerprint=topo.fingerprint, fabric=topo.fabric, model="mistral-7b", strategy="fsdp",
                    micro_batch=1, seq_len=2048, tokens_per_s=None if timeout else round(slow * rng.gauss(30_000, 500), 1),
                    step_time_s=None if timeout else 0.3, status="timeout" if timeout else "ok",
                    started_at=when + timedelta(hours=1)))
            store_measurement(store, records, topo, node)


def test_every_node_reads_find_what_the_facts_of_every_result_find(url):
    """The fleet's judgement read a case at a time in SQL (health/every_node.py) against
    judge_history over every result as a result row (what `doctor` over every node read before issue
    33), and against each node's `doctor --node`: the same findings, notes and judged rules."""
    from wirewise.orchestrator.health.baseline import imported
    from wirewise.orchestrator.health.doctor import doctor
    from wirewise.orchestrator.health.judge import judge_history
    from wirewise.orchestrator.health.rules import default_rules
    from wirewise.orchestrator.results.rows import result_rows
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.health import result_runs, results_in_one_domain
    from wirewise.orchestrator.store.results import Filters

    store = Store(url)
    _plant_fleet(store)
    every = doctor(store, record=False)
    history = result_rows(store, Filters())
    nodes = sorted({f["node"] for f in history})
    assert every["nodes"] == nodes == ["a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4", "b5", "c1", "c2"]
    before = judge_history(nodes, history, default_rules(), imported(store, {f["fingerprint"] for f in history}),
                           runs=lambda ids: result_runs(store, ids), in_one_domain=lambda ids: results_in_one_domain(store, ids))
    assert every["findings"] == [f.to_json() for f in before.findings]
    assert every["notes"] == before.notes
    assert every["judged"] == {node: sorted(before.judged[node]) for node in nodes}
    flagged = {(f["node"], f["check"]) for f in every["findings"]}
    assert {("a2", "busbw-below-baseline"), ("a2", "slower-than-peers"), ("b2", "task-failed"), ("a3", "task-failed"),
            ("a1", "transport-off-nvlink")} <= flagged
    assert not {check for node, check in flagged if node == "b3"} & {"slower-than-peers"}  # slow in s2, not its latest
    assert any(n.startswith("c1:") and "same-fingerprint peers" in n for n in every["notes"])
    for node in nodes:
        alone = doctor(store, node=node, record=False)
        assert alone["verdicts"][node] == every["verdicts"][node]
        assert alone["judged"][node] == every["judged"][node]
        assert alone["findings"] == [f for f in every["findings"] if f["node"] == node]
        assert alone["notes"] == [n for n in every["notes"] if n.startswith(f"{node}:")]


def test_without_reads_as_the_sorted_values_less_the_taken():
    """judge.Without: the k-th of sorted values less some of them (equal ones too) as a copy with
    those values deleted reads, and median_and_spread over it as over that copy."""
    from bisect import bisect_left

    from wirewise.orchestrator.health.judge import Without, median_and_spread

    rng = random.Random(7)
    for _ in range(300):
        ordered = sorted(rng.choice([rng.randint(0, 5), rng.random()]) for _ in range(rng.randint(2, 30)))
        taken = rng.sample(ordered, rng.randint(0, min(4, len(ordered) - 1)))
        copy = list(ordered)
        for value in taken:
            del copy[bisect_left(copy, value)]
        without = Without(ordered, taken)
        assert len(without) == len(copy)
        assert [without[i] for i in range(len(copy))] == copy
        assert median_and_spread(without) == median_and_spread(copy)
