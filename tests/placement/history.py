"""Planting measured results in a real SQLite store, through the store's own ingest path."""

from __future__ import annotations

from wirewise.orchestrator.record.ingest import store_measurement
from wirewise.orchestrator.store import Store
from wirewise.record import ResultRecord
from wirewise.topology import Topology

GIB = 1 << 30


def plant_all_reduce(db_url: str, topo: Topology, node: str, busbw_by_gpus: dict, size: int = GIB, **fields) -> None:
    """One all_reduce result per GPU set (physical indices on `node`), stored with the wiring."""
    records = [
        ResultRecord(**{
            "workload": "collective", "node": node, "gpus": list(gpus), "gpu_count": len(gpus), "fingerprint": topo.fingerprint,
            "fabric": topo.fabric, "op": "all_reduce", "bytes": size, "busbw_gbs": busbw, **fields,
        })
        for gpus, busbw in busbw_by_gpus.items()
    ]
    store_measurement(Store(db_url), records, topo, node)


def plant_training(db_url: str, topo: Topology, node: str, model: str, runs: list[dict]) -> None:
    """Training results: each run gives gpus, strategy and the measured fields."""
    records = [
        ResultRecord(**{"workload": "train", "node": node, "gpu_count": len(run["gpus"]), "fingerprint": topo.fingerprint,
                        "fabric": topo.fabric, "model": model, "world_size": len(run["gpus"]), **run})
        for run in runs
    ]
    store_measurement(Store(db_url), records, topo, node)


def plant_pair_tests(db_url: str, campaign: str, busbw_by_pair: dict, size: int = 64 << 20, gpus_per_node: int = 8) -> None:
    """One two-node all_reduce result per pair of nodes (None: the test failed), as a pair-test
    campaign stores them (labelled with the placement `pair`)."""
    records = [
        ResultRecord(workload="collective", campaign=campaign, task_id=f"{campaign}-{a}-{b}", node=a, nodes=[a, b],
                     params={"placement": "pair"},
                     node_count=2, gpus=list(range(gpus_per_node)), gpu_count=2 * gpus_per_node, op="all_reduce",
                     bytes=size, busbw_gbs=busbw, **({"status": "failed", "error": "rank 1 ended with signal 9", "op": None,
                                                      "bytes": None} if busbw is None else {}))
        for (a, b), busbw in busbw_by_pair.items()
    ]
    store_measurement(Store(db_url), records)
