"""`wirewise doctor --health-check --report-only` as slurmd would run it: a whole process, on this
machine, against a database holding this node's wiring and a history of 660 results
(target: at most 10 s, the rules' health_check.time_limit_s; slurmd kills it at 60 s).

No GPU exists here: NVML is the fake of tests/report/fake_nvml/pynvml.py (an H200 NVL quad) put
first on PYTHONPATH, so the probe, the two NVML reads, the store's reads and writes (the check,
its findings) and the process start are real; the NVML calls themselves cost what the fake
costs (a real NVML query of 8 GPUs takes tens of milliseconds more). Runs: once healthy, once
with an NVLink down (the slower path: a second read half a second later, a finding stored).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

WIREWISE = str(Path(sys.executable).with_name("wirewise"))
FAKE_NVML = ROOT / "tests" / "report" / "fake_nvml"
RUNS = 5
TARGET_S = 10.0
HISTORY = 660


def env(**faults) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAKE_NVML), str(ROOT)]),
            "WIREWISE_FAKE_NVML": json.dumps(faults)}


def plant_history(db: str, node: str) -> None:
    """HISTORY all_reduce results on this node's stored wiring (the rows a check reads past)."""
    from tests.placement.history import plant_all_reduce
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.topology import load_topology

    topo = load_topology(Store(db), node=node)
    sizes = [1 << p for p in range(20, 31)]
    gpu_sets = ((0, 1), (0, 1, 2, 3))
    for repeat in range(HISTORY // (len(sizes) * len(gpu_sets))):
        for size in sizes:
            plant_all_reduce(db, topo, node, {gpus: 300.0 + repeat % 7 for gpus in gpu_sets}, size=size)


def check_times(db: str, faults: dict) -> list[float]:
    """RUNS timings of the health check, each one that answered as the planted faults say:
    healthy and exit 0 without faults, a finding and exit 1 (--report-only) with them."""
    from tests.benchmarks.bench_campaign import timed

    times = []
    for _ in range(RUNS):
        seconds, proc = timed(["doctor", "--health-check", "--report-only", "--json", "--db", db], env(**faults),
                              ok=1 if faults else 0)
        if json.loads(proc.stdout)["healthy"] == bool(faults):
            raise SystemExit(f"doctor --health-check with faults {faults} answered {proc.stdout}")
        times.append(seconds)
    return times


def main() -> int:
    from wirewise.topology.probe import short_hostname

    with tempfile.TemporaryDirectory() as folder:
        db = f"sqlite:///{folder}/wirewise.db"
        subprocess.run([WIREWISE, "topo", "save", "--db", db], check=True, capture_output=True, env=env())
        plant_history(db, short_hostname())
        worst = 0.0
        for label, faults in (("healthy", {}), ("an NVLink down", {"inactive": {"1": [0]}})):
            times = check_times(db, faults)
            worst = max(worst, max(times))
            print(f"doctor --health-check ({label}, {HISTORY} results stored): median {statistics.median(times):.2f} s "
                  f"over {RUNS} runs (min {min(times):.2f}, max {max(times):.2f}); target {TARGET_S:g} s: "
                  f"{'ok' if max(times) <= TARGET_S else 'MISSED'}")
    return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
