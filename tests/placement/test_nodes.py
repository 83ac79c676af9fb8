"""Requests over several nodes: nodes first (one wiring, equal GPUs per node, fewest leaf
switches), then GPUs on each."""

from __future__ import annotations

import pytest

from tests.topology.common import NVL_QUADS, TOPO
from wirewise.orchestrator.placement import Unplaceable
from wirewise.orchestrator.placement.nodes import NodeState, choose_nodes
from wirewise.topology import read_topology

NVL = read_topology(NVL_QUADS)
NVSWITCH = read_topology(TOPO / "synthetic-h200-sxm-8gpu-nvswitch.txt")
ALL = list(range(8))


def test_a_request_that_fits_one_node_takes_the_snuggest_fast_one() -> None:
    nodes = [NodeState("full", NVL, ALL), NodeState("quad-left", NVL, [4, 5, 6, 7]), NodeState("scattered", NVL, [0, 1, 4, 5, 6])]
    choice = choose_nodes(nodes, 4)
    assert choice.nodes == [("quad-left", [4, 5, 6, 7])]  # a whole quad, and "full" stays whole
    assert choice.predicted_busbw_gbs == 360.0


def test_two_nodes_of_one_wiring_eight_each() -> None:
    nodes = [NodeState("a", NVL, ALL), NodeState("b", NVL, [0, 1, 2, 3, 4, 5]), NodeState("c", NVL, ALL)]
    choice = choose_nodes(nodes, 16)
    assert choice.nodes == [("a", ALL), ("c", ALL)] and choice.per_node == 8


def test_equal_gpus_per_node_and_one_wiring_only() -> None:
    """12 GPUs: the NVSwitch node cannot join NVL nodes (another fingerprint); three NVL nodes
    with a quad free each give 3 x 4."""
    nodes = [NodeState("sw", NVSWITCH, ALL)] + [NodeState(f"nvl{i}", NVL, [4, 5, 6, 7]) for i in range(3)]
    choice = choose_nodes(nodes, 12)
    assert choice.per_node == 4 and [gpus for _, gpus in choice.nodes] == [[4, 5, 6, 7]] * 3
    assert choice.fingerprint == NVL.fingerprint


def test_fewest_leaf_switches_best_fit() -> None:
    names = ["n1", "n2", "n3", "n4", "n5"]
    nodes = [NodeState(name, NVL, ALL) for name in names]
    leaf_of = {"n1": "s1", "n2": "s1", "n3": "s1", "n4": "s2", "n5": "s2"}
    choice = choose_nodes(nodes, 16, leaf_of)
    assert [name for name, _ in choice.nodes] == ["n4", "n5"] and choice.switches == 1  # s1 stays whole
    choice = choose_nodes(nodes, 32, leaf_of)
    assert choice.switches == 2 and len(choice.nodes) == 4


def test_no_room_is_unplaceable() -> None:
    nodes = [NodeState("a", NVL, [0, 1, 2]), NodeState("b", NVL, [0, 1])]
    with pytest.raises(Unplaceable, match="equal GPUs per node"):
        choose_nodes(nodes, 7)


def test_place_across_stored_nodes(db_url: str) -> None:
    from tests.conftest import wirewise, wirewise_json
    from tests.placement.history import plant_all_reduce

    for name in ("nvl-a", "nvl-b"):
        plant_all_reduce(db_url, NVL, name, {})
    plant_all_reduce(db_url, NVSWITCH, "sw-a", {})
    out = wirewise_json("place", "--gpus", "16", "--across-nodes", "--db", db_url)
    assert [row["node"] for row in out["nodes"]] == ["nvl-a", "nvl-b"] and out["per_node"] == 8
    out = wirewise_json("place", "--gpus", "8", "--across-nodes", "--db", db_url)
    assert len(out["nodes"]) == 1 and out["predicted_busbw_gbs"] == 360.0  # the NVSwitch node
    assert out["nodes"][0]["node"] == "sw-a"
    proc = wirewise("place", "--gpus", "24", "--across-nodes", "--db", db_url)
    assert proc.returncode == 2 and "cannot be placed" in proc.stderr
