"""select_gpus on the saved wirings of tests/fixtures/topo (expected.json lists their classes).

The expected sets are read off the wiring by hand: the H200 NVL file has two NV6 quads
(0-3, 4-7) joined by SYS; DGX-1's hybrid cube mesh has NVLink quads 0-3 and 4-7 with one link
each between them; the A100 PCIe file has NV12 bridged pairs, 0-3 on NUMA node 0."""

from __future__ import annotations

from itertools import combinations

import pytest

from tests.topology.common import NVL_QUADS, TOPO
from wirewise.orchestrator.placement import Unplaceable, select_gpus
from wirewise.orchestrator.placement.wiring import Wiring
from wirewise.topology import read_topology

DGX1 = TOPO / "v100-dgx1-8gpu-hybrid-cube-mesh-ib-old-legend.txt"
A100_PAIRS = TOPO / "a100-pcie-8gpu-nv12-bridge-pairs-empty-affinity-truncated.txt"
NVSWITCH = TOPO / "synthetic-h200-sxm-8gpu-nvswitch.txt"
PCIE = TOPO / "rtx4090-8gpu-pcie-sys-2nic.txt"
SINGLE = TOPO / "device-h200-1gpu.txt"
QUADS = ({0, 1, 2, 3}, {4, 5, 6, 7})


@pytest.fixture(scope="module")
def nvl():
    return read_topology(NVL_QUADS)


def test_packed_four_on_nvl_is_one_quad(nvl) -> None:
    assert set(select_gpus(nvl, 4)) in QUADS


def test_packed_two_on_nvl_is_a_pair_inside_one_quad(nvl) -> None:
    pair = set(select_gpus(nvl, 2))
    assert any(pair <= quad for quad in QUADS)


def test_busy_gpus_push_four_to_the_whole_free_quad(nvl) -> None:
    assert select_gpus(nvl, 4, free=[2, 3, 4, 5, 6, 7]) == [4, 5, 6, 7]


def test_pair_leaves_the_free_trio_of_a_quad_whole(nvl) -> None:
    # 0, 1 and 4 busy: taking 2,3 leaves 5,6,7 joined by NVLink; 5,6 would strand 7 by itself.
    assert select_gpus(nvl, 2, free=[2, 3, 5, 6, 7]) == [2, 3]


def test_spread_four_on_nvl_takes_two_from_each_quad(nvl) -> None:
    chosen = set(select_gpus(nvl, 4, "spread"))
    assert [len(chosen & quad) for quad in QUADS] == [2, 2]


def test_spread_two_crosses_the_quads(nvl) -> None:
    chosen = set(select_gpus(nvl, 2, "spread"))
    assert [len(chosen & quad) for quad in QUADS] == [1, 1]


def test_spread_uneven_free_gpus_fill_what_is_left(nvl) -> None:
    chosen = select_gpus(nvl, 4, "spread", free=[0, 4, 5, 6, 7])
    assert 0 in chosen and len(chosen) == 4


@pytest.mark.parametrize("path", [NVSWITCH, PCIE, SINGLE, DGX1])
def test_spread_without_groups_is_unplaceable(path) -> None:
    with pytest.raises(Unplaceable, match="spread"):
        select_gpus(read_topology(path), 1 if path == SINGLE else 4, "spread")


def test_spread_with_one_group_left_free_is_unplaceable(nvl) -> None:
    with pytest.raises(Unplaceable, match="one NVLink group"):
        select_gpus(nvl, 2, "spread", free=[4, 5, 6, 7])


def test_dgx1_four_is_one_cube_face() -> None:
    assert set(select_gpus(read_topology(DGX1), 4)) in QUADS


def test_a100_pairs_two_is_a_bridged_pair() -> None:
    assert select_gpus(read_topology(A100_PAIRS), 2) in ([0, 1], [2, 3], [4, 5], [6, 7])


def test_a100_pairs_four_is_two_pairs_on_one_numa_node() -> None:
    assert set(select_gpus(read_topology(A100_PAIRS), 4)) in QUADS


def test_nvswitch_bandwidth_is_flat_and_numa_breaks_the_tie() -> None:
    topo = read_topology(NVSWITCH)
    wiring = Wiring.of(topo)
    # Every pair NV18 through the switch: a GPU sends at most its 18 links x 25 GB/s x 0.8.
    assert {wiring.model_busbw(s) for k in (2, 4, 8) for s in combinations(range(8), k)} == {360.0}
    assert select_gpus(topo, 4) == [0, 1, 2, 3]
    # GPUs 4-7 share NUMA node 1, so 5,6,7 beats 1,5,6 at the same bandwidth.
    assert topo.numa == [0, 0, 0, 0, 1, 1, 1, 1]
    assert select_gpus(topo, 3, free=[1, 5, 6, 7]) == [5, 6, 7]


def test_all_takes_every_free_gpu(nvl) -> None:
    assert select_gpus(nvl, None, "all") == list(range(8))
    assert select_gpus(nvl, 0, "all", free=[7, 3]) == [3, 7]
    assert select_gpus(nvl, 2, "all", free=[7, 3]) == [3, 7]
    with pytest.raises(Unplaceable, match="every free GPU"):
        select_gpus(nvl, 4, "all", free=[7, 3])


def test_explicit_indices_are_taken_as_given(nvl) -> None:
    assert select_gpus(nvl, 2, [5, 1]) == [1, 5]
    assert select_gpus(nvl, None, [6]) == [6]


@pytest.mark.parametrize(
    ("k", "policy", "free", "reason"),
    [
        (9, "packed", None, "9 GPUs asked for but only 8 free"),
        (3, "packed", [0, 1], "only 2 free"),
        (0, "packed", None, "at least 1"),
        (2, [1, 8], None, "GPU 8 does not exist"),
        (2, [1, 2], [2, 3], "GPU 1 is not free"),
        (3, [1, 2], None, "3 GPUs asked for but 2 indices"),
        (2, [1, 1], None, "twice"),
        (2, "closest", None, "unknown placement policy"),
        (2, "packed", [0, 12], "free GPU 12 does not exist"),
    ],
)
def test_bad_requests_say_why(nvl, k, policy, free, reason) -> None:
    with pytest.raises(Unplaceable, match=reason) as caught:
        select_gpus(nvl, k, policy, free)
    assert "\n" not in str(caught.value)
