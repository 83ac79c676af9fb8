"""`wirewise run` against the real test Slurm (8 fake GPUs): the command's arguments arrive
unchanged, CUDA_VISIBLE_DEVICES and WIREWISE_STRATEGY are set, the job is recorded; a shared
job gets Slurm's GPUs read back and compared with the best free set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.conftest import wirewise
from tests.topology.common import NVL_QUADS_NAMED as NVL_QUADS  # named: predictions need the GPU model
from wirewise.orchestrator.slurm.nodes import SINFO_FIELDS, job_gpus
from wirewise.orchestrator.placement.wiring import Wiring
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.orm import PlacedJobRow
from wirewise.topology import read_topology

pytestmark = pytest.mark.slurm

# Everything a shell would act on, if one were in the way.
TRICKY = ["a b", ";", "$(touch {canary})", '"quoted"', "it's", "*", "--gpus", "\\n"]
REPORT = (
    "import json, os, sys; open(sys.argv[1], 'w').write(json.dumps({'argv': sys.argv[2:], "
    "'cvd': os.environ.get('CUDA_VISIBLE_DEVICES'), 'strategy': os.environ.get('WIREWISE_STRATEGY')}))"
)


def run_json(*args: str) -> dict:
    """`wirewise run --json ARGS` (--json first: after `--` it would be the command's)."""
    return json.loads(wirewise("run", "--json", *args, check=True, timeout=BUSY_CLUSTER_S).stdout)


# The test cluster is shared (other sessions' whole-node jobs queue ahead): wait generously.
BUSY_CLUSTER_S = 300


def wait_for(path: Path, timeout: float = BUSY_CLUSTER_S) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size:
            return json.loads(path.read_text())
        time.sleep(0.5)
    raise AssertionError(f"{path} never appeared")


@contextmanager
def holding_gpus(cluster, count: int):
    """Another job holding `count` GPUs of the node while the block runs; yields the GPUs it
    holds once it has started (Slurm gives the lowest free ones)."""
    job_id = subprocess.run(
        ["sbatch", "--parsable", "-p", cluster.partition, f"--gpus-per-node={count}", "-t", "10", "-o", "/dev/null",
         "--wrap", "sleep 600"], capture_output=True, text=True, check=True,
    ).stdout.strip()
    try:
        deadline = time.monotonic() + BUSY_CLUSTER_S
        while (gpus := job_gpus(job_id)) is None:
            assert time.monotonic() < deadline, f"job {job_id} did not start in {BUSY_CLUSTER_S} s (test cluster busy?)"
            time.sleep(0.3)
        yield gpus
    finally:
        subprocess.run(["scancel", job_id], check=False)


@pytest.fixture
def fabric_feature(slurm_cluster):
    """The node advertises its fabric as `wirewise topo slurm` suggests (Features=nvlink-groups)
    for the test, then gets its old features back."""
    node = slurm_cluster.node
    shown = subprocess.run(["scontrol", "show", "node", node], capture_output=True, text=True, check=True).stdout
    old = shown.split("AvailableFeatures=")[1].split()[0]
    old = "" if old == "(null)" else old
    subprocess.run(["scontrol", "update", f"NodeName={node}", "AvailableFeatures=nvlink-groups",
                    "ActiveFeatures=nvlink-groups"], check=True)
    yield
    subprocess.run(["scontrol", "update", f"NodeName={node}", f"AvailableFeatures={old}", f"ActiveFeatures={old}"], check=True)


def test_whole_node_job_gets_its_arguments_pinned_gpus_and_strategy(slurm_cluster, tmp_path, db_url) -> None:
    canary = tmp_path / "shell-ran"
    args = [a.format(canary=canary) for a in TRICKY]
    out_file = tmp_path / "seen.json"
    result = run_json(
        "--gpus", "4", "--model", "mistral-7b", "--gpu-mem-gb", "141", "--whole-node",
        "-f", str(NVL_QUADS), "--node", slurm_cluster.node, "-p", slurm_cluster.partition, "-t", "5",
        "--folder", str(tmp_path / "jobs"), "--db", db_url,
        "--", sys.executable, "-c", REPORT, str(out_file), *args,
    )
    try:
        seen = wait_for(out_file)
    finally:
        subprocess.run(["scancel", result["job_id"]], check=False)
    assert seen["argv"] == args
    assert not canary.exists()
    assert seen["cvd"] == result["cuda_visible_devices"] == "0,1,2,3"  # one quad, pinned
    assert seen["strategy"] == result["strategy"] == "fsdp"  # inside a quad: the fast wire
    with Store(db_url).session() as session:
        row = session.scalars(select(PlacedJobRow)).one()
        assert (row.slurm_job_id, row.mode, row.gpus, row.strategy) == (result["job_id"], "whole-node", [0, 1, 2, 3], "fsdp")
        assert row.command == [sys.executable, "-c", REPORT, str(out_file), *args]
        assert row.predicted_busbw_gbs == 360.0 and row.fingerprint == read_topology(NVL_QUADS).fingerprint


def test_shared_job_reads_back_slurms_gpus_and_warns_when_worse(slurm_cluster, fabric_feature, tmp_path, db_url) -> None:
    """A job holding 3 GPUs first: Slurm hands out the lowest free GPUs (3 and 4, across the
    quads) while a pair inside the second quad was free."""
    with holding_gpus(slurm_cluster, 3) as held:
        result = run_json(
            "--gpus", "2", "--model", "mistral-7b", "--gpu-mem-gb", "141", "-f", str(NVL_QUADS),
            "--node", slurm_cluster.node, "-p", slurm_cluster.partition, "-t", "5",
            "--folder", str(tmp_path / "jobs"), "--db", db_url, "--start-timeout", "240", "--", "sleep", "300",
        )
        assert result["gpus"] == job_gpus(result["job_id"])
        subprocess.run(["scancel", result["job_id"]], check=False)
    assert result["mode"] == "shared" and result["constraint"] == "nvlink-groups"
    wiring = Wiring.of(read_topology(NVL_QUADS))
    assert result["predicted_busbw_gbs"] == wiring.model_busbw(tuple(result["gpus"]))
    worse = result["predicted_busbw_gbs"] < result["best_free_busbw_gbs"]
    assert bool(result["warnings"]) == worse
    if held == [0, 1, 2] and result["gpus"] == [3, 4]:
        assert result["best_free_busbw_gbs"] == 120.0 and worse  # a pair of quad 4-7 was free
    with Store(db_url).session() as session:
        row = session.scalars(select(PlacedJobRow)).one()
        assert row.gpus == result["gpus"] and row.warnings == result["warnings"]


def test_a_job_slurm_refuses_is_one_line_and_not_recorded(slurm_cluster, tmp_path, db_url) -> None:
    """The whole node of a 16-GPU wiring on the test node's 8 GPUs: sbatch refuses it."""
    from tests.topology.common import as_text, matrix

    wide = tmp_path / "sixteen.txt"
    wide.write_text(as_text(matrix(16, lambda i, j: "NV18"), ["NVIDIA H200"] * 16))
    proc = wirewise("run", "--whole-node", "-k", "2", "-f", str(wide), "-p", slurm_cluster.partition, "-t", "5",
                    "--folder", str(tmp_path / "jobs"), "--db", db_url, "--", "true", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("wirewise: error: Slurm refused the job: Requested node configuration is not "
                                  "available; it asked for 1 node(s), 16 GPU(s) per node, whole nodes"), proc.stderr
    assert proc.stderr.endswith("change --gpus, --node, -p/--partition or -t/--time (or drop --whole-node); nothing was recorded\n")
    with Store(db_url).session() as session:
        assert session.scalars(select(PlacedJobRow)).all() == []
    assert not (tmp_path / "jobs").exists()  # submitit's script and pickle for the refused job are gone


def test_run_asks_sinfo_once_for_the_nodes_it_keeps_the_job_off(slurm_cluster, tmp_path, db_url) -> None:
    """An open finding on a node Slurm does not know: the job is kept off nothing (--exclude
    names only nodes Slurm has), and one `sinfo -N` of the partition told both the nodes'
    states and their names (a stand-in first on PATH writes each call down, then runs sinfo)."""
    import shutil

    from tests.topology.common import as_text, matrix
    from wirewise.orchestrator.health.findings import Finding
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.health import record_check

    record_check(Store(db_url), "ghost01", "pairs", {"pair-below-fleet"}, [Finding(
        "ghost01", "pair-below-fleet", "pair test pairs-1: best pair 0.1 GB/s", "check its link",
        metric="all_reduce.busbw", delta="-90.0%", key="pair-below-fleet|all_reduce")])
    bin_dir, calls = tmp_path / "bin", tmp_path / "sinfo-calls"
    bin_dir.mkdir()
    (bin_dir / "sinfo").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {shutil.which("sinfo")} "$@"\n')
    (bin_dir / "sinfo").chmod(0o755)
    wide = tmp_path / "sixteen.txt"  # refused by sbatch: no job is left queued
    wide.write_text(as_text(matrix(16, lambda i, j: "NV18"), ["NVIDIA H200"] * 16))
    proc = wirewise("run", "--whole-node", "-k", "2", "-f", str(wide), "-p", slurm_cluster.partition, "-t", "5",
                    "--folder", str(tmp_path / "jobs"), "--db", db_url, "--", "true", cwd=tmp_path,
                    env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert proc.returncode == 2 and "Slurm refused the job" in proc.stderr, proc.stderr
    assert calls.read_text().splitlines() == [f"-h -N -o {SINFO_FIELDS} -p {slurm_cluster.partition}"]


def test_run_without_a_command_is_refused(tmp_path) -> None:
    proc = wirewise("run", "--gpus", "2", "-f", str(NVL_QUADS), cwd=tmp_path)
    assert proc.returncode == 2 and "give the command to run after `--`" in proc.stderr
    assert not (tmp_path / "wirewise.db").exists()


def test_place_on_a_slurm_node_leaves_out_the_gpus_jobs_hold(slurm_cluster, db_url) -> None:
    """The node's wiring is stored under its Slurm name; a job holding 2 GPUs (Slurm gives the
    lowest, 0 and 1) leaves 2-7 free, and 4 GPUs then go to the whole quad 4-7."""
    from tests.placement.history import plant_all_reduce

    plant_all_reduce(db_url, read_topology(NVL_QUADS), slurm_cluster.node, {})
    with holding_gpus(slurm_cluster, 2) as held:
        out = json.loads(wirewise("place", "--json", "--gpus", "4", "--node", slurm_cluster.node, "--db", db_url, check=True).stdout)
    assert out["free_source"].startswith("slurm")
    assert not set(held) & set(out["free"]) and len(out["free"]) <= 6
    if held == [0, 1] and out["free"] == [2, 3, 4, 5, 6, 7]:
        assert out["gpus"] == [4, 5, 6, 7]
