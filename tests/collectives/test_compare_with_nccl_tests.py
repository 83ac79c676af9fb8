"""tests/gpu/compare_busbw.py, the verdict of tests/gpu/compare_nccl_tests.sh, on real rows:
wirewise's eager sweep and nccl-tests 2.19.6 (eager, no -G) from the same 2x H200 node
(tests/fixtures/measured-2xh200), stored as the script stores them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES, ROOT, wirewise

MEASURED = FIXTURES / "measured-2xh200"
SAME_ENV = ["--env", "NCCL_NVLS_ENABLE=0", "--env", "NCCL_VERSION=2.28.3-1"]  # what that machine set for both tools


@pytest.fixture
def measured_db(tmp_path):
    from wirewise.orchestrator.record.ingest import store_records
    from wirewise.orchestrator.store import Store
    from wirewise.record import ResultRecord

    url = f"sqlite:///{tmp_path / 'compare.db'}"
    lines = (MEASURED / "wirewise-collectives.jsonl").read_text().splitlines()
    store_records(Store(url), [ResultRecord.model_validate(json.loads(line)) for line in lines])
    for op in ("all_reduce", "all_gather", "reduce_scatter"):
        for transport in ("default", "pcie"):
            log = MEASURED / f"nccl-tests-{op}-{transport}.txt"
            wirewise("import", "nccl-tests", str(log), "--transport", transport, *SAME_ENV,
                     "--topology-file", str(MEASURED / "topo.txt"), "--db", url, check=True)
    return url


def compare(db: str, *args: str) -> subprocess.CompletedProcess:
    from wirewise.topology import read_topology

    fingerprint = read_topology(MEASURED / "topo.txt").fingerprint
    return subprocess.run([sys.executable, str(ROOT / "tests/gpu/compare_busbw.py"), db, "--fingerprint", fingerprint, *args],
                          capture_output=True, text=True, timeout=120)


def table(stdout: str) -> dict[tuple, list[str]]:
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in stdout.splitlines() if line.startswith("| all_") or line.startswith("| reduce")]
    return {(r[0], r[1], int(r[2])): r[3:] for r in rows}


def test_the_eager_gap_at_1_mb_fails_the_comparison_and_large_sizes_pass(measured_db):
    proc = compare(measured_db, "--gpus", "2", "--transport", "default")
    assert proc.returncode == 1
    rows = table(proc.stdout)
    # all_reduce is in place in torch: matched with nccl-tests' in-place column.
    # 1 MiB: 34.61 / 55.09 GB/s = 0.628x, below 0.95x; 1 GiB: 323.07 / 325.92 = 0.991x.
    assert rows[("all_reduce", "in", 1048576)][5:] == ["0.628", "MISSED busbw 0.628x < 0.95x"]
    assert rows[("all_reduce", "in", 1073741824)][5:] == ["0.991", "ok"]
    # all_gather out of place at 1 GiB: 267.96 / 269.04 = 0.996x
    assert rows[("all_gather", "out", 1073741824)][5:] == ["0.996", "ok"]
    assert ("all_gather", "in", 1048576) not in rows  # this history has no in-place all_gather row
    assert "FAILED: ('all_reduce', 1048576, True): MISSED busbw" in proc.stderr


def test_rows_of_another_transport_mode_or_gpu_count_are_never_compared(measured_db):
    pcie = table(compare(measured_db, "--gpus", "2", "--transport", "pcie").stdout)
    # through host memory at 1 GiB: wirewise 27.83 vs nccl-tests 27.98 GB/s (in place), not the NVLink rows
    assert pcie[("all_reduce", "in", 1073741824)][3:5] == ["27.83", "27.98"]
    for args in (["--gpus", "2", "--cuda-graph"], ["--gpus", "4"]):
        proc = compare(measured_db, *args)
        assert proc.returncode == 1 and "no size measured by both tools" in proc.stderr, proc.stderr
