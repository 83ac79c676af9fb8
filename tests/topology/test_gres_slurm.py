"""`wirewise topo slurm` output accepted by a real Slurm (tests/slurm): slurmd starts with the
gres.conf, the node is usable, and --gres=gpu:2 jobs run on the fake GPU devices."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import WIREWISE, wirewise
from tests.slurm.fixture import SlurmCluster, sbatch_to_end
from tests.topology.common import NVL_QUADS, as_text, matrix

pytestmark = pytest.mark.slurm


def exclusive(cluster: SlurmCluster) -> None:
    if cluster.used_by_other_sessions():
        pytest.skip("another pytest session is using the Slurm cluster; not changing its GRES under its feet")


def node_line(cluster: SlurmCluster) -> str:
    return subprocess.run(["scontrol", "show", "node", cluster.node], capture_output=True, text=True, check=True).stdout


def job_gpus(cluster: SlurmCluster, tmp_path: Path, *args: str) -> list[int]:
    """Run a job to its end; the GPU indices Slurm gave it."""
    out = tmp_path / "job.out"
    job_id, status = sbatch_to_end(["-p", cluster.partition, "-o", str(out), *args, "--wrap", "echo GPUS=$SLURM_JOB_GPUS"],
                                   timeout_s=120)
    assert status == 0, f"job {job_id} exited {status}"
    line = next(line for line in out.read_text().splitlines() if line.startswith("GPUS="))
    return sorted(int(g) for g in line[len("GPUS="):].split(","))


def test_gres_conf_for_the_nvl_quads_runs_a_two_gpu_job(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    exclusive(slurm_cluster)
    gres = wirewise("topo", "slurm", "--from-file", str(NVL_QUADS), "--node", "h200-nvl", check=True).stdout
    assert "Links=-1,6,6,6,0,0,0,0" in gres
    # The test node has 16 cores: the real Cores=0-47/48-95 cannot exist there (fake_gres drops them).
    with slurm_cluster.gres(slurm_cluster.fake_gres(gres)):
        node = node_line(slurm_cluster)
        assert "Gres=gpu:8" in node and "State=IDLE" in node, node
        assert len(job_gpus(slurm_cluster, tmp_path, "--gres=gpu:2")) == 2


def test_cores_from_cpu_affinity_are_accepted(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """The same wiring with affinities that fit the test node (2 sockets x 8 cores, the
    hyperthread siblings 16 apart): Cores= stays in and slurmd takes it."""
    exclusive(slurm_cluster)
    text = NVL_QUADS.read_text().replace("0-47,96-143", "0-7,16-23").replace("48-95,144-191", "8-15,24-31")
    gres = subprocess.run(
        [WIREWISE, "topo", "slurm", "-f", "-", "--node", "h200-nvl"], input=text, capture_output=True, text=True, check=True
    ).stdout
    assert "Cores=0-7" in gres and "Cores=8-15" in gres
    with slurm_cluster.gres(slurm_cluster.fake_gres(gres, keep_cores=True)):
        assert "State=IDLE" in node_line(slurm_cluster)
        assert len(job_gpus(slurm_cluster, tmp_path, "--gres=gpu:2")) == 2


def test_links_steer_slurm_to_the_bonded_gpus(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """Only GPUs 2 and 3 share NVLinks: a `--gpus=2` job gets them, not GPUs 0 and 1.
    Slurm 22.05 weighs Links= only for GPUs with Cores= (without them it picked 0,1)."""
    exclusive(slurm_cluster)
    bonded = matrix(4, lambda i, j: "NV12" if {i, j} == {2, 3} else "SYS")
    gres = subprocess.run(
        [WIREWISE, "topo", "slurm", "-f", "-", "--node", "x"],
        input=as_text(bonded, affinity="0-7,16-23"), capture_output=True, text=True, check=True,
    ).stdout
    assert "Links=0,0,-1,12 Cores=0-7" in gres
    with slurm_cluster.gres(slurm_cluster.fake_gres(gres, keep_cores=True)):
        assert job_gpus(slurm_cluster, tmp_path, "--gpus=2") == [2, 3]
