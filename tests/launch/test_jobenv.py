"""wirewise.jobenv, the one reader of the scheduler's environment, and the job records built on
it: the GPUs a job was given by their physical index for the ways Slurm hands them over (its
own indices, a device cgroup's renumbering, UUIDs, a step on another node than the batch
script), its nodes, and the record a job started without `wirewise launch` writes of itself.

No GPU, driver or NVML exists here: NVML's UUID table is a stand-in (a table, or the probe
tests' fake NVML with MIG instances added), and where a rank "ran on a GPU" torch.cuda's
answers are stand-ins too; the environments are the ones Slurm sets, several of them seen on
the multi-node test cluster (Slurm 22.05.8) and noted where they come from."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time

import pytest

from tests.launch.test_launch_slurm import run_batch
from tests.slurm.fixture import sbatch
from tests.topology.test_probe import FakeNVML, nvl_quad
from wirewise import nvml
from wirewise.errors import UserError
from wirewise.jobenv import read_job_env
from wirewise.jobs.history import RankFigures, job_record

UUIDS = {f"GPU-{i:04d}aaaa-1111-2222": i for i in range(8)}  # what NVML would list on an 8-GPU node


def physical(env: dict[str, str], uuids=lambda: UUIDS) -> list[int] | None:
    return read_job_env(env).physical_gpus(uuids)


def test_outside_slurm_the_physical_index_is_the_name():
    assert physical({}) is None and read_job_env({}).device_ids([4, 5]) is None
    assert physical({"CUDA_VISIBLE_DEVICES": "4,5"}) == [4, 5]


def test_whole_node_without_cgroups_keeps_node_indices():
    env = {"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "SLURM_JOB_GPUS": "0,1,2,3,4,5,6,7"}
    assert read_job_env(env).device_ids([4, 5]) == ["4", "5"]
    env = {"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "2,3", "SLURM_JOB_GPUS": "2,3"}  # ConstrainDevices=no
    assert physical(env) == [2, 3]


def test_cgroup_renumbering_maps_through_slurm_job_gpus():
    """The job got node GPUs 4-7 and sees them as 0-3: planned 6 and 7 are its 2 and 3, and a
    process shown only its second (CUDA_VISIBLE_DEVICES=1, set by the job itself) is on GPU 5."""
    env = {"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "0,1,2,3", "SLURM_JOB_GPUS": "4,5,6,7"}
    assert read_job_env(env).device_ids([6, 7]) == ["2", "3"]
    assert physical(env) == [4, 5, 6, 7]
    assert physical({**env, "CUDA_VISIBLE_DEVICES": "1"}) == [5]
    assert physical({**env, "CUDA_VISIBLE_DEVICES": "3,0"}) == [7, 4]


def test_a_step_on_another_node_reads_its_own_gpus_not_the_batch_nodes():
    """Seen on the multi-node test cluster: `sbatch -N2 --gpus-per-node=2` with wwn1's GPUs 0,1
    taken by another job. The step's task on wwn2 inherits the batch script's SLURM_JOB_GPUS
    (wwn1's 2,3); only SLURM_STEP_GPUS speaks for wwn2 (0,1)."""
    on_wwn2 = {"SLURM_JOB_ID": "3", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "wwn2", "SLURM_NODEID": "1",
               "SLURM_JOB_NODELIST": "wwn[1-2]", "SLURM_STEP_NODELIST": "wwn[1-2]",
               "SLURM_JOB_GPUS": "2,3", "SLURM_STEP_GPUS": "0,1", "CUDA_VISIBLE_DEVICES": "0,1"}
    job = read_job_env(on_wwn2)
    assert (job.physical_gpus(), job.device_ids([0, 1])) == ([0, 1], ["0", "1"])
    assert (job.nodes, job.node_index, job.node_name, job.in_step) == (["wwn1", "wwn2"], 1, "wwn2", True)
    on_wwn1 = {**on_wwn2, "SLURMD_NODENAME": "wwn1", "SLURM_NODEID": "0", "SLURM_STEP_GPUS": "2,3",
               "CUDA_VISIBLE_DEVICES": "2,3"}
    assert read_job_env(on_wwn1).physical_gpus() == [2, 3]
    renumbered = {**on_wwn1, "CUDA_VISIBLE_DEVICES": "0,1"}  # the same step under ConstrainDevices=yes
    assert read_job_env(renumbered).physical_gpus() == [2, 3]


def test_a_step_on_some_of_the_jobs_nodes_has_those_nodes():
    env = {"SLURM_JOB_ID": "9", "SLURM_STEP_ID": "1", "SLURM_JOB_NODELIST": "gpu[01-04]", "SLURM_STEP_NODELIST": "gpu[03-04]",
           "SLURM_NODEID": "1", "SLURM_JOB_CPUS_PER_NODE": "16(x2),8"}
    job = read_job_env(env)
    assert (job.nodes, job.node_index, job.cpus_per_node, job.step_key) == (["gpu03", "gpu04"], 1, 8, "9.1.0")
    batch = read_job_env({k: v for k, v in env.items() if k not in ("SLURM_STEP_ID", "SLURM_STEP_NODELIST")})
    assert (batch.nodes, batch.in_step) == (["gpu01", "gpu02", "gpu03", "gpu04"], False)
    assert job.step_port != batch.step_port and 20000 <= job.step_port < 40000


def test_uuids_map_through_nvml_never_by_position():
    visible = ["GPU-0006aaaa-1111-2222", "GPU-0002aaaa-1111-2222", "GPU-0004aaaa"]  # Slurm 25.11 style; CUDA takes a unique prefix
    env = {"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": ",".join(visible), "SLURM_JOB_GPUS": "2,4,6"}
    assert physical(env) == [6, 2, 4]
    assert read_job_env(env).device_ids([2, 6], lambda: UUIDS) == ["GPU-0002aaaa-1111-2222", "GPU-0006aaaa-1111-2222"]
    with pytest.raises(UserError, match="'GPU-000' to a GPU .it matches more than one GPU"):
        physical({"CUDA_VISIBLE_DEVICES": "GPU-000"})
    with pytest.raises(UserError, match="'GPU-ffff' to a GPU .NVML does not list it"):
        physical({"CUDA_VISIBLE_DEVICES": "GPU-ffff"})


class MigMachine(FakeNVML):
    """The probe tests' fake quad with GPU 2 split into two MIG instances."""

    def nvmlDeviceGetMaxMigDeviceCount(self, h):
        return 7 if h == 2 else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h, slot):
        if slot >= 2:
            raise self.NVMLError(3)  # an empty slot: NVML_ERROR_NOT_FOUND in the real library
        return ("mig", h, slot)

    def nvmlDeviceGetUUID(self, h):
        if isinstance(h, tuple):
            return f"MIG-{h[1]}{h[2]}0000-aaaa-bbbb"
        return super().nvmlDeviceGetUUID(h)


def test_mig_instances_are_their_gpus():
    """Both MIG forms CUDA takes: NVML's own MIG UUID, and MIG-<GPU UUID>/<GI>/<CI>."""
    table = nvml.gpu_uuids(MigMachine(nvl_quad()))
    assert table["MIG-200000-aaaa-bbbb"] == table["MIG-210000-aaaa-bbbb"] == 2 and table["GPU-0001-fake"] == 1
    env = {"CUDA_VISIBLE_DEVICES": "MIG-210000-aaaa-bbbb,MIG-GPU-0003-fake/1/0"}
    assert physical(env, lambda: table) == [2, 3]


@pytest.mark.parametrize("value", ["", "-1", "NoDevFiles", "-1,0"])
def test_what_cuda_takes_for_no_gpu_hides_every_gpu(value):
    """CUDA hides an entry that is neither an index nor a UUID and every one after it; Slurm
    writes NoDevFiles for a GRES without device files."""
    assert physical({"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": value, "SLURM_JOB_GPUS": "0,1"}) == []
    assert physical({"CUDA_VISIBLE_DEVICES": f"1,{value or '-1'},0"}) == [1]


def test_names_neither_slurms_nor_a_position_among_them_are_refused():
    with pytest.raises(UserError, match=r"names GPU 5, which is neither one of this job's GPUs \[2, 3\]"):
        physical({"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "5", "SLURM_JOB_GPUS": "2,3"})
    with pytest.raises(UserError, match="mixes GPU indices and UUIDs"):
        physical({"CUDA_VISIBLE_DEVICES": "0,GPU-0002aaaa"})
    with pytest.raises(UserError, match=r"planned GPUs \[5\] are not among this job's GPUs \[0, 1\]"):
        read_job_env({"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_JOB_GPUS": "0,1"}).device_ids([0, 5])


def test_ranks_and_the_node_name():
    env = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"}
    ranks = read_job_env(env).ranks
    assert (ranks.rank, ranks.local_rank, ranks.nodes) == (5, 1, 2)
    assert read_job_env({"RANK": "0"}).ranks is None and read_job_env({**env, "LOCAL_WORLD_SIZE": "0"}).ranks is None
    assert read_job_env({}).node_name == socket.gethostname().split(".")[0]
    assert read_job_env({}).step_key is None and read_job_env({"SLURM_JOB_ID": "4", "SLURM_RESTART_COUNT": "2"}).step_key == "4.0.2"


# -- the record a job writes of itself ---------------------------------------------------------


@pytest.fixture
def gpu_rank(monkeypatch):
    """This process as a rank on GPUs: torch.cuda's answers stand in for a GPU (none exists here)
    with `used` CUDA devices holding memory, device 0 current. Returns a setter for the env."""
    import torch

    from wirewise.jobs import failures

    def on(env: dict[str, str], used: int = 2) -> None:
        for key in [k for k in os.environ if k.startswith(("SLURM", "CUDA_VISIBLE"))]:
            monkeypatch.delenv(key)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: max(used, 2))
        monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda i: 2**30 if i < used else 0)
        monkeypatch.setattr(torch.cuda.nccl, "version", lambda: (2, 21, 5))  # this CPU build of torch has no NCCL
        monkeypatch.setattr(failures, "memory_now", lambda device: {"cuda_peak_allocated_bytes": 2**30})

    monkeypatch.setattr(nvml, "gpu_uuids", lambda lib=None: UUIDS)  # NVML's table on this node
    return on


def record_of(tmp_path) -> dict:
    from wirewise.jobs.history import record_job

    path = record_job([0.5] * 5, tokens_per_step=1000, run_dir=tmp_path / "run")
    return json.loads(path.read_text())["records"][0]


def test_a_job_on_gpu_uuids_records_their_physical_indices(gpu_rank, tmp_path):
    """Slurm 25.11 may hand a job UUIDs: the record names GPUs 6 and 2, and is a GPU run."""
    gpu_rank({"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "gpu07", "SLURMD_NODENAME": "gpu07",
              "CUDA_VISIBLE_DEVICES": "GPU-0006aaaa-1111-2222,GPU-0002aaaa-1111-2222"})
    record = record_of(tmp_path)
    assert (record["gpus"], record["gpu_count"], record["extra"]["device"]) == ([2, 6], 2, "cuda")
    assert (record["node"], record["nodes"], record["node_count"]) == ("gpu07", ["gpu07"], 1)


def test_a_job_in_a_renumbering_cgroup_records_the_nodes_indices(gpu_rank, tmp_path):
    gpu_rank({"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "gpu07", "SLURMD_NODENAME": "gpu07",
              "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_JOB_GPUS": "4,5"})
    assert record_of(tmp_path)["gpus"] == [4, 5]
    gpu_rank({"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0", "SLURM_JOB_NODELIST": "gpu07", "SLURMD_NODENAME": "gpu07",
              "CUDA_VISIBLE_DEVICES": "0", "SLURM_JOB_GPUS": "4,5", "SLURM_STEP_GPUS": "5"}, used=1)
    assert record_of(tmp_path)["gpus"] == [5]


def test_a_gpu_whose_uuid_nvml_does_not_list_is_counted_and_said(gpu_rank, tmp_path):
    """Never a CPU run for want of a name: counted as one GPU, and the record says why it is unnamed."""
    gpu_rank({"CUDA_VISIBLE_DEVICES": "GPU-ffff"}, used=1)
    record = record_of(tmp_path)
    assert (record["gpus"], record["gpu_count"]) == ([], 1)
    assert "cannot match CUDA_VISIBLE_DEVICES entry 'GPU-ffff'" in record["extra"]["gpu_problem"]


def test_an_environment_the_reader_refuses_leaves_the_record_and_the_job_standing(gpu_rank, tmp_path):
    """SLURM_NODEID=abc is one line from the reader; at a job's end it is a note in its record."""
    gpu_rank({"SLURM_JOB_ID": "7", "SLURM_NODEID": "abc", "CUDA_VISIBLE_DEVICES": "0"}, used=1)
    record = record_of(tmp_path)
    assert (record["gpus"], record["gpu_count"], record["node"]) == ([], 1, socket.gethostname().split(".")[0])
    assert "SLURM_NODEID='abc'" in record["extra"]["gpu_problem"]


def test_two_nodes_gathered_are_two_nodes_with_each_nodes_gpus():
    """What rank 0 gathers from four ranks on two nodes (two GPUs each, other indices on each)."""
    ranks = [RankFigures([0.5] * 3, 1000, 1, 2**30, "cuda", node, [gpu])
             for node, gpu in (("gpu01", 2), ("gpu01", 3), ("gpu02", 0), ("gpu02", 1))]
    record, _ = job_record(ranks, None, model="tiny-mistral")
    assert (record.node, record.nodes, record.node_count) == ("gpu01", ["gpu01", "gpu02"], 2)
    assert (record.gpus, record.gpu_count, record.world_size) == ([2, 3], 4, 4)
    assert record.extra["node_gpus"] == {"gpu01": [2, 3], "gpu02": [0, 1]}
    cpu = [RankFigures([0.5] * 3, 1000, 1, 2**20, "cpu", node, []) for node in ("gpu01", "gpu02")]
    record, _ = job_record(cpu, None)
    assert (record.nodes, record.gpus, record.gpu_count) == (["gpu01", "gpu02"], [], 0)


# -- on the real multi-node Slurm ----------------------------------------------------------------

RECORDING_RANK = """
import os, sys
import torch
import torch.distributed as dist
from wirewise.jobs import failures

# No GPU exists here (the test nodes' GPUs are character devices): torch.cuda's answers stand in,
# each rank on the CUDA device of its local rank. What is read from Slurm is real.
local = int(os.environ["SLURM_LOCALID"])
torch.cuda.is_available = torch.cuda.is_initialized = lambda: True
torch.cuda.current_device = lambda: local
torch.cuda.device_count = lambda: len(os.environ["CUDA_VISIBLE_DEVICES"].split(","))
torch.cuda.max_memory_reserved = lambda i: 2**30 if i == local else 0
torch.cuda.nccl.version = lambda: (2, 21, 5)
failures.memory_now = lambda device: {"cuda_peak_allocated_bytes": 2**30}

# A job's own start, without wirewise launch: its ranks from srun's variables.
os.environ.update(RANK=os.environ["SLURM_PROCID"], WORLD_SIZE=os.environ["SLURM_NTASKS"], LOCAL_RANK=str(local),
                  LOCAL_WORLD_SIZE=str(int(os.environ["SLURM_NTASKS"]) // int(os.environ["SLURM_NNODES"])))
dist.init_process_group("gloo")
from wirewise.jobs.history import record_job
path = record_job([0.5] * 5, tokens_per_step=1000, run_dir=sys.argv[1])
dist.destroy_process_group()
if path is not None:
    print("RESULT", path)
"""


@pytest.mark.multinode
def test_a_two_node_job_without_wirewise_launch_records_both_nodes_and_their_gpus(multinode, tmp_path):
    """`sbatch -N2 --gpus-per-node=2` of a script whose srun starts two ranks per node that call
    record_job: the record names wwn1 and wwn2, wwn1's GPUs and all four. Another job holds
    wwn1's GPUs 0,1 first, so the two nodes hold other indices (wwn1 2,3, wwn2 0,1) and the step
    on wwn2 inherits wwn1's SLURM_JOB_GPUS from the batch script."""

    holder = sbatch("-p", multinode.partition, "-w", "wwn1", "--gpus-per-node=2", "-o", "/dev/null",
                    "-D", str(tmp_path), "--wrap", "sleep 600")
    try:
        wait_running(holder)
        (tmp_path / "rank.py").write_text(RECORDING_RANK)
        script = tmp_path / "job.sh"
        script.write_text("#!/bin/bash\nexport MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1) MASTER_PORT=29533\n"
                          f"srun {shlex.join([sys.executable, str(tmp_path / 'rank.py'), str(tmp_path / 'run')])}\n")
        _, log = run_batch(["-p", multinode.partition, "-N", "2", "-w", "wwn[1-2]", "--ntasks-per-node=2",
                                 "--gpus-per-node=2", "-t", "10", "-D", str(tmp_path)], script, tmp_path / "job.out")
    finally:
        subprocess.run(["scancel", holder], check=False)
    record = json.loads((tmp_path / "run" / "result.json").read_text())["records"][0]
    assert (record["node"], record["nodes"], record["node_count"]) == ("wwn1", ["wwn1", "wwn2"], 2), log
    assert (record["gpus"], record["gpu_count"], record["world_size"]) == ([2, 3], 4, 4)
    assert record["extra"]["node_gpus"] == {"wwn1": [2, 3], "wwn2": [0, 1]} and record["extra"]["device"] == "cuda"


def wait_running(job_id: str, limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        state = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True).stdout.strip()
        if state == "RUNNING":
            return
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not start within {limit_s:.0f} s")
