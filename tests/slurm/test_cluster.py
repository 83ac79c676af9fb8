"""The local Slurm test cluster, through the same paths wirewise uses: submitit job arrays, GRES
GPUs, cancellation, sacct, and the cluster script's own start/stop/status contract."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import cloudpickle
import pytest
import submitit
from submitit.core.utils import UncompletedJobError

from tests.slurm.fixture import SlurmCluster, fake_gres, sbatch, wait_sacct

pytestmark = pytest.mark.slurm

# Jobs unpickle their function on the node; pickling this module's functions by value keeps that
# independent of the job's sys.path (pytest may run from anywhere).
cloudpickle.register_pickle_by_value(sys.modules[__name__])

GPU_VARS = ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS")


def square(x: int) -> tuple[int, str | None]:
    return x * x, os.environ.get("SLURM_ARRAY_TASK_ID")


def gpu_env() -> dict[str, str | None]:
    return {name: os.environ.get(name) for name in GPU_VARS}


def executor(cluster: SlurmCluster, folder: Path, **params) -> submitit.AutoExecutor:
    ex = submitit.AutoExecutor(folder=folder, cluster="slurm")
    ex.update_parameters(slurm_partition=cluster.partition, timeout_min=5, cpus_per_task=1, **params)
    return ex


def wait_state(job: submitit.Job, accept, timeout: float) -> str:
    """Poll sacct through submitit until accept(state); `job.state` alone can be stale until
    watcher.update() runs."""
    deadline = time.monotonic() + timeout
    while True:
        job.watcher.update()
        state = job.state
        if accept(state):
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job.job_id} still {state!r} after {timeout}s")
        time.sleep(0.2)


def proc_alive(pid: int) -> bool:
    """Alive and not a zombie (zombies linger on this machine, kill -0 would say yes)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def recorded_pids(cluster: SlurmCluster) -> dict[str, int]:
    run = cluster.state_dir / "run"
    return {p.stem: int(p.read_text()) for p in run.glob("*.pid") if not p.stem.endswith(".daemon")}


# ---------------------------------------------------------------- pure helpers (no cluster)


def test_fake_gres_maps_devices_and_node() -> None:
    real = (
        "AutoDetect=nvml\n"
        "NodeName=gpu-node-01 Name=gpu Type=h200 File=/dev/nvidia0 Cores=0-47 Links=-1,6\n"
        "NodeName=gpu-node-01 Name=gpu Type=h200 File=/dev/nvidia[1-3] CPUs=48-95\n"
        "Name=gpu File=/dev/nvidiactl\n"
    )
    out = fake_gres(real, "/state/dev", node="vm")
    assert "AutoDetect=off" in out and "nvml" not in out
    assert "File=/state/dev/nvidia0 " in out and "File=/state/dev/nvidia[1-3]" in out
    assert "File=/dev/nvidiactl" in out  # not a GPU index: left alone
    assert "NodeName=vm " in out and "gpu-node-01" not in out
    assert "Cores=" not in out and "CPUs=" not in out and "Links=-1,6" in out
    assert "Cores=0-47" in fake_gres(real, "/state/dev", keep_cores=True)
    assert fake_gres("Name=gpu File=/dev/nvidia0\n", "/d").startswith("AutoDetect=off\n")


# ---------------------------------------------------------------- jobs


def test_job_array_returns_every_result(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    jobs = executor(slurm_cluster, tmp_path).map_array(square, [1, 2, 3, 4])
    assert len({j.job_id.split("_")[0] for j in jobs}) == 1, "one array, not four jobs"
    results = [j.result() for j in jobs]
    assert [r[0] for r in results] == [1, 4, 9, 16]
    assert sorted(r[1] for r in results) == ["0", "1", "2", "3"]
    assert wait_state(jobs[0], lambda s: s == "COMPLETED", 15) == "COMPLETED"


def test_cancelled_job_is_reported_without_hanging(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    job = executor(slurm_cluster, tmp_path).submit(time.sleep, 300)
    wait_state(job, lambda s: s == "RUNNING", 30)
    subprocess.run(["scancel", job.job_id], check=True)
    # sacct says "CANCELLED by 0" (the uid that cancelled it).
    state = wait_state(job, lambda s: s.startswith("CANCELLED"), 30)
    assert state.startswith("CANCELLED")
    t0 = time.monotonic()
    with pytest.raises(UncompletedJobError):
        job.result()  # submitit waits ~15 s for a result file that never comes
    assert time.monotonic() - t0 < 40


def test_gres_job_sees_two_gpus(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    job = executor(slurm_cluster, tmp_path, slurm_gres="gpu:2").submit(gpu_env)
    env = job.result()
    for name in GPU_VARS:
        assert env[name] is not None, f"{name} not set in a --gres=gpu:2 job: {env}"
        assert len(env[name].split(",")) == 2, env


def test_sacct_shows_finished_job(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    job_id = sbatch("--gres=gpu:1", "-o", str(tmp_path / "out"), "--wrap", "true")
    rows = wait_sacct(job_id, "COMPLETED")
    own = next(r for r in rows if r[0] == job_id)
    assert "gres/gpu=1" in own[2], rows


# ---------------------------------------------------------------- the cluster script


def test_start_again_is_a_noop_and_status_reports(slurm_cluster: SlurmCluster) -> None:
    before = recorded_pids(slurm_cluster)
    proc = slurm_cluster.run_script("start")
    assert proc.returncode == 0, proc.stderr
    assert "already running" in proc.stderr
    assert recorded_pids(slurm_cluster) == before
    status = slurm_cluster.run_script("status")
    assert status.returncode == 0, status.stdout + status.stderr
    for name in ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd"):
        assert f"{name}" in status.stdout and "stopped" not in status.stdout
    # The node's state is reported, whatever the earlier tests' jobs left it in for the moment.
    assert re.search(rf"node\s+{slurm_cluster.node} (idle|mixed|allocated|completing)", status.stdout), status.stdout


def test_other_gres_conf_restarts_and_restores(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    if slurm_cluster.used_by_other_sessions():
        pytest.skip("another pytest session is using the cluster; not changing its GRES under its feet")
    # What a later test feeds in: `wirewise topo slurm` output for a node with real /dev paths.
    topo = (
        "AutoDetect=nvml\n"
        "NodeName=h200-node Name=gpu Type=h200 File=/dev/nvidia0 Links=-1,6,0,0 Cores=0-23\n"
        "NodeName=h200-node Name=gpu Type=h200 File=/dev/nvidia1 Links=6,-1,0,0 Cores=0-23\n"
        "NodeName=h200-node Name=gpu Type=h200 File=/dev/nvidia[2-3] Cores=24-47\n"
    )
    with slurm_cluster.gres(slurm_cluster.fake_gres(topo)):
        node = subprocess.run(["scontrol", "show", "node", slurm_cluster.node], capture_output=True, text=True)
        assert "Gres=gpu:h200:4" in node.stdout, node.stdout
        job = executor(slurm_cluster, tmp_path, slurm_gres="gpu:h200:2").submit(gpu_env)
        assert len(job.result()["CUDA_VISIBLE_DEVICES"].split(",")) == 2
    node = subprocess.run(["scontrol", "show", "node", slurm_cluster.node], capture_output=True, text=True)
    assert "Gres=gpu:8" in node.stdout, node.stdout
    assert "State=IDLE" in node.stdout


def test_stop_leaves_nothing_then_start_again(slurm_cluster: SlurmCluster) -> None:
    # Last in this file: it takes the cluster down and brings it back for whatever runs next.
    if slurm_cluster.used_by_other_sessions():
        pytest.skip("another pytest session is using the cluster; not stopping it under its feet")
    conf_before = slurm_cluster.conf.read_text()
    pids = recorded_pids(slurm_cluster)
    assert set(pids) == {"munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd"}
    try:
        proc = slurm_cluster.run_script("stop")
        assert proc.returncode == 0, proc.stderr
        left = {name: pid for name, pid in pids.items() if proc_alive(pid)}
        assert not left, f"still running after stop: {left}"
        status = slurm_cluster.run_script("status")
        assert status.returncode == 3, status.stdout
    finally:
        proc = slurm_cluster.run_script("start")
    assert proc.returncode == 0, proc.stderr
    assert "ready" in proc.stderr
    assert slurm_cluster.conf.read_text() == conf_before  # same ports: the session's env still holds
    out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "idle"
