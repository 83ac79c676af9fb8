"""`wirewise topo ...` as real processes: the JSON contract, human output, bad input, store, Slurm lines."""

from __future__ import annotations

import json
import subprocess

import pytest
from sqlalchemy import func, select

from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.orm import NodeRow, NodeTopologyRow, TopologyRow
from wirewise.orchestrator.store.topology import list_topologies, save_topology
from wirewise.topology import read_topology, topology_from_text
from tests.conftest import WIREWISE, wirewise, wirewise_json
from tests.topology.common import EXPECTED, NVL_QUADS, TOPO, fixture_text
from tests.topology.renumber import renumber_text

CONTRACT_KEYS = ["gpus", "gpu_names", "fabric", "switched", "groups", "links", "fingerprint", "nvlink_domain"]


# One per shape and format; every fixture's classification is checked in-process in test_classify.
CLI_FIXTURES = [
    "device-h200-1gpu.txt",
    "h100-sxm-8gpu-nvswitch-12nic-numaoff.txt",
    "v100-dgx1-8gpu-hybrid-cube-mesh-ib-old-legend.txt",
    "a100-pcie-8gpu-nv12-bridge-pairs-empty-affinity-truncated.txt",
]


@pytest.mark.parametrize("name", CLI_FIXTURES)
def test_show_json_is_the_design_contract(name: str) -> None:
    shown = wirewise_json("topo", "show", "--from-file", str(TOPO / name))
    assert list(shown) == CONTRACT_KEYS
    want = EXPECTED[name]
    assert (shown["gpus"], shown["fabric"], shown["groups"]) == (want["gpus"], want["fabric"], want["groups"])
    if want["switched"] is not None:
        assert shown["switched"] is want["switched"]
    assert len(shown["links"]) == want["gpus"] and len(shown["gpu_names"]) == want["gpus"]
    assert shown == {**read_topology(TOPO / name).contract(), "nvlink_domain": None}  # a topo -m file names no fabric


def test_show_reads_stdin() -> None:
    text = fixture_text("a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt")
    proc = subprocess.run([WIREWISE, "topo", "show", "-f", "-", "--json"], input=text, capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout)["fabric"] == "nvlink-all-to-all"


def test_show_for_people_has_matrix_groups_class_and_fingerprint() -> None:
    proc = wirewise("topo", "show", "--from-file", str(NVL_QUADS), env={"COLUMNS": "160"}, check=True)
    fingerprint = read_topology(NVL_QUADS).fingerprint
    for expected in ("GPU7", "NV6", "SYS", "nvlink-groups", "[0,1,2,3] [4,5,6,7]", fingerprint, "switched no"):
        assert expected in proc.stdout, expected


def test_show_colours_link_classes_on_a_terminal() -> None:
    proc = wirewise(
        "topo", "show", "-f", str(TOPO / "consumer-5gpu-pcie-phb-node-sys-club3090-46.txt"),
        env={"FORCE_COLOR": "1", "COLUMNS": "160", "TERM": "xterm-256color"}, check=True,
    )
    assert "\x1b[" in proc.stdout and "SYS" in proc.stdout


BAD_INPUTS = {
    "empty.txt": (b"", "is empty"),
    "binary.bin": (bytes(range(256)) * 8, "is binary"),
    "missing-row.txt": (
        b"\tGPU0\tGPU1\tGPU2\tGPU3\nGPU0\t X \tNV4\tNV4\tNV4\nGPU1\tNV4\t X \tNV4\tNV4\nGPU3\tNV4\tNV4\tNV4\t X \n",
        "row GPU2 is missing",
    ),
    "asymmetric.txt": (
        b"\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV6\tSYS\nGPU1\tNV6\t X \tNV6\nGPU2\tSYS\tNODE\t X \n",
        "not symmetric: GPU1-GPU2 is NV6 but GPU2-GPU1 is NODE",
    ),
    "unrelated.txt": (b"Fri Nov 29 12:00:00 2024\n+------------------+\n| NVIDIA-SMI 570.86 |\n", "no `nvidia-smi topo -m` matrix found"),
    "cut-row.txt": (b"\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV6\tSYS\nGPU1\tNV6\t X \tNV6\nGPU2\tSYS\tNV6\n", "row GPU2 has 2 entries, expected 3"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_naming_it_and_exit_2(name: str, tmp_path) -> None:
    content, message = BAD_INPUTS[name]
    path = tmp_path / name
    path.write_bytes(content)
    proc = wirewise("topo", "show", "--from-file", str(path))
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert message in lines[0] and str(path) in lines[0]
    assert "Traceback" not in proc.stderr


def test_missing_file_is_one_line(tmp_path) -> None:
    proc = wirewise("topo", "slurm", "--from-file", str(tmp_path / "nope.txt"))
    assert proc.returncode == 2 and proc.stderr.strip().endswith("nope.txt: no such file")


def count_rows(db_url: str) -> tuple[int, int, int]:
    with Store(db_url).session() as session:
        return tuple(session.scalar(select(func.count()).select_from(t)) for t in (NodeRow, TopologyRow, NodeTopologyRow))


def test_save_twice_adds_nothing_and_list_shows_it(db_url: str, tmp_path) -> None:
    first = wirewise_json("topo", "save", "-f", str(NVL_QUADS), "--node", "gpu-a", "--db", db_url)
    again = wirewise_json("topo", "save", "-f", str(NVL_QUADS), "--node", "gpu-a", "--db", db_url)
    assert first["created"] is True and again["created"] is False
    assert first["fingerprint"] == again["fingerprint"] == read_topology(NVL_QUADS).fingerprint
    assert count_rows(db_url) == (1, 1, 1)
    listed = wirewise_json("topo", "list", "--db", db_url)
    assert [(row["node"], row["fabric"], row["gpus"], row["fingerprint"]) for row in listed] == [
        ("gpu-a", "nvlink-groups", 8, first["fingerprint"])
    ]


def test_renumbered_wiring_is_the_same_topology_and_list_shows_nodes(db_url: str, tmp_path) -> None:
    store = Store(db_url)
    assert list_topologies(store) == []
    quads = read_topology(NVL_QUADS)
    renumbered = topology_from_text(renumber_text(NVL_QUADS.read_text(), [7, 3, 5, 1, 6, 2, 4, 0]))
    assert save_topology(store, quads, "gpu-a") == (quads.fingerprint, True)
    assert save_topology(store, renumbered, "gpu-a") == (quads.fingerprint, False)
    assert save_topology(store, renumbered, "gpu-b") == (quads.fingerprint, True)
    pairs = topology_from_text(fixture_text("a100-pcie-8gpu-nv12-bridge-pairs-empty-affinity-truncated.txt"))
    assert save_topology(store, pairs, "gpu-a") == (pairs.fingerprint, True)  # the node was rewired
    assert count_rows(db_url) == (2, 2, 3)
    rows = list_topologies(store)
    # Groups are told in each node's own GPU numbering: quads [0-3], [4-7] renumbered by perm.
    assert sorted((row["node"], row["fingerprint"] == quads.fingerprint, row["groups"]) for row in rows) == [
        ("gpu-a", False, [[0, 1], [2, 3], [4, 5], [6, 7]]),
        ("gpu-a", True, [[0, 2, 4, 6], [1, 3, 5, 7]]),  # last saved renumbered
        ("gpu-b", True, [[0, 2, 4, 6], [1, 3, 5, 7]]),
    ]
    table = wirewise("topo", "list", "--db", db_url, env={"COLUMNS": "200"}, check=True).stdout
    assert "gpu-b" in table and pairs.fingerprint[:12] in table and "[0,1] [2,3] [4,5] [6,7]" in table


def test_save_api_keeps_details_beside_the_wiring(db_url: str) -> None:
    store = Store(db_url)
    topo = read_topology(TOPO / "a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt")
    assert save_topology(store, topo, "polaris-1") == (topo.fingerprint, True)
    with store.session() as session:
        row = session.scalar(select(TopologyRow))
        seen = session.scalar(select(NodeTopologyRow))
        assert (row.fabric, row.gpu_count, row.switched) == ("nvlink-all-to-all", 4, None)
        assert row.parsed == topo.contract() and row.raw_text == topo.raw_text
        assert seen.details["links"] == topo.links  # this node's numbering, beside the wiring
        assert seen.details["cpu_affinity"][0] == "24-31,56-63" and seen.details["nics"]["names"] == ["mlx5_0", "mlx5_1"]


def gres_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_slurm_lines_for_the_nvl_quads() -> None:
    out = wirewise("topo", "slurm", "-f", str(NVL_QUADS), "--node", "gpu-a", check=True).stdout
    lines = gres_lines(out)
    assert len(lines) == 8
    assert lines[0] == "NodeName=gpu-a Name=gpu File=/dev/nvidia0 Links=-1,6,6,6,0,0,0,0 Cores=0-47"
    assert lines[5] == "NodeName=gpu-a Name=gpu File=/dev/nvidia5 Links=0,0,0,0,6,-1,6,6 Cores=48-95"
    assert "Features=nvlink-groups" in out and "--constraint=nvlink-groups" in out and "Gres=gpu:8" in out


def test_slurm_lines_with_gpu_names_and_a_switch() -> None:
    names = "".join(f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i})\n" for i in range(8))
    text = names + fixture_text("h100-sxm-8gpu-nvswitch-12nic-numaoff.txt")
    proc = subprocess.run([WIREWISE, "topo", "slurm", "-f", "-", "--node", "dgx"], input=text, capture_output=True, text=True, check=True)
    lines = gres_lines(proc.stdout)
    assert lines[7] == "NodeName=dgx Name=gpu Type=h100_80gb_hbm3 File=/dev/nvidia7 Links=18,18,18,18,18,18,18,-1"
    assert not any("Cores=" in line for line in lines)  # "0-191" everywhere: the core count is unknown
    assert "# no Cores=" in proc.stdout
    # NVLink 4 (H100): the generation spelled out, never "nvl4", which reads like an NVL quad
    assert "Gres=gpu:h100_80gb_hbm3:8 Features=nvlink-all-to-all,nvswitch,nvlink4" in proc.stdout


def test_slurm_cores_fold_hyperthread_siblings_and_skip_unknown() -> None:
    out = wirewise("topo", "slurm", "-f", str(TOPO / "a100-pcie-8gpu-nv12-bridge-pairs-empty-affinity-truncated.txt"), "--node", "n", check=True).stdout
    lines = gres_lines(out)
    assert lines[0].endswith("Links=-1,12,0,0,0,0,0,0 Cores=0-15")  # 0-15,56-71: siblings 56 apart
    assert "Cores=" not in lines[4]  # empty affinity under a Slurm cgroup: unknown
