"""transport-off-nvlink (issue 30 item 6): a run whose wiring promises NVLink but whose NCCL
connections went another way, as their INFO lines show, is a finding for doctor. Records stored
through the real ingest on the real wiring of two H200 NVL quads (GPUs 0-3 one NVLink group,
so packed; 0,4 spread across groups), read by `wirewise doctor` processes on real databases;
the transports are those real posted logs show (tests/fixtures/nccl-info)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from wirewise.record import ResultRecord
from wirewise.topology import topology_from_text
from tests.conftest import FIXTURES, wirewise

QUADS = topology_from_text((FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt").read_text(), "quads")
WHEN = datetime(2026, 12, 1, 10, tzinfo=timezone.utc)


def _run(node: str, carried: str | None, minutes: int = 0, gpus=(0, 1, 2, 3), transport: str = "default") -> ResultRecord:
    return ResultRecord(
        workload="collective", op="all_reduce", bytes=2**30, dtype="float32", in_place=False, gpus=list(gpus),
        gpu_count=len(gpus), world_size=len(gpus), node=node, nodes=[node], fingerprint=QUADS.fingerprint, fabric=QUADS.fabric,
        time_us=1.0, algbw_gbs=100.0, busbw_gbs=150.0, params={"transport": transport}, extra={"redop": "sum", "device": "cuda"},
        started_at=WHEN + timedelta(minutes=minutes), ended_at=WHEN + timedelta(minutes=minutes), transport_carried=carried)


def _store(url: str, records: list[ResultRecord]) -> None:
    from wirewise.orchestrator.record.ingest import store_measurement
    from wirewise.orchestrator.store import Store

    for record in records:
        store_measurement(Store(url), [record], QUADS, node=record.node)


def _doctor(url: str, node: str):
    import json

    proc = wirewise("doctor", "--node", node, "--json", "--db", url)
    doc = json.loads(proc.stdout)
    return proc.returncode, [f for f in doc["findings"] if f["check"] == "transport-off-nvlink"], doc["judged"][node]


def test_shm_or_a_network_inside_an_nvlink_group_is_a_finding(db_url):
    _store(db_url, [_run("shm", "SHM"), _run("socket", "NET/Socket"), _run("good", "P2P/CUMEM"),
                    _run("nvls", "NVLS+P2P/CUMEM")])
    code, [finding], judged = _doctor(db_url, "shm")
    assert code == 1 and "transport-off-nvlink" in judged
    assert finding["reason"] == "wirewise:transport-off-nvlink:all_reduce.transport:SHM"
    assert "its GPUs share NVLink, but NCCL connected them via SHM" in finding["evidence"]
    assert _doctor(db_url, "socket")[1][0]["delta"] == "NET/Socket"
    for good in ("good", "nvls"):
        code, found, judged = _doctor(db_url, good)
        assert (code, found) == (0, []) and "transport-off-nvlink" in judged


def test_what_the_wiring_does_not_promise_is_not_judged(db_url):
    """GPUs across NVLink groups (spread), --transport pcie (NVLink asked off), a run whose NCCL
    lines were not read: none promises NVLink or says what the wire carried."""
    _store(db_url, [_run("spread", "SHM", gpus=(0, 4)), _run("pcie", "SHM", transport="pcie"), _run("unread", None)])
    for node in ("spread", "pcie", "unread"):
        _, found, judged = _doctor(db_url, node)
        assert found == [] and "transport-off-nvlink" not in judged, node


def test_the_newest_run_of_the_case_decides(db_url):
    """A fallback fixed since (the newest run back on P2P) is no finding, and the open one is cleared."""
    _store(db_url, [_run("fixed", "SHM", minutes=0)])
    assert _doctor(db_url, "fixed")[0] == 1
    _store(db_url, [_run("fixed", "P2P/IPC", minutes=5)])
    code, found, _ = _doctor(db_url, "fixed")
    assert (code, found) == (0, [])


def test_a_network_between_nodes_of_one_domain_is_a_finding(db_url):
    """Two nodes of one multi-node NVLink domain (their stored fabric: the GB300 trays' query) that
    talked over NET/IB; between nodes of no shared domain the same network is the way."""
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.topology import save_topology
    from wirewise.topology import read_topology

    tray = read_topology(str(FIXTURES / "smi" / "gb300-built-q.txt"))
    for node in ("gb1", "gb2"):
        save_topology(Store(db_url), tray, node)
    for node in ("x1", "x2"):
        save_topology(Store(db_url), QUADS, node)
    from wirewise.orchestrator.record.ingest import store_measurement

    def two_nodes(first: str, second: str, topo) -> ResultRecord:
        return ResultRecord(
            workload="collective", op="all_reduce", bytes=2**30, dtype="float32", in_place=False, gpus=[0],
            gpu_count=2, world_size=2, node=first, node_count=2, nodes=[first, second], fingerprint=topo.fingerprint,
            fabric=topo.fabric, time_us=1.0, algbw_gbs=10.0, busbw_gbs=10.0, params={"transport": "default"},
            extra={"redop": "sum", "device": "cuda"}, started_at=WHEN, ended_at=WHEN, transport_carried="NET/IB/GDRDMA")

    store_measurement(Store(db_url), [two_nodes("gb1", "gb2", tray)], tray, node="gb1")
    store_measurement(Store(db_url), [two_nodes("x1", "x2", QUADS)], QUADS, node="x1")
    code, [finding], _ = _doctor(db_url, "gb1")
    assert code == 1 and "its nodes share an NVLink domain" in finding["evidence"] and finding["delta"] == "NET/IB/GDRDMA"
    assert _doctor(db_url, "x1")[1] == []
