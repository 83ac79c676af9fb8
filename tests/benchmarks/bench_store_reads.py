"""Reads that once read the same thing again, on 1,000 nodes:
- the fleet-health history (store/health.py): each node's latest check among 100 each, its
  latest drain and re-test among 40 actions: 0.2 s or less each; its newest 20 actions (the
  trail `fleet status` shows: 20,000 rows, most of the time their decoding): 1 s or less;
- `wirewise place --model` (a real process) on a store of 1,000 nodes of one wiring with
  collective and training results: 3 s or less (one placement.history.History per command).
Exits 1 when a target is missed. Run: `.venv/bin/python tests/benchmarks/bench_store_reads.py`."""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the checkout's tests/ package

from tests.benchmarks.bench_campaign import timed  # noqa: E402
from tests.topology.common import NVL_QUADS_NAMED  # noqa: E402

NODES, CHECKS, ACTIONS, RUNS = 1000, 100, 40, 3
LATEST_TARGET_S, TRAIL_TARGET_S, PLACE_TARGET_S = 0.2, 1.0, 3.0
NAMES = [f"gpu{i:04d}" for i in range(NODES)]


def plant_health(store) -> None:
    from sqlalchemy import insert

    from wirewise.orchestrator.store.schema import FLEET_ACTIONS, NODE_CHECKS

    rng, t0 = random.Random(1), datetime(2026, 1, 1, tzinfo=timezone.utc)
    checks = [dict(node=n, source="health-check", rules=["nvlink-inactive"], healthy=True, findings=0,
                   checked_at=t0 + timedelta(seconds=rng.randrange(10**7))) for n in NAMES for _ in range(CHECKS)]
    actions = [dict(node=n, action=rng.choice(["drain", "retest", "resume", "health-check"]),
                    outcome=rng.choice(["drained", "passed", "failed", "held"]), reason="wirewise:r:m:-1", detail="d",
                    evidence={"findings": [{"id": 1, "evidence": "x" * 200}]}, asked_by="bench",
                    at=t0 + timedelta(seconds=rng.randrange(10**7))) for n in NAMES for _ in range(ACTIONS)]
    store.write(lambda session: (session.execute(insert(NODE_CHECKS), checks), session.execute(insert(FLEET_ACTIONS), actions)))


def plant_history(store, topo) -> None:
    from wirewise.orchestrator.record.ingest import store_measurement
    from wirewise.record import ResultRecord

    for i, node in enumerate(NAMES):
        records = [ResultRecord(workload="collective", node=node, gpus=gpus, gpu_count=len(gpus), fingerprint=topo.fingerprint,
                                fabric=topo.fabric, op=op, bytes=1 << 30, busbw_gbs=100.0 + i % 9)
                   for gpus in ([0, 1, 2, 3], [0, 4]) for op in ("all_reduce", "all_gather", "reduce_scatter")]
        if i % 10 == 0:
            records += [ResultRecord(workload="train", node=node, gpus=[0, 1, 2, 3], gpu_count=4, fingerprint=topo.fingerprint,
                                     fabric=topo.fabric, model="mistral-7b", world_size=4, strategy=strategy, micro_batch=1,
                                     seq_len=2048, tokens_per_s=30000.0 + i, step_time_s=0.28, params={"precision": "bf16"})
                        for strategy in ("fsdp", "zero2")]
        store_measurement(store, records, topo, node)


def median_s(work) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.health import actions, last_drains, latest_checks
    from wirewise.topology import read_topology

    missed = []
    with tempfile.TemporaryDirectory() as folder:
        db = f"sqlite:///{folder}/wirewise.db"
        store = Store(db)
        plant_health(store)
        for label, target, work in (
            ("each node's latest check", LATEST_TARGET_S, lambda: latest_checks(store, NAMES)),
            ("each node's newest 20 actions", TRAIL_TARGET_S, lambda: actions(store, NAMES, last=20)),
            ("each node's latest drain", LATEST_TARGET_S, lambda: last_drains(store, NAMES)),
            ("each node's latest re-test", LATEST_TARGET_S, lambda: actions(store, NAMES, kinds=("retest",), last=1)),
        ):
            seconds = median_s(work)
            print(f"{label} ({NODES} nodes, {CHECKS} checks and {ACTIONS} actions each): {seconds * 1000:.0f} ms; "
                  f"target {target * 1000:.0f} ms: {'ok' if seconds <= target else 'MISSED'}")
            missed += [label] if seconds > target else []
        topo = read_topology(NVL_QUADS_NAMED)
        plant_history(store, topo)
        args = ["place", "--model", "mistral-7b", "--gpus", "4", "--node", "gpu0001", "--free", "0-7", "--db", db, "--json"]
        seconds = statistics.median(timed(args, dict(os.environ))[0] for _ in range(RUNS))
        print(f"place --model on {NODES} stored nodes of one wiring: median {seconds:.2f} s over {RUNS} runs; "
              f"target {PLACE_TARGET_S:g} s: {'ok' if seconds <= PLACE_TARGET_S else 'MISSED'}")
        missed += ["place --model"] if seconds > PLACE_TARGET_S else []
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
