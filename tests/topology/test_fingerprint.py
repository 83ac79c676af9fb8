"""The fingerprint: the same wiring numbered differently gives the same value, other wiring another."""

from __future__ import annotations

import itertools
import random

import pytest

from wirewise.topology import topology_from_text
from wirewise.topology.fingerprint import fingerprint
from tests.topology.common import EXPECTED, FIXTURE_NAMES, as_text, fixture_text, matrix
from tests.topology.renumber import renumber_text

RENUMBERED = [
    "synthetic-h200-nvl-8gpu-two-quads.txt",
    "a100-pcie-8gpu-nv12-bridge-pairs-empty-affinity-truncated.txt",
    "v100-dgx1-8gpu-hybrid-cube-mesh-ib-old-legend.txt",
    "v100-sxm2-2gpu-nv6-plus-rtx3090-pcie-ansi.txt",
    "consumer-5gpu-pcie-phb-node-sys-club3090-46.txt",
    "a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt",
    "h100-sxm-8gpu-nvswitch-12nic-numaoff.txt",
]


def permutations_of(n: int) -> list[list[int]]:
    rng = random.Random(n)
    shuffled = [rng.sample(range(n), n) for _ in range(3)]
    return [list(reversed(range(n))), *shuffled]


@pytest.mark.parametrize("name", RENUMBERED)
def test_renumbered_text_keeps_fingerprint_and_class_and_maps_groups(name: str) -> None:
    text = fixture_text(name)
    original = topology_from_text(text, name)
    for perm in permutations_of(original.gpus):
        renumbered_text = renumber_text(text, perm)
        assert renumbered_text != text or perm == list(range(original.gpus))
        moved = topology_from_text(renumbered_text, f"{name} renumbered {perm}")
        for i, j in itertools.product(range(original.gpus), repeat=2):
            assert moved.links[perm[i]][perm[j]] == original.links[i][j]  # the rewrite is faithful
        assert moved.fingerprint == original.fingerprint, perm
        assert moved.fabric == original.fabric and moved.switched == original.switched
        if original.groups is None:
            assert moved.groups is None
        else:
            mapped = sorted(sorted(perm[g] for g in group) for group in original.groups)
            assert moved.groups == mapped, perm


def test_fixtures_with_different_wiring_have_different_fingerprints() -> None:
    prints = {name: topology_from_text(fixture_text(name)).fingerprint for name in FIXTURE_NAMES}
    # The H100 and H200 NVSwitch boxes print the same matrix (NV18 everywhere) and their texts
    # carry no GPU names: the same wiring as far as the text can tell (the DGX H100 of vllm
    # issue 13855 too, once its lost tabs are read). Polaris' own output and the Markdown table
    # of its user guide are the same node.
    alike = [
        {"h100-sxm-8gpu-nvswitch-12nic-numaoff.txt", "synthetic-h200-sxm-8gpu-nvswitch.txt",
         "lost-tabs-dgx-h100-8gpu-12nic-vllm-issue-13855.txt"},
        {"a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt", "markdown-table-polaris-a100-4gpu-argonne-user-guide.md"},
    ]
    assert [len({prints[n] for n in same}) for same in alike] == [1, 1]
    firsts = [prints[sorted(same)[0]] for same in alike]
    others = [prints[n] for n in FIXTURE_NAMES if not any(n in same for same in alike)]
    assert len(set(others + firsts)) == len(others) + len(firsts) == len(EXPECTED) - sum(len(s) - 1 for s in alike)


def test_gpu_model_is_part_of_the_wiring() -> None:
    nvswitch = matrix(8, lambda i, j: "NV18")
    h100 = fingerprint(nvswitch, ["NVIDIA H100 80GB HBM3"] * 8)
    h200 = fingerprint(nvswitch, ["NVIDIA H200"] * 8)
    assert h100 != h200
    assert fingerprint(nvswitch, ["H200"] * 8) == h200  # vendor prefix and spacing do not matter
    mixed = ["NVIDIA H200"] * 7 + ["NVIDIA H100 80GB HBM3"]
    assert fingerprint(nvswitch, mixed) == fingerprint(nvswitch, list(reversed(mixed)))
    assert fingerprint(nvswitch, mixed) not in (h100, h200)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (  # NV6 quads vs NV12 quads
            lambda i, j: "NV6" if i // 4 == j // 4 else "SYS",
            lambda i, j: "NV12" if i // 4 == j // 4 else "SYS",
        ),
        (  # two quads vs four pairs
            lambda i, j: "NV6" if i // 4 == j // 4 else "SYS",
            lambda i, j: "NV6" if i // 2 == j // 2 else "SYS",
        ),
        (  # quads under one NUMA node vs across sockets
            lambda i, j: "NV6" if i // 4 == j // 4 else "SYS",
            lambda i, j: "NV6" if i // 4 == j // 4 else "NODE",
        ),
        (  # pairs under one PCIe switch (PIX) vs pairs split across switches
            lambda i, j: "NV12" if i // 2 == j // 2 else ("PIX" if i // 4 == j // 4 else "SYS"),
            lambda i, j: "NV12" if i // 2 == j // 2 else ("PIX" if (i % 2) == (j % 2) else "SYS"),
        ),
    ],
)
def test_simple_variants_differ(one, other) -> None:
    names = ["NVIDIA H200"] * 8
    assert fingerprint(matrix(8, one), names) != fingerprint(matrix(8, other), names)


def test_nics_cpu_affinity_and_uuids_are_not_part_of_it() -> None:
    text = fixture_text("synthetic-h200-nvl-8gpu-two-quads.txt")
    base = topology_from_text(text).fingerprint
    assert topology_from_text(text.replace("0-47,96-143", "0-23")).fingerprint == base
    links = topology_from_text(text).links
    assert topology_from_text(as_text(links)).fingerprint == base  # no NIC columns at all
    named = as_text(links, ["NVIDIA H200"] * 8)
    other_uuids = named.replace("UUID: GPU-", "UUID: GPU-ff")
    assert topology_from_text(named).fingerprint == topology_from_text(other_uuids).fingerprint


def _random_matrix(rng: random.Random, n: int, alphabet: list[str]) -> list[list[str]]:
    links = matrix(n, lambda i, j: "")
    for i, j in itertools.combinations(range(n), 2):
        links[i][j] = links[j][i] = rng.choice(alphabet)
    return links


def _brute_force_form(links, names) -> tuple:
    """The smallest (models, matrix) over all numberings: a certainly canonical form."""
    n = len(links)
    return min(
        (tuple(names[p[i]] for i in range(n)), tuple(tuple(links[p[i]][p[j]] for j in range(n)) for i in range(n)))
        for p in itertools.permutations(range(n))
    )


def test_equal_fingerprint_exactly_when_isomorphic_on_random_small_wirings() -> None:
    """Against brute force over all 120 numberings of 5 GPUs: no collisions, no misses."""
    rng = random.Random(7)
    by_print: dict[str, set] = {}
    by_form: dict[tuple, list] = {}
    for _ in range(400):
        links = _random_matrix(rng, 5, ["NV2", "SYS", "NODE"][: rng.choice([2, 3])])
        names = [rng.choice(["NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"]) for _ in range(5)]
        print_, form = fingerprint(links, names), _brute_force_form(links, names)
        by_print.setdefault(print_, set()).add(form)
        by_form.setdefault(form, []).append(print_)
    assert all(len(forms) == 1 for forms in by_print.values()), "two different wirings share a fingerprint"
    assert all(len(set(prints)) == 1 for prints in by_form.values()), "one wiring got two fingerprints"
    assert sum(len(p) > 1 for p in by_form.values()) > 20, "the sample must hold wirings seen renumbered"


def test_renumbering_invariance_on_larger_random_and_structured_wirings() -> None:
    rng = random.Random(11)
    dgx1 = topology_from_text(fixture_text("v100-dgx1-8gpu-hybrid-cube-mesh-ib-old-legend.txt")).links
    cases = [
        _random_matrix(rng, 12, ["NV1", "NV2", "SYS"]),
        matrix(16, lambda i, j: dgx1[i % 8][j % 8] if i // 8 == j // 8 else "SYS"),  # two cube meshes
        matrix(16, lambda i, j: "NV2" if bin(i ^ j).count("1") == 1 else "SYS"),  # a hypercube: no parts
        matrix(24, lambda i, j: "NV18" if i // 8 == j // 8 else ("NODE" if i // 12 == j // 12 else "SYS")),
    ]
    for links in cases:
        n = len(links)
        names = ["NVIDIA H200"] * n
        expected = fingerprint(links, names)
        for _ in range(3):
            perm = rng.sample(range(n), n)
            moved = matrix(n, lambda i, j: "")
            for i, j in itertools.product(range(n), repeat=2):
                moved[perm[i]][perm[j]] = links[i][j]
            assert fingerprint(moved, names) == expected


# -- scale (issue 10 item 18) -------------------------------------------------------------
# Fingerprints as stored before the search was made fast (sparse refinement, first-path
# pruning): the same wiring must keep its value, or stored results lose their wiring.
STORED = {
    "a100-pcie-8gpu-nv12-bridge-pairs-empty-affinity-truncated.txt": "a7f8fd1505c1a2c0f0dfc682fec86d51a5037f75ff4a61eb3fac5805c8721412",
    "a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt": "dd1a82d3be450ba15c26e85f5c45f8035ffaa3045f8469a8e47820c541c9cb7c",
    "consumer-5gpu-pcie-phb-node-sys-club3090-46.txt": "c4df8ac0afb75b9f5d2e2e64bb848823193faecf4da9a811b0292c58d011ec51",
    "device-h200-1gpu.txt": "9ef20eb224920af85210df84aa0437efcb30239047e13d0c81a503cc36bfb399",
    "h100-sxm-8gpu-nvswitch-12nic-numaoff.txt": "e34072521001d550e7360cb4925e16828343ab51577264faf35ae811bc0130e8",
    "rtx4090-8gpu-pcie-sys-2nic.txt": "5222c2f0946eaf79f0834c7edf811a5ef46cd3165e2e7e68837cc6cba71dc9e4",
    "synthetic-h200-nvl-8gpu-two-quads.txt": "3d507fee5d5911f2f360cc6b6f73ee5dd6f0a23c6082c7bd21d7185c83f5c369",
    "synthetic-h200-sxm-8gpu-nvswitch.txt": "e34072521001d550e7360cb4925e16828343ab51577264faf35ae811bc0130e8",
    "v100-dgx1-8gpu-hybrid-cube-mesh-ib-old-legend.txt": "fb9745afe0a9f3b310af5c0a1c792e45d69e15d806a2bf811d80424a339fffaf",
    "v100-sxm2-2gpu-nv6-plus-rtx3090-pcie-ansi.txt": "9a4714e218c3115b0ab3cbd9f0072a9964b2027ab2e048ac7709df7998fdec4b",
}
STORED_HYPERCUBES = {16: "917c569183d899a13e392a3f1ad8926632c016e6642194cb4c1494e12af87b52", 32: "53f335d883d6075f7994970acd8f6286f8e9fba210e242047024640089ee9db2"}


def _hypercube(n: int) -> list[list[str]]:
    return matrix(n, lambda i, j: "NV4" if bin(i ^ j).count("1") == 1 else "SYS")


def _renumbered(links, perm):
    n = len(links)
    moved = matrix(n, lambda i, j: "")
    for i, j in itertools.product(range(n), repeat=2):
        moved[perm[i]][perm[j]] = links[i][j]
    return moved


def test_fingerprints_stored_before_keep_their_values() -> None:
    for name, stored in STORED.items():
        assert topology_from_text(fixture_text(name)).fingerprint == stored, name
    for n, stored in STORED_HYPERCUBES.items():
        assert fingerprint(_hypercube(n), ["NVIDIA H100"] * n) == stored


@pytest.mark.parametrize("n", [64, 256])
def test_big_symmetric_wirings_are_fingerprinted_and_renumbering_invariant(n: int) -> None:
    """A hypercube has no NVLink groups or switch tree to split on: the whole search runs.
    (64 GPUs took 2.4 s before; 256 did not finish in 150 s. Times: tests/benchmarks.)"""
    names = ["NVIDIA H100"] * n
    links = _hypercube(n)
    expected = fingerprint(links, names)
    assert fingerprint(_renumbered(links, random.Random(n).sample(range(n), n)), names) == expected
    rewired = [row[:] for row in links]  # one NVLink moved: 0-1 becomes 0-3 (distance 2 before)
    rewired[0][1] = rewired[1][0] = "SYS"
    rewired[0][3] = rewired[3][0] = "NV4"
    assert fingerprint(rewired, names) != expected


def test_a_wiring_past_the_search_budget_is_refused_at_once(monkeypatch) -> None:
    from wirewise.errors import UserError
    from wirewise.topology import fingerprint as fingerprint_module

    monkeypatch.setattr(fingerprint_module, "SEARCH_WORK", 64 * 5)  # five search nodes for 64 GPUs
    with pytest.raises(UserError, match="cannot fingerprint this 64-GPU wiring within the search budget"):
        fingerprint(_hypercube(64), ["NVIDIA H100"] * 64)


def test_topo_show_fingerprints_a_256_gpu_hypercube(tmp_path) -> None:
    from tests.conftest import wirewise_json

    path = tmp_path / "topo.txt"
    path.write_text(as_text(_hypercube(256), affinity=""))
    shown = wirewise_json("topo", "show", "--from-file", str(path), timeout=60)
    assert shown["gpus"] == 256 and shown["fingerprint"] == fingerprint(_hypercube(256), [None] * 256)
