"""The guardrails and the parts of the loop that need no cluster: the drain budget per
partition (a node in several partitions is held to each) and per hour, and drains claimed in
the store by many processes at once (SQLite and PostgreSQL), which must together stay within
the limits."""

from __future__ import annotations

import multiprocessing as mp

import pytest

from wirewise.orchestrator.health.guard import Budget, share_limit
from wirewise.orchestrator.health.rules import Guardrails
from wirewise.orchestrator.slurm.nodes import parse_sinfo


def sinfo(*nodes: tuple[str, str, str, str]) -> str:
    """`sinfo -h -N -o SINFO_FIELDS` lines for (name, partition, state, reason) ('none': no reason set)."""
    return "".join(f"{name}|{partition}|{state}|gpu:h200:8(S:0-1)|nvl|root(0)|2026-12-01T10:00:00|{reason}\n"
                   for name, partition, state, reason in nodes)


def test_the_budget_per_partition_and_per_hour():
    states = parse_sinfo(sinfo(*[(f"n{i:02d}", "gpu*", "idle", "none") for i in range(30)], ("n30", "gpu*", "down*", "dead")))
    rails = Guardrails(max_share=0.1, max_per_hour=5)
    assert share_limit(31, rails) == 3 and share_limit(3, rails) == 1 and share_limit(10, rails) == 1
    budget = Budget(rails, states)
    assert budget("n01", 0, set()) is None and budget("n02", 1, {"n01"}) is None  # n30 down + n01 + n02 = 3
    assert budget("n03", 2, {"n01", "n02"}).startswith("guardrail max_share: partition gpu has 3 of 31 node(s) unavailable")
    assert budget("n04", 5, set()) == "guardrail max_per_hour: wirewise drained 5 node(s) in the last hour (at most 5)"
    beyond = Budget(rails, states, beyond=1)
    assert beyond("n03", 2, {"n01", "n02"}) is None and beyond.passed_beyond == ["n03"]
    assert beyond("n04", 3, {"n01", "n02", "n03"}) is not None  # one confirmed, no more
    shared = parse_sinfo(sinfo(("a", "gpu*", "idle", "none"), ("a", "debug", "idle", "none"),
                               ("b", "debug", "drained", "PSU swap | ticket 4711"), *[(f"n{i:02d}", "gpu*", "idle", "none") for i in range(30)]))
    assert Budget(rails, shared)("a", 0, set()) == ("guardrail max_share: partition debug has 1 of 2 node(s) unavailable "
                                                   "and allows 1 (max_share 0.1, at least one)")


def _claim(url: str, node: str, barrier, outcomes) -> None:
    from wirewise.orchestrator.health.guard import Budget
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.health import claim_drains

    states = parse_sinfo(sinfo(*[(f"n{i}", "gpu", "idle", "none") for i in range(8)]))
    store = Store(url)
    barrier.wait()
    [row] = claim_drains(store, [{"node": node, "reason": "wirewise:test:x:-1"}], Budget(Guardrails(max_share=0.25, max_per_hour=5), states),
                         "a test", 600)
    outcomes.put(row["outcome"])


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_drains_claimed_at_once_stay_within_the_limits(database, tmp_path, request):
    """Eight health checks that fire at the same moment on an 8-node partition (max_share 0.25:
    two nodes): the store lets exactly two drains through."""
    from wirewise.orchestrator.store import Store

    url = f"sqlite:///{tmp_path / 'wirewise.db'}" if database == "sqlite" else request.getfixturevalue("pg_url")
    Store(url)
    ctx = mp.get_context("spawn")
    barrier, outcomes = ctx.Barrier(8), ctx.Queue()
    procs = [ctx.Process(target=_claim, args=(url, f"n{i}", barrier, outcomes)) for i in range(8)]
    for p in procs:
        p.start()
    said = sorted(outcomes.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert said == ["claimed"] * 2 + ["held"] * 6


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_dry_run_is_told_the_drains_a_claim_is(database, tmp_path, request):
    """One drain claimed a moment ago, on n0 of an 8-node partition whose max_share allows
    one node out: Slurm does not show n0 drained yet, so a dry run's budget and a claim must
    both count the claim (the nodes claimed in the last RECENT_CLAIMS) and hold n1. The dry run
    counted only the hour's drains and said n1 would be drained where the claim held it.
    Two hours on, the window holds neither the claim nor its node."""
    from datetime import timedelta

    from wirewise.orchestrator.store import Store
    from wirewise.clock import utcnow
    from wirewise.orchestrator.store.health import claim_drains, drain_budget

    url = f"sqlite:///{tmp_path / 'wirewise.db'}" if database == "sqlite" else request.getfixturevalue("pg_url")
    store = Store(url)
    states = parse_sinfo(sinfo(*[(f"n{i}", "gpu", "idle", "none") for i in range(8)]))
    rails = Guardrails(max_share=0.125, max_per_hour=5)
    [first] = claim_drains(store, [{"node": "n0", "reason": "wirewise:test:x:-1"}], Budget(rails, states), "a test", 600)
    assert first["outcome"] == "claimed"
    [dry] = drain_budget(store, ["n1"], Budget(rails, states))
    assert dry is not None and dry.startswith("guardrail max_share: partition gpu has 1 of 8 node(s) unavailable")
    [held] = claim_drains(store, [{"node": "n1", "reason": "wirewise:test:x:-1"}], Budget(rails, states), "a test", 600)
    assert (held["outcome"], held["detail"]) == ("held", dry)
    assert drain_budget(store, ["n2", "n3"], Budget(rails, states), now=utcnow() + timedelta(hours=2)) == [
        None, "guardrail max_share: partition gpu has 1 of 8 node(s) unavailable and allows 1 (max_share 0.125, at least one)"]
    hourly = Guardrails(max_share=1.0, max_per_hour=1)  # the claim of n0 is the hour's one drain
    assert drain_budget(store, ["n2"], Budget(hourly, states)) == [
        "guardrail max_per_hour: wirewise drained 1 node(s) in the last hour (at most 1)"]


def test_placement_is_told_why_slurm_takes_no_job_on_a_node():
    """keep_off with the nodes as sinfo showed them (no store): an idle node that does not answer
    is 'not responding', a drained one 'drained' with its reason; a healthy idle one is not kept off."""
    from wirewise.orchestrator.health.verdicts import keep_off

    shown = parse_sinfo(sinfo(("a", "gpu*", "idle*", "none"), ("b", "gpu*", "drained", "PSU swap"), ("c", "gpu*", "idle", "none")))
    assert keep_off(None, ["a", "b", "c"], slurm_nodes=shown) == {
        "a": "not responding in Slurm (no reason)", "b": "drained in Slurm (PSU swap)"}


def _claim_one(url: str, barrier, outcomes) -> None:
    from wirewise.orchestrator.health.guard import Budget
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.health import claim_drains

    states = parse_sinfo(sinfo(*[(f"n{i}", "gpu", "idle", "none") for i in range(8)]))
    store = Store(url)
    barrier.wait()
    [row] = claim_drains(store, [{"node": "n0", "reason": "wirewise:test:x:-1"}], Budget(Guardrails(max_share=1.0, max_per_hour=5), states),
                         "a test", 600)
    outcomes.put((row["outcome"], row["detail"]))


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_one_node_claimed_at_once_by_many_is_claimed_once(database, tmp_path, request):
    """Four `fleet drain --apply` (or health checks) claim n0 at the same moment: one claims it,
    the others skip it saying who holds it, and the trail holds one claim (two drains at once
    each claimed it, repeated it and drained it, the second after the first had)."""
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.health import actions

    url = f"sqlite:///{tmp_path / 'wirewise.db'}" if database == "sqlite" else request.getfixturevalue("pg_url")
    Store(url)
    ctx = mp.get_context("spawn")
    barrier, outcomes = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_claim_one, args=(url, barrier, outcomes)) for _ in range(4)]
    for p in procs:
        p.start()
    said = sorted(outcomes.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert [outcome for outcome, _ in said] == ["claimed"] + ["skipped"] * 3
    assert all(detail.startswith("claimed by a test until ") for outcome, detail in said if outcome == "skipped")
    assert [(a["node"], a["outcome"]) for a in actions(Store(url))] == [("n0", "claimed")]


def test_a_claim_its_claimant_left_is_abandoned_and_counts_against_nothing(tmp_path):
    """A `fleet drain --apply` killed (SIGKILL) after its claim: the claim dangled `claimed`
    for ever, held the node and counted against max_per_hour. Once its time has passed the
    next claim marks it abandoned, claims the node, and the hour counts one drain, not two."""
    import time

    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.health import actions, claim_drains, drain_budget, release_claims

    store = Store(f"sqlite:///{tmp_path / 'wirewise.db'}")
    states = parse_sinfo(sinfo(*[(f"n{i}", "gpu", "idle", "none") for i in range(8)]))
    hourly = Guardrails(max_share=1.0, max_per_hour=1)
    [left] = claim_drains(store, [{"node": "n0", "reason": "wirewise:test:x:-1"}], Budget(hourly, states), "a killed one", 3)
    assert drain_budget(store, ["n1"], Budget(hourly, states)) == [
        "guardrail max_per_hour: wirewise drained 1 node(s) in the last hour (at most 1)"]
    time.sleep(3.5)  # its claimant's time passes
    assert drain_budget(store, ["n1"], Budget(hourly, states)) == [None]
    [again] = claim_drains(store, [{"node": "n0", "reason": "wirewise:test:x:-1"}], Budget(hourly, states), "the next", 600)
    assert again["outcome"] == "claimed"
    release_claims(store, [again["id"]], "interrupted", "stopped by SIGTERM")
    trail = [(a["asked_by"], a["outcome"]) for a in actions(store)]
    assert trail == [("a killed one", "abandoned"), ("the next", "interrupted")]
    assert drain_budget(store, ["n1"], Budget(hourly, states)) == [None]
