"""Saved nvidia-smi queries (-q text, -q -x XML, the fabric CSV) read by `topo show/save --from-file`,
alone or beside `nvidia-smi topo -m`: real captures and posts in tests/fixtures/smi (README.md
there names each one's source), as real processes where the command is what is tested."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import wirewise, wirewise_json
from tests.topology.common import TOPO
from wirewise.errors import UserError
from wirewise.topology import read_topology
from wirewise.topology.fabric import domain_of, fabric_problems
from wirewise.topology.node_files import WiringUnknown
from wirewise.topology.smi import read_smi_gpus

SMI = Path(__file__).parents[1] / "fixtures" / "smi"
H200_TOPO = TOPO / "device-h200-1gpu.txt"  # the same VM as the h200-* captures


def gpus_of(name: str) -> list[dict]:
    return read_smi_gpus((SMI / name).read_text(), name)


@pytest.mark.parametrize("name", ["h200-nvidia-smi-q.txt", "h200-nvidia-smi-q.xml", "h200-fabric.csv"])
def test_the_h200_captures_give_one_named_gpu_without_a_fabric(name: str) -> None:
    (gpu,) = gpus_of(name)
    assert gpu["name"] == "NVIDIA H200" and gpu["uuid"] == "GPU-8d177087-8372-e9cc-e93b-f2434b5d10df"
    assert gpu["fabric"] is None and fabric_problems(gpu["fabric"]) == []


def test_posted_fragments_read_as_their_states() -> None:
    (unhealthy,) = gpus_of("gb200-unhealthy-fragment.txt")
    assert unhealthy["fabric"]["state"] == "completed" and unhealthy["fabric"]["status"] == 0
    assert domain_of([unhealthy["fabric"]]) == ("dc6e40c4-d722-4357-9ba6-5291dd461278", 2)  # health is not place
    assert fabric_problems(unhealthy["fabric"]) == ["fabric health Unhealthy"]
    (progress,) = gpus_of("in-progress-fragment.txt")
    assert fabric_problems(progress["fabric"]) == ["fabric in progress"] and domain_of([progress["fabric"]]) is None
    (failed,) = gpus_of("insufficient-resources-fragment.txt")
    assert fabric_problems(failed["fabric"]) == ["fabric status Insufficient Resources"]
    assert domain_of([failed["fabric"]]) is None


def test_nvml_health_mask_bits_name_their_problems() -> None:
    healthy = {"state": "completed", "status": 0, "health_mask": 0xAA | (1 << 8)}  # every field FALSE, config none
    assert fabric_problems(healthy) == []
    degraded = {"state": "completed", "status": 23, "health_mask": 1}
    assert fabric_problems(degraded) == ["fabric status NVML error 23", "bandwidth degraded"]


def test_gb300_sentinel_clique_is_a_domain_and_proves_nvlink() -> None:
    topo = read_topology(str(SMI / "gb300-built-q.txt"))
    assert topo.gpus == 4 and topo.gpu_names == ["NVIDIA GB300"] * 4
    assert topo.links[0][1] == "NV18" and topo.fabric == "nvlink-all-to-all"
    assert domain_of([g["fabric"] for g in topo.details["gpus"]]) == ("6a130f54-faaa-4b8f-847f-be44ab70f917", 32766)
    assert "fabric alone" in topo.details["notes"][0]


@pytest.mark.parametrize("name", ["gb200-built-fabric.csv", "gb200-built-fabric-noheader.csv"])
def test_fabric_csv_in_any_order_or_the_documented_one(name: str) -> None:
    gpus = gpus_of(name)
    assert len(gpus) == 4
    assert domain_of([g["fabric"] for g in gpus]) == ("9c6f5af3-53bf-49b5-a436-b66766c413c3", 4026)


def test_an_hgx_board_proves_no_wiring_and_says_so() -> None:
    with pytest.raises(WiringUnknown, match="the wiring between its 8 GPUs is unknown") as caught:
        read_topology(str(SMI / "hgx-h100-zero-uuid-built-q.xml"))
    assert len(caught.value.gpus) == 8 and caught.value.gpus[0]["name"] == "NVIDIA H100 80GB HBM3"


def test_topo_m_and_a_query_together_give_names_and_fabric(tmp_path: Path) -> None:
    topo = read_topology([str(H200_TOPO), str(SMI / "h200-nvidia-smi-q.xml")])
    assert topo.gpu_names == ["NVIDIA H200"] and topo.cpu_affinity == ["0-15"]
    assert topo.details["gpus"][0]["uuid"] == "GPU-8d177087-8372-e9cc-e93b-f2434b5d10df"
    eight = TOPO / "h100-sxm-8gpu-nvswitch-12nic-numaoff.txt"
    with pytest.raises(UserError, match="lists 1 GPUs where the `nvidia-smi topo -m` file has 8"):
        read_topology([str(eight), str(SMI / "h200-fabric.csv")])
    with pytest.raises(UserError, match="a second `nvidia-smi topo -m`"):
        read_topology([str(H200_TOPO), str(H200_TOPO)])


@pytest.mark.parametrize("text, problem", [
    ("index, fabric.state\n0, Completed\n", "no fabric.clusteruuid, fabric.cliqueid, fabric.status column"),
    ("0, Completed, 4026, abc, Success\n", "(no header: read as index,fabric.clusteruuid"),
    ("<?xml version='1.0'?><!DOCTYPE x [<!ENTITY a 'b'>]><nvidia_smi_log/>", "declares entities"),
    ("    Fabric\n        State : Done\n", "fabric state 'Done'"),
    ("index, fabric.clusterUuid, fabric.cliqueId, fabric.state, fabric.status\n0, xyz, 1, Completed, Success\n", "not a UUID"),
])
def test_bad_queries_are_one_line_exit_2(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "q.txt"
    path.write_text(text)
    proc = wirewise("topo", "show", "--from-file", str(path))
    assert proc.returncode == 2 and problem in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_cli_show_and_save(tmp_path: Path, db_url: str) -> None:
    both = wirewise_json("topo", "show", "-f", str(H200_TOPO), "-f", str(SMI / "h200-nvidia-smi-q.txt"))
    assert both["gpu_names"] == ["NVIDIA H200"]
    unwired = wirewise("topo", "show", "--from-file", str(SMI / "hgx-h100-zero-uuid-built-q.xml"), "--json")
    assert unwired.returncode == 0 and json.loads(unwired.stdout)["wiring"] == "unknown"
    assert "add the node's `nvidia-smi topo -m`" in unwired.stderr
    refused = wirewise("topo", "save", "--from-file", str(SMI / "hgx-h100-zero-uuid-built-q.xml"), "--node", "h1", "--db", db_url)
    assert refused.returncode == 2 and "unknown" in refused.stderr
    saved = wirewise_json("topo", "save", "-f", str(SMI / "gb300-built-q.txt"), "--node", "gb1", "--db", db_url)
    assert saved["gpus"] == 4 and saved["fabric"] == "nvlink-all-to-all"
    human = wirewise("topo", "show", "-f", str(SMI / "gb200-unhealthy-fragment.txt"))
    assert human.returncode == 0 and "NVLink domain" in human.stdout and "Unhealthy" in human.stdout


def test_topo_list_shows_the_domains_and_the_nodes_apart(db_url: str) -> None:
    """Two GB300 trays of one domain, a GB200 tray with its Unhealthy GPU, an H200 without a
    fabric: topo list names each node's domain, and sums up the domains and the nodes apart."""
    for node, files in (("gb1", ["gb300-built-q.txt"]), ("gb2", ["gb300-built-q.txt"]),
                        ("gbx", ["gb200-unhealthy-fragment.txt"]), ("h200", ["h200-nvidia-smi-q.xml"])):
        wirewise("topo", "save", *[a for f in files for a in ("-f", str(SMI / f))], "--node", node, "--db", db_url, check=True)
    rows = {row["node"]: row for row in wirewise_json("topo", "list", "--db", db_url)}
    assert rows["gb1"]["domain"] == rows["gb2"]["domain"] == {"cluster_uuid": "6a130f54-faaa-4b8f-847f-be44ab70f917", "clique_id": 32766}
    assert rows["h200"]["domain"] is None
    human = wirewise("topo", "list", "--db", db_url).stdout
    assert "gb1, gb2" in human and "in no NVLink domain: h200: no NVLink fabric" in human
    assert "fabric degraded: gbx: GPU 0: fabric health Unhealthy" in human


def test_topo_show_names_the_nodes_nvlink_domain() -> None:
    """topo show --json carries the node's domain (null where it sits in none); the text says it, or why none."""
    gb300 = wirewise_json("topo", "show", "-f", str(SMI / "gb300-built-q.txt"))
    assert gb300["nvlink_domain"] == {"cluster_uuid": "6a130f54-faaa-4b8f-847f-be44ab70f917", "clique_id": 32766}
    assert wirewise_json("topo", "show", "-f", str(H200_TOPO), "-f", str(SMI / "h200-fabric.csv"))["nvlink_domain"] is None
    unwired = json.loads(wirewise("topo", "show", "-f", str(SMI / "hgx-h100-zero-uuid-built-q.xml"), "--json").stdout)
    assert unwired["nvlink_domain"] is None
    text = wirewise("topo", "show", "-f", str(SMI / "gb300-built-q.txt")).stdout
    assert "NVLink domain 6a130f54-faaa-4b8f-847f-be44ab70f917 clique 32766" in text
    assert "NVLink domain none (no NVLink fabric)" in wirewise("topo", "show", "-f", str(H200_TOPO)).stdout
