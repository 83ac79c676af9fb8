"""What wirewise reads from Slurm, read from the real output of both test clusters: Debian's
22.05 (the one-node cluster, tests/slurm/cluster.sh) and 25.11 (the three-node one,
tests/slurm/multinode.sh). Each reader is asked on each version that shows the case.

Differences seen between the two and what the readers do about them:
- sacct of an array whose first elements run: 22.05 lists the pending rest as `ID_[1-3%1]`,
  25.11 was seen to keep the range as submitted (`ID_[0-9%2]`) beside the running rows, so an
  element's own row wins over a pending range (element_states_from);
- `scontrol show job -d` names the nodes that got the same GPUs on one line on both, as a node
  list for a job on several nodes (`Nodes=wwn[1-2] ... GRES=gpu:2(IDX:0-1)`): job_gpus looks the
  node up in the list.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.slurm.fixture import sbatch
from wirewise.orchestrator.slurm.cluster import element_states
from wirewise.orchestrator.slurm.nodes import gpus_in_use, gpus_in_use_on, job_gpus, slurm_nodes


def version() -> str:
    return subprocess.run(["sinfo", "-V"], capture_output=True, text=True, check=True).stdout.split()[1]


def wait_running(job_id: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True).stdout.split()
        if state == ["RUNNING"]:
            return
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not start within {timeout:.0f} s")


def running_and_pending_array(partition: str, tmp_path) -> str:
    """A 4-element array, one element at a time: element 0 runs, 1-3 wait (as a campaign's)."""
    array = sbatch("-p", partition, "--array=0-3%1", "-o", str(tmp_path / "%A_%a.out"), "--wrap", "sleep 60")
    deadline = time.monotonic() + 60
    while element_states([array]).get(f"{array}_0") != "RUNNING":
        assert time.monotonic() < deadline, f"array {array}: element 0 never ran"
        time.sleep(0.3)
    return array


def check_array_states(partition: str, tmp_path) -> None:
    array = running_and_pending_array(partition, tmp_path)
    try:
        states = element_states([array])
        assert states == {f"{array}_0": "RUNNING", f"{array}_1": "PENDING", f"{array}_2": "PENDING",
                          f"{array}_3": "PENDING"}
    finally:
        subprocess.run(["scancel", array], check=False)


@pytest.mark.slurm
def test_array_states_on_22_05(slurm_cluster, tmp_path) -> None:
    assert version().startswith("22.05")
    check_array_states(slurm_cluster.partition, tmp_path)


@pytest.mark.multinode
def test_array_states_on_25_11(multinode, tmp_path) -> None:
    assert version().startswith("25.11")
    check_array_states(multinode.partition, tmp_path)


@pytest.mark.multinode
def test_the_gpus_a_two_node_job_holds_on_each_of_its_nodes_on_25_11(multinode, tmp_path) -> None:
    """GRES untyped (Gres=gpu:4): `scontrol show node -d` counts them only, so the GPUs in use
    on a node come from its jobs' `scontrol show job -d`, whose one line names both nodes."""
    job = sbatch("-p", multinode.partition, "-N2", "-w", "wwn1,wwn2", "--gpus-per-node=2", "-o", str(tmp_path / "out"),
                 "--wrap", "sleep 60")
    try:
        wait_running(job)
        assert job_gpus(job, "wwn1") == [0, 1] and job_gpus(job, "wwn2") == [0, 1] and job_gpus(job) == [0, 1]
        assert job_gpus(job, "wwn3") is None
        assert gpus_in_use("wwn2") == {0, 1} and gpus_in_use("wwn3") == set()
        # one scontrol for the fleet says the same of each node; a node Slurm does not know: None
        assert gpus_in_use_on(["wwn1", "wwn2", "wwn3", "elsewhere"]) == {"wwn1": {0, 1}, "wwn2": {0, 1}, "wwn3": set(),
                                                                         "elsewhere": None}
        nodes = slurm_nodes(multinode.partition)
        assert {n: (node.state, node.gpus, node.features) for n, node in nodes.items()} == {
            "wwn1": ("mixed", 4, ("a100x4",)), "wwn2": ("mixed", 4, ("a100x4",)), "wwn3": ("idle", 3, ("v100x3",))}
    finally:
        subprocess.run(["scancel", job], check=False)


@pytest.mark.slurm
def test_the_gpus_a_job_holds_on_22_05(slurm_cluster, tmp_path) -> None:
    job = sbatch("-p", slurm_cluster.partition, "--gpus=2", "-o", str(tmp_path / "out"), "--wrap", "sleep 60")
    try:
        wait_running(job)
        assert job_gpus(job, slurm_cluster.node) == job_gpus(job) and len(job_gpus(job)) == 2
        assert gpus_in_use(slurm_cluster.node) == set(job_gpus(job)) == gpus_in_use_on([slurm_cluster.node])[slurm_cluster.node]
    finally:
        subprocess.run(["scancel", job], check=False)
