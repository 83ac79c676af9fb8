"""Requests over several nodes: nodes first (one wiring, equal GPUs per node, fewest leaf
switches), then GPUs on each."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.topology.common import NVL_QUADS, TOPO
from wirewise.orchestrator.placement import Unplaceable
from wirewise.orchestrator.placement.nodes import Candidate, choose_nodes
from wirewise.topology import read_topology

NVL = read_topology(NVL_QUADS)
NVSWITCH = read_topology(TOPO / "synthetic-h200-sxm-8gpu-nvswitch.txt")
ALL = list(range(8))


def test_a_request_that_fits_one_node_takes_the_snuggest_fast_one() -> None:
    nodes = [Candidate("full", NVL, ALL), Candidate("quad-left", NVL, [4, 5, 6, 7]), Candidate("scattered", NVL, [0, 1, 4, 5, 6])]
    choice = choose_nodes(nodes, 4)
    assert choice.nodes == [("quad-left", [4, 5, 6, 7])]  # a whole quad, and "full" stays whole
    assert choice.predicted_busbw_gbs == 360.0


def test_two_nodes_of_one_wiring_eight_each() -> None:
    nodes = [Candidate("a", NVL, ALL), Candidate("b", NVL, [0, 1, 2, 3, 4, 5]), Candidate("c", NVL, ALL)]
    choice = choose_nodes(nodes, 16)
    assert choice.nodes == [("a", ALL), ("c", ALL)] and choice.per_node == 8


def test_equal_gpus_per_node_and_one_wiring_only() -> None:
    """12 GPUs: the NVSwitch node cannot join NVL nodes (another fingerprint); three NVL nodes
    with a quad free each give 3 x 4."""
    nodes = [Candidate("sw", NVSWITCH, ALL)] + [Candidate(f"nvl{i}", NVL, [4, 5, 6, 7]) for i in range(3)]
    choice = choose_nodes(nodes, 12)
    assert choice.per_node == 4 and [gpus for _, gpus in choice.nodes] == [[4, 5, 6, 7]] * 3
    assert choice.fingerprint == NVL.fingerprint


def test_fewest_leaf_switches_best_fit() -> None:
    names = ["n1", "n2", "n3", "n4", "n5"]
    nodes = [Candidate(name, NVL, ALL) for name in names]
    leaf_of = {"n1": "s1", "n2": "s1", "n3": "s1", "n4": "s2", "n5": "s2"}
    choice = choose_nodes(nodes, 16, leaf_of)
    assert [name for name, _ in choice.nodes] == ["n4", "n5"] and choice.switches == 1  # s1 stays whole
    choice = choose_nodes(nodes, 32, leaf_of)
    assert choice.switches == 2 and len(choice.nodes) == 4


def test_no_room_is_unplaceable() -> None:
    nodes = [Candidate("a", NVL, [0, 1, 2]), Candidate("b", NVL, [0, 1])]
    with pytest.raises(Unplaceable, match="equal GPUs per node"):
        choose_nodes(nodes, 7)


def test_place_across_stored_nodes(db_url: str) -> None:
    from tests.conftest import wirewise, wirewise_json
    from tests.placement.history import plant_all_reduce
    from tests.topology.common import NVL_QUADS_NAMED, NVSWITCH_NAMED

    for name in ("nvl-a", "nvl-b"):
        plant_all_reduce(db_url, read_topology(NVL_QUADS_NAMED), name, {})
    plant_all_reduce(db_url, read_topology(NVSWITCH_NAMED), "sw-a", {})
    out = wirewise_json("place", "--gpus", "16", "--across-nodes", "--db", db_url)
    assert [row["node"] for row in out["nodes"]] == ["nvl-a", "nvl-b"] and out["per_node"] == 8
    assert out["predicted_busbw_gbs"] == 44.1  # 4 + 4 across the quads, inside each node
    out = wirewise_json("place", "--gpus", "8", "--across-nodes", "--db", db_url)
    assert len(out["nodes"]) == 1 and out["predicted_busbw_gbs"] == 360.0  # the NVSwitch node
    assert out["nodes"][0]["node"] == "sw-a"
    proc = wirewise("place", "--gpus", "24", "--across-nodes", "--db", db_url)
    assert proc.returncode == 2 and "cannot be placed" in proc.stderr


def test_stored_nodes_without_names_are_placed_without_a_figure(db_url: str) -> None:
    from tests.conftest import wirewise_json
    from tests.placement.history import plant_all_reduce

    plant_all_reduce(db_url, NVSWITCH, "bare-sw", {})
    out = wirewise_json("place", "--gpus", "8", "--across-nodes", "--db", db_url)
    assert out["nodes"][0]["node"] == "bare-sw" and out["predicted_busbw_gbs"] is None
    assert any("GPU model unknown" in reason for reason in out["reasons"])
def test_what_pair_tests_measured_comes_first_and_a_bad_node_is_left_out() -> None:
    """Nodes found healthy first (best measured busbw first), none flagged, no two joined by a
    link judged slow; with nothing measured among them, the leaf switches decide as before."""
    from wirewise.orchestrator.placement.nodes import Measured

    nodes = [Candidate(name, NVL, ALL) for name in ("n1", "n2", "n3", "n4", "n5")]
    leaf_of = {"n1": "s1", "n2": "s1", "n3": "s2", "n4": "s2", "n5": "s2"}
    assert [n for n, _ in choose_nodes(nodes, 16, leaf_of).nodes] == ["n1", "n2"]  # the smallest switch that holds both
    measured = Measured(avoid={"n1": "pair test p: best pair 9 GB/s"}, healthy={"n3", "n4", "n5"},
                        busbw={frozenset(("n3", "n4")): 95.0, frozenset(("n4", "n5")): 99.0},
                        slow_links={frozenset(("n4", "n5"))})
    choice = choose_nodes(nodes, 16, leaf_of, measured)
    assert [n for n, _ in choice.nodes] == ["n4", "n3"]  # n4's best pair first; n5 joins n4 over a slow link
    assert "left out n1: pair test p: best pair 9 GB/s" in choice.reasons
    assert any("pair tests" in reason for reason in choice.reasons)
    with pytest.raises(Unplaceable, match="every node is to be avoided"):
        choose_nodes(nodes[:1], 8, None, measured)


def test_place_across_nodes_weighs_the_stored_pair_tests(url: str) -> None:
    """`place --across-nodes` on four stored nodes of one wiring: without pair results the first
    two; after a pair test found n1 slow (its tests with n2 and n3 at 9 GB/s, the healthy pairs
    near 100), n1 is left out with its evidence and nodes measured healthy are taken. On both
    databases: the pair tests' read says its label is seldom to SQLite alone (Dialect.seldom)."""
    from tests.conftest import wirewise_json
    from tests.placement.history import plant_all_reduce, plant_pair_tests

    for name in ("n1", "n2", "n3", "n4"):
        plant_all_reduce(url, NVL, name, {})
    assert [r["node"] for r in wirewise_json("place", "--gpus", "16", "--across-nodes", "--db", url)["nodes"]] == ["n1", "n2"]
    plant_pair_tests(url, "pairs-1", {("n1", "n2"): 9.0, ("n3", "n4"): 101.0, ("n1", "n3"): 9.1, ("n2", "n4"): 98.0})
    out = wirewise_json("place", "--gpus", "16", "--across-nodes", "--db", url)
    assert [r["node"] for r in out["nodes"]] == ["n3", "n4"]
    (left,) = [r for r in out["reasons"] if r.startswith("left out")]
    assert left.startswith("left out n1: pair test pairs-1: best pair 9.1 GB/s busbw, 9% of the fleet's")
    plant_pair_tests(url, "pairs-2", {("n1", "n2"): 100.0, ("n3", "n4"): 97.0})  # n1 repaired and tested again
    out = wirewise_json("place", "--gpus", "16", "--across-nodes", "--db", url)
    assert not [r for r in out["reasons"] if r.startswith("left out")] and [r["node"] for r in out["nodes"]] == ["n1", "n2"]


def test_place_judges_the_pair_tests_by_the_sites_rules(db_url: str, tmp_path) -> None:
    """n1's pairs at 75 GB/s beside healthy ones near 100: the shipped pair-below-fleet tolerance
    (0.2) finds n1 slow, and `place --across-nodes` leaves it out; a site whose rules file allows
    0.3 (WIREWISE_RULES, or `rules` in the site's configuration file, as doctor reads it) finds
    n1 healthy, and `place --node n1` no longer warns. A rules file wirewise cannot read is one
    line, exit 2, as doctor says it."""
    from tests.conftest import wirewise, wirewise_json
    from tests.placement.history import plant_all_reduce, plant_pair_tests

    for name in ("n1", "n2", "n3", "n4"):
        plant_all_reduce(db_url, NVL, name, {})
    plant_pair_tests(db_url, "pairs-1", {("n1", "n2"): 75.0, ("n3", "n4"): 101.0, ("n1", "n3"): 76.0, ("n2", "n4"): 99.0})
    lenient = tmp_path / "lenient.yaml"
    lenient.write_text("rules:\n  pair-below-fleet:\n    tolerance: 0.3\n")
    site = tmp_path / "site.toml"
    site.write_text(f'rules = "{lenient.name}"\n')
    across = ("place", "--gpus", "16", "--across-nodes", "--db", db_url)
    on_n1 = ("place", "--gpus", "2", "--node", "n1", "--gpu-name", "NVIDIA H200", "--db", db_url)

    shipped = {"WIREWISE_RULES": None, "WIREWISE_SITE_CONFIG": str(tmp_path / "none.toml")}
    out = wirewise_json(*across, env=shipped)
    assert [r["node"] for r in out["nodes"]] == ["n3", "n4"]
    assert any(r.startswith("left out n1: pair test pairs-1: best pair 76 GB/s busbw") for r in out["reasons"]), out["reasons"]
    assert any(r.startswith("warning: --node n1 is one placement avoids") for r in wirewise_json(*on_n1, env=shipped)["reasons"])
    every = ("place", "--gpus", "32", "--across-nodes", "--db", db_url)
    assert wirewise(*every, env=shipped).returncode == 2  # three nodes left to place on
    for sites in ({**shipped, "WIREWISE_RULES": str(lenient)}, {"WIREWISE_RULES": None, "WIREWISE_SITE_CONFIG": str(site)}):
        out = wirewise_json(*across, env=sites)
        assert not [r for r in out["reasons"] if r.startswith("left out")], out["reasons"]
        assert sorted(r["node"] for r in wirewise_json(*every, env=sites)["nodes"]) == ["n1", "n2", "n3", "n4"]
        assert not [r for r in wirewise_json(*on_n1, env=sites)["reasons"] if r.startswith("warning")]
    lenient.write_text("rules:\n  pair-below-fleet:\n    tolerance: 2\n")
    proc = wirewise(*across, env={**shipped, "WIREWISE_RULES": str(lenient)})
    assert proc.returncode == 2 and proc.stderr.startswith(f"wirewise: error: {lenient}: rules.pair-below-fleet.tolerance")
    assert len(proc.stderr.splitlines()) == 1


def test_place_keeps_off_what_an_open_finding_names(db_url: str) -> None:
    """Open findings of the health rules (stored as `doctor`, a health check or `fleet pairs`
    store them): n1's pair-test finding (the node as a whole) keeps `place --across-nodes` off
    n1 and says why; n2's inactive NVLink on GPU 1 leaves GPU 1 out of `place --node n2`, said
    in the reasons; `place --node n1` warns. Once the findings are cleared, all is as before."""
    from tests.conftest import wirewise_json
    from tests.placement.history import plant_all_reduce
    from wirewise.orchestrator.health.findings import Finding
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.health import record_check

    for name in ("n1", "n2", "n3", "n4"):
        plant_all_reduce(db_url, NVL, name, {})
    store = Store(db_url)
    record_check(store, "n1", "pairs", {"pair-below-fleet"}, [Finding(
        "n1", "pair-below-fleet", "pair test pairs-1: best pair 0.1 GB/s", "check its link",
        metric="all_reduce.busbw", delta="-90.0%", key="pair-below-fleet|all_reduce")])
    record_check(store, "n2", "health-check", {"nvlink-inactive"}, [Finding(
        "n2", "nvlink-inactive", "GPU 1: NVLink 0 inactive", "reseat", metric="gpu1.nvlink", delta="-1",
        gpus=[1], key="nvlink-inactive|1")])

    across = wirewise_json("place", "--gpus", "16", "--across-nodes", "--db", db_url)
    assert "n1" not in [r["node"] for r in across["nodes"]]
    assert any(r.startswith("left out n1: open finding pair-below-fleet (all_reduce.busbw -90.0%)") for r in across["reasons"])
    on_n2 = wirewise_json("place", "--gpus", "2", "--node", "n2", "--gpu-name", "NVIDIA H200", "--db", db_url)
    assert 1 not in on_n2["gpus"] and "GPU 1 left out: open finding nvlink-inactive (gpu1.nvlink -1) (`wirewise fleet status`)" in on_n2["reasons"]
    on_n1 = wirewise_json("place", "--gpus", "2", "--node", "n1", "--gpu-name", "NVIDIA H200", "--db", db_url)
    assert any(r.startswith("warning: --node n1 is one placement avoids: open finding pair-below-fleet") for r in on_n1["reasons"])

    record_check(store, "n1", "pairs", {"pair-below-fleet"}, [])
    record_check(store, "n2", "health-check", {"nvlink-inactive"}, [])
    assert not [r for r in wirewise_json("place", "--gpus", "16", "--across-nodes", "--db", db_url)["reasons"] if r.startswith("left out")]
    assert not [r for r in wirewise_json("place", "--gpus", "2", "--node", "n2", "--gpu-name", "NVIDIA H200", "--db", db_url)["reasons"] if "left out" in r]


def test_the_nodes_of_a_job_come_from_one_nvlink_domain_when_one_has_room() -> None:
    """Rack-scale NVLink: nodes of one domain talk over NVLink. Domain A holds two nodes, B
    four, and one node sits in none. Two nodes come from A (B stays whole for a larger job),
    three from B; five fit no domain: the choice spans them and says so."""
    a, b = ("uuid-a", 2), ("uuid-b", 32766)
    nodes = ([Candidate(f"a{i}", NVL, ALL, a) for i in (1, 2)] + [Candidate(f"b{i}", NVL, ALL, b) for i in (1, 2, 3, 4)]
             + [Candidate("hgx", NVL, ALL, None)])
    two = choose_nodes(nodes, 16)
    assert [name for name, _ in two.nodes] == ["a1", "a2"] and two.domain == a
    assert "inside one NVLink domain (uuid-a clique 2, 2 eligible node(s))" in two.reasons
    assert two.as_dict()["nvlink_domain"] == {"cluster_uuid": "uuid-a", "clique_id": 2}
    three = choose_nodes(nodes, 24)
    assert {name for name, _ in three.nodes} <= {"b1", "b2", "b3", "b4"} and three.domain == b
    five = choose_nodes(nodes, 40)
    assert five.domain is None and len(five.nodes) == 5
    assert "no NVLink domain has 5 such nodes (the most in one: 4): the job spans domains, over the network" in five.reasons
    assert choose_nodes([Candidate(n, NVL, ALL) for n in ("x", "y")], 16).as_dict()["nvlink_domain"] is None


def test_a_job_that_asks_its_node_count_gets_that_many_nodes() -> None:
    """`wirewise run --nodes 2 --gpus 4`: two nodes with four GPUs each (a whole quad on each),
    from the domain that holds two, though 8 GPUs would fit one node; a count no wiring has is
    said in the request's own terms."""
    a = ("uuid-a", 2)
    nodes = [Candidate(f"a{i}", NVL, ALL, a) for i in (1, 2)] + [Candidate("hgx", NVL, ALL, None)]
    choice = choose_nodes(nodes, 8, per_node=4)
    assert [(name, len(gpus)) for name, gpus in choice.nodes] == [("a1", 4), ("a2", 4)] and choice.domain == a
    assert choice.predicted_busbw_gbs == 360.0  # a whole NVLink quad on each node
    assert choose_nodes(nodes, 8, per_node=8).nodes == [("a1", ALL)]  # one node asked: the old way
    with pytest.raises(Unplaceable, match=r"4 node\(s\) x 4 GPU\(s\) cannot be placed"):
        choose_nodes(nodes, 16, per_node=4)


def test_between_nodes_the_figure_of_their_own_fabric_scope() -> None:
    """Pair tests measured 745 GB/s between nodes of domain A (a3: 700) and less across domains
    (CoreWeave's nccl-tests README: 745 inside one NVL72 rack, 298 across twenty), one cross pair
    at a bogus 900. Two nodes come from A, ranked by their best pair inside A (a3's 900 across
    domains says nothing of NVLink): a1 and a2, predicted at the slowest pair measured between
    them. Four nodes span domains: the network's pairs rank them and give the figure, never the
    NVLink one. A scope nothing was measured in gets none."""
    from wirewise.orchestrator.placement.nodes import Measured

    a = ("uuid-a", 1)
    nodes = ([Candidate(f"a{i}", NVL, ALL, a) for i in (1, 2, 3)] + [Candidate("b1", NVL, ALL, ("uuid-b", 1))]
             + [Candidate("h1", NVL, ALL, None)])
    measured = Measured(busbw={frozenset(("a1", "a2")): 745.0, frozenset(("a2", "a3")): 700.0,
                               frozenset(("a3", "b1")): 900.0, frozenset(("a1", "h1")): 298.0},
                        healthy={"a1", "a2", "a3", "b1", "h1"})
    inside = choose_nodes(nodes, 16, None, measured)
    assert sorted(name for name, _ in inside.nodes) == ["a1", "a2"] and inside.scope == "nvlink-domain"
    assert inside.between_gbs == 745.0 and inside.between_basis.startswith("measured between these nodes")
    spanning = choose_nodes(nodes, 32, None, measured)
    assert spanning.domain is None and spanning.scope == "network"
    assert sorted(name for name, _ in spanning.nodes) == ["a1", "a3", "b1", "h1"]
    assert spanning.as_dict()["between_nodes_busbw_gbs"] == 298.0  # the slowest network pair among them
    unmeasured = choose_nodes([Candidate(f"c{i}", NVL, ALL, ("uuid-c", 1)) for i in (1, 2)], 16, None, measured)
    assert (unmeasured.scope, unmeasured.between_gbs, unmeasured.between_basis) == ("nvlink-domain", None, None)


def _node_by_node(eligible: list[str], count: int, measured, alike: set[frozenset[str]]) -> list[str]:
    """The measured choice as defined, asked node by node (how it was computed before issue 33:
    each node's best pair read from every pair, each node's slow links checked against every
    node chosen, nodes x pairs and nodes x chosen); without a measured candidate, the nodes by
    name (no leaf switches known)."""
    if not any(n in measured.healthy or any(n in pair for pair in measured.busbw) for n in eligible):
        return sorted(eligible)[:count]
    best = {n: max((bw for pair, bw in measured.busbw.items() if n in pair and pair in alike), default=0.0) for n in eligible}
    chosen: list[str] = []
    later: list[str] = []
    for n in sorted(eligible, key=lambda n: (n not in measured.healthy, -best[n], n)):
        (later if any(frozenset((n, other)) in measured.slow_links for other in chosen) else chosen).append(n)
    return (chosen + later)[:count]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_the_measured_choice_is_the_node_by_node_definition(data) -> None:
    """Choosing among measured nodes reads each pair once (Measured.best_by_node,
    slow_partners: linear in nodes, where asking node by node was nodes x pairs, 131 s for 512
    of 12,500 nodes, docs/scale.md), and chooses as the definition does: random candidates,
    pairs (some with nodes that are not candidates, or avoided: they make a node known but rank
    nothing),
    tied busbw, slow links, healthy and avoided nodes."""
    from wirewise.orchestrator.placement.nodes import Measured

    names = [f"n{i:02d}" for i in range(data.draw(st.integers(2, 24)))]
    anyone = st.sampled_from(names + ["elsewhere-1", "elsewhere-2"])
    pair = st.tuples(anyone, anyone).filter(lambda p: p[0] != p[1]).map(frozenset)
    avoid = {n: "flagged" for n in data.draw(st.sets(st.sampled_from(names), max_size=len(names) - 2))}
    measured = Measured(avoid=avoid, busbw=data.draw(st.dictionaries(pair, st.sampled_from([90.0, 95.0, 99.0]), max_size=40)),
                        slow_links=data.draw(st.sets(pair, max_size=12)), healthy=data.draw(st.sets(st.sampled_from(names))))
    eligible = [n for n in names if n not in avoid]
    count = data.draw(st.integers(2, len(eligible)))
    choice = choose_nodes([Candidate(n, NVL, ALL) for n in names], 8 * count, None, measured)
    alike = {p for p in measured.busbw if p <= set(eligible)}  # the network's pairs among them: none sits in an NVLink domain
    assert [name for name, _ in choice.nodes] == _node_by_node(eligible, count, measured, alike)
