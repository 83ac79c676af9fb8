"""Fabric classes, groups, `switched`, per-pair helpers and bandwidth estimates."""

from __future__ import annotations

import pytest

from wirewise.topology import Topology, read_topology, topology_from_text
from wirewise.topology.classify import classify
from tests.topology.common import EXPECTED, FIXTURE_NAMES, NVL_QUADS, TOPO, as_text, fixture_text, matrix


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_fixture_matches_expected_json(name: str) -> None:
    topo = read_topology(TOPO / name)
    want = EXPECTED[name]
    assert topo.gpus == want["gpus"]
    assert topo.fabric == want["fabric"]
    assert topo.groups == want["groups"]
    if want["switched"] is not None:
        assert topo.switched is want["switched"]
    else:
        assert topo.switched is None, "the text cannot tell, so neither may we"


def test_switch_proof_depends_on_the_generation_link_count() -> None:
    nv4_quad = matrix(4, lambda i, j: "NV4")  # 12 links per GPU: exactly an A100's 12
    assert classify(nv4_quad, ["NVIDIA A100-SXM4-40GB"] * 4).switched is None
    # 12 links are more than a V100 has (6): only a switch explains them.
    assert classify(nv4_quad, ["Tesla V100-SXM2-32GB"] * 4).switched is True
    nv18_pairs = matrix(8, lambda i, j: "NV18")
    assert classify(nv18_pairs, ["NVIDIA H100 80GB HBM3"] * 8).switched is True
    assert classify(nv18_pairs, [None] * 8).switched is True  # more than any GPU's 18 links


def test_nvml_evidence_decides_where_the_matrix_cannot() -> None:
    nv4_quad = matrix(4, lambda i, j: "NV4")
    assert classify(nv4_quad, [None] * 4, switch_seen=True).switched is True
    assert classify(nv4_quad, [None] * 4, switch_seen=False).switched is False


def test_single_pcie_and_partial_shapes() -> None:
    assert classify([["X"]], [None]).fabric == "single"
    mixed_mesh = matrix(3, lambda i, j: "NV2" if {i, j} == {0, 1} else "NV1")  # all linked, unequal bonds
    result = classify(mixed_mesh, [None] * 3)
    assert (result.fabric, result.groups) == ("nvlink-partial", None)
    chain = matrix(3, lambda i, j: "NV1" if abs(i - j) == 1 else "SYS")  # 0-1-2, not a clique
    assert classify(chain, [None] * 3).fabric == "nvlink-partial"
    pairs = matrix(4, lambda i, j: "NV12" if i // 2 == j // 2 else "PHB")
    assert classify(pairs, [None] * 4).groups == [[0, 1], [2, 3]]
    interleaved = matrix(4, lambda i, j: "NV4" if i % 2 == j % 2 else "SYS")
    assert classify(interleaved, [None] * 4).groups == [[0, 2], [1, 3]]


def test_pair_helpers_and_bandwidth_from_generation() -> None:
    names = ["NVIDIA H200"] * 8
    topo = topology_from_text(as_text(read_topology(NVL_QUADS).links, names))
    assert topo.links[0][1] == "NV6" and topo.nvlinks(0, 1) == 6 and topo.nvlinks(0, 4) == 0
    assert topo.bandwidth_gbs(0, 1) == 150.0  # 6 links x 25 GB/s (NVLink 4)
    assert topo.bandwidth_gbs(0, 4) == 35.2  # PCIe Gen5 x16 (64) through host memory (SYS): x 0.55
    assert topo.bandwidth_gbs(3, 3) is None
    assert topo.pcie_level(0, 4) == "SYS" and topo.pcie_level(0, 1) is None  # hidden under NVLink
    assert topo.nvlink_generation == 4 and topo.gpu_model == "NVIDIA H200"


# Per-direction GB/s from the vendors' datasheets, which quote both directions together:
# H100 SXM "NVLink 900 GB/s" (18 links), B200 "1.8 TB/s" (18 links), A100 SXM "600 GB/s"
# (12 links), V100 SXM2 "300 GB/s" over 6 links (so 2 links: 100 / 2), A100 PCIe "PCIe Gen4:
# 64 GB/s".
@pytest.mark.parametrize(
    ("name", "label", "gbs"),
    [
        ("NVIDIA H100 80GB HBM3", "NV18", 900 / 2),
        ("NVIDIA B200", "NV18", 1800 / 2),
        ("NVIDIA A100-SXM4-80GB", "NV12", 600 / 2),
        ("Tesla V100-SXM2-16GB", "NV2", 300 / 6 * 2 / 2),
        ("NVIDIA A100 80GB PCIe", "PIX", 64 / 2),
    ],
)
def test_bandwidth_per_pair(name, label, gbs) -> None:
    topo = Topology(links=matrix(2, lambda i, j: label), gpu_names=[name, name])
    assert topo.bandwidth_gbs(0, 1) == gbs


def test_pcie_paths_rank_by_distance() -> None:
    """One switch beats a host bridge, which beats crossing sockets (nvidia-smi's legend order)."""
    def pair(label):
        return Topology(links=matrix(2, lambda i, j: label), gpu_names=["NVIDIA A100 80GB PCIe"] * 2).bandwidth_gbs(0, 1)

    assert pair("PIX") >= pair("PXB") > pair("NODE") >= pair("SYS") > 0


def test_measured_pcie_link_beats_the_model_default() -> None:
    pcie = {"max_gen": 4, "max_width": 8}
    topo = Topology(links=matrix(2, lambda i, j: "PIX"), gpu_names=["NVIDIA H200"] * 2, details={"gpus": [{"pcie": pcie}] * 2})
    assert topo.bandwidth_gbs(0, 1) == 16.0  # Gen4 x8, not the H200's Gen5 x16


def test_round_trip_through_json_keeps_the_classification() -> None:
    topo = read_topology(TOPO / "v100-sxm2-2gpu-nv6-plus-rtx3090-pcie-ansi.txt")
    again = Topology.model_validate(topo.model_dump(mode="json"))
    assert again.contract() == topo.contract()
    assert list(topo.contract()) == ["gpus", "gpu_names", "fabric", "switched", "groups", "links", "fingerprint"]


def test_shape_errors_in_a_model() -> None:
    with pytest.raises(ValueError, match="gpu_names has 1 entries for 2 GPUs"):
        Topology(links=matrix(2, lambda i, j: "SYS"), gpu_names=["x"])


def test_nvlink_text_of_mixed_models() -> None:
    text = "GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-1)\nGPU 1: Tesla V100 (UUID: GPU-2)\nGPU 2: Tesla V100 (UUID: GPU-3)\n"
    topo = topology_from_text(text + fixture_text("v100-sxm2-2gpu-nv6-plus-rtx3090-pcie-ansi.txt"))
    assert topo.gpu_model == "Tesla V100" and topo.bandwidth_gbs(1, 2) == 150.0
