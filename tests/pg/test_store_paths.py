"""The store's write paths on the real PostgreSQL: a result file with its wiring ingested once
and only once, and the same new wiring saved by several processes at the same moment (the
IntegrityError retry in wirewise.orchestrator.store.topology)."""

from __future__ import annotations

import json
import multiprocessing as mp

import pytest
from sqlalchemy import func, select

from tests.conftest import FIXTURES
from wirewise.orchestrator.record.ingest import ingest_result_file
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.orm import NodeRow, NodeTopologyRow, ResultRow, TopologyRow
from wirewise.record import ResultRecord
from wirewise.topology import read_topology

pytestmark = pytest.mark.postgres
NVL_QUADS = FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt"
SAVERS = 8


def _count(store: Store, table) -> int:
    with store.session() as session:
        return session.execute(select(func.count()).select_from(table)).scalar_one()


def test_result_file_with_its_wiring_is_ingested_once(pg_url, tmp_path):
    topo = read_topology(NVL_QUADS)
    records = [
        ResultRecord(workload="collective", op="all_reduce", bytes=2**20 * k, busbw_gbs=100.0 + k, time_us=10.0,
                     gpus=[0, 1, 2, 3], gpu_count=4, node="gpu-a", fingerprint=topo.fingerprint, fabric=topo.fabric)
        for k in (1, 2, 4)
    ]
    result = tmp_path / "result.json"
    result.write_text(json.dumps({"status": "ok", "topology": topo.model_dump(mode="json"),
                                  "records": [r.model_dump(mode="json") for r in records]}))
    store = Store(pg_url)
    assert ingest_result_file(store, result)[1] == 3
    assert ingest_result_file(store, result)[1] == 0
    assert (_count(store, ResultRow), _count(store, TopologyRow), _count(store, NodeRow)) == (3, 1, 1)
    with store.session() as session:
        stored = session.execute(select(TopologyRow.fingerprint, TopologyRow.fabric)).one()
    assert tuple(stored) == (topo.fingerprint, "nvlink-groups")


def _save(url: str, node: str, barrier) -> None:
    from wirewise.orchestrator.store.topology import save_topology

    store = Store(url)
    topo = read_topology(NVL_QUADS)
    barrier.wait()  # every process inserts the same new wiring at the same moment
    save_topology(store, topo, node)


def test_concurrent_saves_of_one_new_wiring_store_it_once(pg_url):
    Store(pg_url)  # schema first, as the first command would
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(SAVERS)
    nodes = [f"gpu-{i % 4}" for i in range(SAVERS)]  # four nodes, each saved by two processes
    procs = [ctx.Process(target=_save, args=(pg_url, node, barrier)) for node in nodes]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0] * SAVERS
    store = Store(pg_url)
    assert (_count(store, TopologyRow), _count(store, NodeRow), _count(store, NodeTopologyRow)) == (1, 4, 4)
