"""`wirewise launch` inside a Slurm allocation, on the real test clusters: the example started
from a batch script, through one srun task per node: `srun -N1` on the one-node cluster, on the
GPUs the job was given (fake devices: CPU ranks stand in for the pair placed on the wiring), and
`srun -N3` on the multi-node cluster (tests/slurm/multinode.sh), one CPU rank per node training
one model over the nodes' network."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.conftest import ROOT, WIREWISE, wirewise_json
from tests.launch.test_example import EXAMPLE, QUICK
from tests.slurm.fixture import sbatch_to_end, wait_sacct
from tests.topology.common import NVL_QUADS_NAMED as NVL_QUADS  # the GPU model named: busbw and fit known

BUSY_CLUSTER_S = 600  # the test cluster is shared: other sessions' jobs may queue ahead


def batch_script(tmp_path: Path, db_url: str, *launch_args: str) -> Path:
    """A batch script that runs the example under `wirewise launch` (a test's own paths: quoted)."""
    command = [WIREWISE, "launch", "--model", "tiny-mistral", "--batch-size", "2", "--seq-len", "16", "--db", db_url,
               *launch_args, "--", str(EXAMPLE), *QUICK, "--report", str(tmp_path / "report.json")]
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nexport WIREWISE_RUNS={shlex.quote(str(tmp_path / 'runs'))} HF_HUB_OFFLINE=1\n"
                      f"exec {shlex.join(command)}\n")
    return script


def run_batch(options: list[str], script: Path, out: Path, **run) -> tuple[str, str]:
    """The batch script run to its end, its output in `out`: (job id, output); a job that
    exits other than 0 fails the test with its output."""
    job_id, status = sbatch_to_end([*options, "-o", str(out), str(script)], timeout_s=BUSY_CLUSTER_S, **run)
    log = out.read_text() if out.exists() else ""
    assert status == 0, log or f"job {job_id} exited {status} without output"
    return job_id, log


@pytest.mark.slurm
@pytest.mark.slow
def test_in_a_batch_job_the_example_runs_through_srun_on_the_gpus_it_was_given(slurm_cluster, tmp_path, db_url):
    script = batch_script(tmp_path, db_url, "--gpus", "2", "--topology-file", str(NVL_QUADS))
    out = tmp_path / "job.out"
    job_id, log = run_batch(["-p", slurm_cluster.partition, "--gpus=4", "-c", "2", "-t", "10"], script, out)

    (run_dir,) = (tmp_path / "runs").iterdir()
    assert f"-launch-{job_id}" in run_dir.name
    srun = ["srun", "--nodes=1", "--ntasks=1", "--ntasks-per-node=1", "--kill-on-bad-exit=1", "--cpus-per-task=2"]
    assert f"command: {shlex.join(srun)} " in log and f"wirewise.orchestrator.launch.step {run_dir}" in log
    assert "- no NVIDIA driver answers here: 2 CPU rank(s) (gloo) stand in for GPUs 0,1" in log
    wait_sacct(job_id, "COMPLETED", row=f"{job_id}.0")  # the launch's own srun step

    seen = json.loads((tmp_path / "report.json").read_text())
    advice = seen["advice"]
    assert (advice["slurm_job_id"], advice["assigned_gpus"], advice["nodes"]) == (job_id, [0, 1], [slurm_cluster.node])
    assert (advice["advised"], advice["strategy"]) == ("zero2", "ddp")  # the fast wire's pick (level with ddp, more sharded); CPU ranks run ddp
    assert seen["accelerate"]["distributed_type"] == "DistributedType.MULTI_CPU" and seen["accelerate"]["num_processes"] == 2
    record = json.loads(Path(seen["result_file"]).read_text())["records"][0]
    assert record["extra"]["launch"]["slurm_job_id"] == job_id and record["extra"]["assigned_gpus"] == [0, 1]
    assert record["fingerprint"].startswith("3d646ba4") and record["gpus"] == [] and record["source"] == "job"
    listed = wirewise_json("results", "--source", "job", "--include-cpu", "--db", db_url)
    assert [(row["model"], row["fabric"], row["count"]) for row in listed] == [("tiny-mistral", "nvlink-groups", 1)]


@pytest.mark.multinode
@pytest.mark.slow
def test_on_three_nodes_each_node_runs_its_share_of_one_job(multinode, tmp_path, db_url):
    """Three nodes of the multi-node cluster, one CPU rank on each (--cpu: the nodes' NVML is a
    stand-in), started by one `wirewise launch` in the batch script: srun runs the per-node step
    on every node, each node's accelerate launch gets its machine rank from SLURM_NODEID and the
    first node as the main process, and the ranks train one model over the nodes' network."""
    cluster = multinode
    script = batch_script(tmp_path, db_url, "--cpu", "--gpus", "1")
    out = tmp_path / "job.out"
    job_id, log = run_batch(["-p", cluster.partition, "-N", "3", "-t", "10"], script, out, cwd=ROOT)
    assert "command: srun --nodes=3 --ntasks=3 --ntasks-per-node=1 --kill-on-bad-exit=1" in log
    seen = json.loads((tmp_path / "report.json").read_text())
    assert seen["advice"]["nodes"] == cluster.nodes and seen["advice"]["num_processes"] == 3
    assert seen["accelerate"]["num_processes"] == 3 and seen["losses"][-1] < seen["losses"][0]
    record = json.loads(Path(seen["result_file"]).read_text())["records"][0]
    assert record["world_size"] == 3 and record["extra"]["launch"]["nodes"] == cluster.nodes
    wait_sacct(job_id, "COMPLETED", row=f"{job_id}.0")
