"""Pair tests on simulated fleets (wirewise.orchestrator.fleet.schedule and .verdict, pure
functions): quick mode names k planted bad nodes among n in about n/2 + 2k tests and no
healthy node; `all` tests every pair once, in rounds that share no node, and finds a slow link
between two healthy nodes; 3 nodes are told apart; what cannot be told apart is said so.

A simulated pair test measures 100 GB/s +-3% between healthy nodes and 10 GB/s when either
node is bad (or their link is): the figures of a fleet with one slow NIC."""

from __future__ import annotations

import random

import pytest

from wirewise.orchestrator.fleet.schedule import next_round, rounds_of_all
from wirewise.orchestrator.fleet.verdict import Measure, judge
from wirewise.orchestrator.health.rules import default_rules

TOLERANCE = default_rules().rules.pair_below_fleet.tolerance  # as `fleet pairs` judges by default


def run_fleet(n: int, bad: set[str] = frozenset(), slow_links=(), mode: str = "quick", failing: set[str] = frozenset(),
              seed: int = 7):
    """Every round the scheduler asks for, measured on the simulated fleet; (measures, rounds)."""
    rng = random.Random(seed)
    nodes = [f"n{i:04d}" for i in range(n)]
    measures, rounds = [], []
    while pairs := next_round(nodes, measures, mode, TOLERANCE):
        busy = [node for pair in pairs for node in pair]
        assert len(busy) == len(set(busy)), "a round shares a node"
        rounds.append(pairs)
        for a, b in pairs:
            if a in failing or b in failing:
                measures.append(Measure((a, b), None, "rank 1 ended with signal 9"))
            elif a in bad or b in bad or frozenset((a, b)) in slow_links:
                measures.append(Measure((a, b), 10.0 * rng.uniform(0.9, 1.1)))
            else:
                measures.append(Measure((a, b), 100.0 * rng.uniform(0.97, 1.03)))
    return nodes, measures, rounds


@pytest.mark.parametrize("n,k", [(1000, 1), (1000, 5), (1000, 20), (64, 3), (7, 1), (4, 1)])
def test_quick_mode_names_the_bad_nodes_in_about_half_n_plus_two_k_tests(n, k):
    rng = random.Random(n * 100 + k)
    bad = set(rng.sample([f"n{i:04d}" for i in range(n)], k))
    nodes, measures, rounds = run_fleet(n, bad)
    verdict = judge(nodes, measures, TOLERANCE)
    assert set(verdict.bad_nodes) == bad and not verdict.bad_pairs and not verdict.suspects
    assert len(measures) <= n // 2 + 2 * k + 1  # the odd node out, tested in round 2
    assert len(rounds) <= 3
    for node in bad:
        evidence = verdict.bad_nodes[node]
        assert evidence["ratio"] < 0.2 and evidence["reference_gbs"] == pytest.approx(100, rel=0.05)
        assert all(p["busbw_gbs"] < 12 for p in evidence["pairs"])  # every test with it was slow
        assert any(p["with"] in verdict.known_good for p in evidence["pairs"])  # one against a healthy node


def test_a_healthy_fleet_is_n_over_2_tests_and_nothing_flagged():
    nodes, measures, rounds = run_fleet(100)
    verdict = judge(nodes, measures, TOLERANCE)
    assert (len(measures), len(rounds), verdict.flagged) == (50, 1, False)
    assert verdict.spread < 0.07 and verdict.known_good == nodes


def test_three_nodes_need_the_third_pair_to_tell_the_slow_one():
    """On 3 nodes a slow node is in two of the three pairs: the third, between the healthy two,
    is what tells it apart (quick mode tests every pair there)."""
    for slow in ("n0000", "n0001", "n0002"):
        nodes, measures, rounds = run_fleet(3, {slow})
        verdict = judge(nodes, measures, TOLERANCE)
        assert sorted(verdict.bad_nodes) == [slow] and len(measures) == 3 and len(rounds) == 3
        assert sorted(verdict.known_good) == sorted(set(nodes) - {slow})


def test_all_mode_tests_every_pair_once_and_finds_a_slow_link():
    link = frozenset(("n0002", "n0007"))
    nodes, measures, rounds = run_fleet(10, slow_links={link}, mode="all")
    assert len(measures) == 45 == len({m.key for m in measures}) and len(rounds) == 9
    verdict = judge(nodes, measures, TOLERANCE)
    assert not verdict.bad_nodes and [frozenset(p["nodes"]) for p in verdict.bad_pairs] == [link]
    assert verdict.bad_pairs[0]["why"].startswith("a slow link")
    assert sum(len(r) for r in rounds_of_all(list(range(7)))) == 21 and len(rounds_of_all(list(range(7)))) == 7


def test_a_node_whose_tests_fail_is_bad_with_their_errors():
    nodes, measures, _ = run_fleet(8, failing={"n0005"})
    verdict = judge(nodes, measures, TOLERANCE)
    assert list(verdict.bad_nodes) == ["n0005"]
    assert verdict.bad_nodes["n0005"]["busbw_gbs"] is None
    assert all(p["error"].startswith("rank 1") for p in verdict.bad_nodes["n0005"]["pairs"])


def test_what_cannot_be_told_apart_is_said_so():
    """Two nodes and a failed test: one of them is bad, nobody can say which."""
    nodes, measures, _ = run_fleet(2, failing={"n0001"})
    verdict = judge(nodes, measures, TOLERANCE)
    assert verdict.flagged and not verdict.bad_nodes and sorted(verdict.suspects) == nodes
    assert verdict.bad_pairs[0]["why"].startswith("not told apart")
    assert verdict.to_json()["bad_pairs"] == [["n0000", "n0001"]]


def test_the_latest_test_of_a_pair_counts():
    first = Measure(("a", "b"), None, "failed once")
    verdict = judge(["a", "b", "c", "d"], [first, Measure(("c", "d"), 100.0), Measure(("a", "b"), 99.0)], TOLERANCE)
    assert not verdict.flagged and verdict.tests == 3


def test_the_json_keys_are_the_documented_ones():
    """docs/contracts.md lists `fleet pairs --json`'s keys: the report's are those of the verdict
    and of the run around it."""
    import re

    from tests.conftest import ROOT

    doc = (ROOT / "docs" / "contracts.md").read_text()
    bullet = doc.split("- `wirewise fleet pairs --json`", 1)[1].split("\n- ", 1)[0].split(":", 1)[1]
    listed = re.findall(r"`([a-z_]+)`", bullet)
    run = ["campaign", "mode", "op", "bytes", "backend", "ranks_per_node", "nodes", "rounds", "left_out"]
    opened = ["findings", "node", "reason"]  # the findings the verdict opened (wirewise.orchestrator.fleet.pair_findings)
    assert listed == run + list(judge(["a", "b"], [Measure(("a", "b"), 1.0)], TOLERANCE).to_json()) + opened


def _domains_fleet(bad: set[str] = frozenset()):
    """Eight nodes in two NVLink domains of four (GB200 trays): a pair inside a domain measures
    745 GB/s +-3%, across domains 298 (CoreWeave's nccl-tests README: one rack, and across
    twenty); a bad node's pairs a tenth of their scope's figure. Every pair tested (mode all)."""
    rng = random.Random(11)
    nodes = [f"n{i}" for i in range(8)]
    domain = {node: i // 4 for i, node in enumerate(nodes)}

    def scope(pair):
        return "nvlink-domain" if domain[pair[0]] == domain[pair[1]] else "network"

    measures = []
    while pairs := next_round(nodes, measures, "all", TOLERANCE, scope):
        for pair in pairs:
            figure = (745.0 if scope(pair) == "nvlink-domain" else 298.0) * rng.uniform(0.97, 1.03)
            measures.append(Measure(pair, figure / 10 if set(pair) & bad else figure))
    return nodes, measures, scope


def test_pairs_across_nvlink_domains_are_judged_apart_from_pairs_inside_one():
    """Judged as one scope, every healthy pair across domains is 'slow' against the NVLink pairs
    (298 vs 745 GB/s); judged by scope, nothing is flagged, each scope with its own figure."""
    nodes, measures, scope = _domains_fleet()
    pooled = judge(nodes, measures, TOLERANCE)
    assert pooled.flagged  # what judging the two fabrics as one did
    verdict = judge(nodes, measures, TOLERANCE, scope)
    assert not verdict.flagged and verdict.known_good == nodes
    assert verdict.scopes["nvlink-domain"]["reference_gbs"] == pytest.approx(745, rel=0.05)
    assert verdict.scopes["network"]["reference_gbs"] == pytest.approx(298, rel=0.05)
    assert verdict.reference_gbs is None and {p["scope"] for p in verdict.pairs} == {"nvlink-domain", "network"}
    assert verdict.scopes["nvlink-domain"]["tests"] == 12 and verdict.scopes["network"]["tests"] == 16


def test_a_bad_node_is_named_with_its_scopes_figures_and_partners_of_its_scope():
    nodes, measures, scope = _domains_fleet({"n2"})
    verdict = judge(nodes, measures, TOLERANCE, scope)
    assert sorted(verdict.bad_nodes) == ["n2"] and not verdict.bad_pairs and "n2" not in verdict.known_good
    evidence = verdict.bad_nodes["n2"]
    assert evidence["reference_gbs"] == pytest.approx(verdict.scopes[evidence["scope"]]["reference_gbs"])
    assert evidence["threshold_gbs"] == pytest.approx(verdict.scopes[evidence["scope"]]["threshold_gbs"])
    assert {p["with"] for p in evidence["pairs"]} == set(nodes) - {"n2"}  # every test with it, each with its scope
    assert evidence["partners"] and all(scope(("n2", n)) == evidence["scope"] for n in evidence["partners"])
