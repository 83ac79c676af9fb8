"""NCCL's INFO lines read as the transports a run's connections used (wirewise.nccl_info), on
real logs people posted and one capture of wirewise's own H200 (tests/fixtures/nccl-info/SOURCES
names each one's source), and on lines written in each format NCCL's source prints
(NVIDIA/nccl src/transport/*.cc, 2.18 to 2.28) where no posted log shows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from wirewise.nccl_info import Wire, off_nvlink, read_wire, transport_name

LOGS = Path(__file__).parents[1] / "fixtures" / "nccl-info"

CARRIED = {
    "h200-1rank-2.28.9-wirewise-capture.txt": "local",
    "h800-4gpu-shm-nccl-issue-1609.txt": "SHM",
    "2node-16gpu-p2p-ipc-read-net-socket-nccl-issue-952.txt": "P2P/IPC+NET/Socket",
    "a100-2node-net-ib-gdrdma-busid-nccl-issue-707.txt": "NET/IB/GDRDMA",
    "2node-8gpu-p2p-ipc-read-net-ib-gdrdma-nccl-issue-687.txt": "P2P/IPC+NET/IB/GDRDMA",
    "8gpu-one-process-p2p-direct-pointer-nccl-tests-issue-213.txt": "P2P/direct",
    "h800-8gpu-p2p-direct-0-nvls-channels-nccl-issue-892.txt": "P2P/direct",
    "8gpu-p2p-cumem-2.22.3-nccl-issue-1538.txt": "P2P/CUMEM",
    "multinode-net-ibext-plugin-nccl-issue-1814.txt": "NET/IBext_v8",
    "h100-8gpu-nvls-available-no-prefix-2.24.3-nccl-issue-1584.txt": None,  # no connection line posted
    "1node-8gpu-timestamped-logger-ring-lines-easydistill-issue-4.txt": None,  # ring order, no connection
    "16gpu-2node-old-ring-lines-busid-nccl-issue-385.txt": "P2P/IPC+NET/IB/GDRDMA",
}


def wire_of(name: str) -> Wire:
    return read_wire((LOGS / name).read_text().splitlines())


def test_every_fixture_is_asserted() -> None:
    assert sorted(p.name for p in LOGS.glob("*.txt")) == sorted(CARRIED)


@pytest.mark.parametrize("name", sorted(CARRIED))
def test_real_logs_read_as_the_transport_they_show(name: str) -> None:
    assert wire_of(name).carried == CARRIED[name]


def test_what_else_the_logs_say() -> None:
    h200 = wire_of("h200-1rank-2.28.9-wirewise-capture.txt")
    assert (h200.ranks, h200.nodes, h200.mnnvl, h200.version, h200.nvls_channels) == (1, 1, False, "2.28.9", 0)
    nvls = wire_of("h100-8gpu-nvls-available-no-prefix-2.24.3-nccl-issue-1584.txt")
    assert nvls.nvls_available is True and nvls.version == "2.24.3"
    assert wire_of("h800-8gpu-p2p-direct-0-nvls-channels-nccl-issue-892.txt").nvls_channels == 0
    shm = wire_of("h800-4gpu-shm-nccl-issue-1609.txt")
    assert shm.connections == {"SHM": 12}


@pytest.mark.parametrize("via, name", [
    ("P2P/IPC", "P2P/IPC"), ("P2P/IPC/read", "P2P/IPC"), ("P2P/IPC/read/CE", "P2P/IPC"), ("P2P/CUMEM/read", "P2P/CUMEM"),
    ("P2P/MNNVL/read", "P2P/MNNVL"), ("P2P/direct pointer/read", "P2P/direct"), ("P2P/indirect/3[3]/read", "P2P/indirect"),
    ("SHM/direct/direct", "SHM"), ("SHM/CE/direct", "SHM"), ("NET/IB/0(1)/GDRDMA(PCI)/Shared", "NET/IB/GDRDMA"),
    ("NET/Socket/0", "NET/Socket"), ("NET/AWS Libfabric/0/GDRDMA", "NET/AWS Libfabric/GDRDMA"),
])
def test_each_via_word_names_its_transport(via: str, name: str) -> None:
    assert transport_name(via) == name


def test_formats_from_nccls_source() -> None:
    """Lines in the shape each printf of NCCL 2.27/2.28 writes: MNNVL, NVLS, CollNet, the comm line."""
    lines = [
        "gb1:10:10 [0] NCCL INFO NCCL version 2.27.7+cuda12.9",
        "gb1:10:10 [0] NCCL INFO NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 24)",
        "gb1:10:10 [0] NCCL INFO comm 0x55d0 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 1",
        "gb1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 4[0] via P2P/MNNVL/read",
        "gb1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
        "gb1:10:10 [0] NCCL INFO 24 coll channels, 24 collnet channels, 24 nvls channels, 32 p2p channels, 32 p2p channels per peer",
        "gb1:10:11 [0] NCCL INFO CollNet 00/0 : 0 [send] via COLLNET/SHARP/0/GDRDMA",
        "gb1:10:11 [0] NCCL WARN Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",  # a WARN is no connection
    ]
    wire = read_wire(lines)
    assert wire.carried == "NVLS+P2P/MNNVL+P2P/CUMEM+CollNet"
    assert (wire.ranks, wire.nodes, wire.mnnvl, wire.version) == (8, 2, True, "2.27.7")
    unavailable = read_wire(["NCCL INFO NVLS multicast support is not available on dev 0", "NCCL INFO 16 coll channels, 16 nvls channels, 16 p2p channels"])
    assert unavailable.carried is None and unavailable.nvls_channels == 16


def test_logs_add_up_and_travel_as_json() -> None:
    node0 = wire_of("h800-4gpu-shm-nccl-issue-1609.txt")
    node1 = wire_of("multinode-net-ibext-plugin-nccl-issue-1814.txt")
    both = Wire.from_json(node0.to_json()).add(Wire.from_json(node1.to_json()))
    assert both.carried == "SHM+NET/IBext_v8" and both.connections == {"SHM": 12, "NET/IBext_v8": 13}


def test_what_went_off_nvlink() -> None:
    """SHM is never NVLink; a network is off NVLink on one node or inside one NVLink domain."""
    assert off_nvlink(wire_of("h800-4gpu-shm-nccl-issue-1609.txt").carried, 1, True, False) == ["SHM"]
    assert off_nvlink("SHM", 1, False, False) == []  # a PCIe node's GPUs were promised no NVLink
    two_nodes = wire_of("2node-8gpu-p2p-ipc-read-net-ib-gdrdma-nccl-issue-687.txt").carried
    assert off_nvlink(two_nodes, 2, True, False) == []
    assert off_nvlink(two_nodes, 2, True, True) == ["NET/IB/GDRDMA"]
    assert off_nvlink(two_nodes, 1, True, False) == ["NET/IB/GDRDMA"]
    assert off_nvlink(wire_of("8gpu-p2p-cumem-2.22.3-nccl-issue-1538.txt").carried, 1, True, False) == []
    assert off_nvlink(None, 1, True, True) == [] and off_nvlink("local", 1, True, False) == []
