"""Planned physical GPUs -> the CUDA_VISIBLE_DEVICES entries a job must use for them, for the
ways Slurm hands GPUs to a job. The UUID table stands in for NVML (no GPU here)."""

from __future__ import annotations

import pytest

from wirewise.errors import UserError
from wirewise.orchestrator.slurm.gpus import device_ids, visible_devices

UUIDS = {f"GPU-{i:04d}aaaa": i for i in range(8)}  # what NVML would list on an 8-GPU node


def test_outside_slurm_the_physical_index_is_the_name():
    assert device_ids([4, 5], {}) is None


def test_whole_node_without_cgroups_keeps_node_indices():
    env = {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "SLURM_JOB_GPUS": "0,1,2,3,4,5,6,7"}
    assert device_ids([4, 5], env) == ["4", "5"]


def test_cgroup_renumbering_maps_through_slurm_job_gpus():
    """The job got node GPUs 4-7 and sees them as 0-3: planned 6 and 7 are its 2 and 3."""
    env = {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "SLURM_JOB_GPUS": "4,5,6,7"}
    assert device_ids([6, 7], env) == ["2", "3"]


def test_uuids_map_through_nvml_never_by_position():
    visible = ["GPU-0006aaaa", "GPU-0002aaaa", "GPU-0004aaaa"]  # Slurm 25.11 style, in no particular order
    env = {"CUDA_VISIBLE_DEVICES": ",".join(visible), "SLURM_JOB_GPUS": "2,4,6"}
    assert device_ids([2, 6], env, uuids=lambda: UUIDS) == ["GPU-0002aaaa", "GPU-0006aaaa"]


def test_planned_gpus_the_job_does_not_hold_are_refused():
    env = {"CUDA_VISIBLE_DEVICES": "0,1", "SLURM_JOB_GPUS": "0,1"}
    with pytest.raises(UserError, match=r"planned GPUs \[5\] are not among this job's GPUs \[0, 1\]"):
        device_ids([0, 5], env)
    with pytest.raises(UserError, match="NVML does not list"):
        device_ids([0], {"CUDA_VISIBLE_DEVICES": "GPU-ffff"}, uuids=lambda: UUIDS)


def test_the_value_a_command_is_given_names_the_planned_gpus_as_the_job_does():
    """visible_devices, what `launch`, `run --whole-node` and `wirewise.advice()` set
    CUDA_VISIBLE_DEVICES to: the job's names for the planned GPUs, or their indices."""
    assert visible_devices([4, 5], {}) == "4,5"
    assert visible_devices([6, 7], {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "SLURM_JOB_GPUS": "4,5,6,7"}) == "2,3"
    env = {"CUDA_VISIBLE_DEVICES": "GPU-0006aaaa,GPU-0002aaaa"}
    assert visible_devices([2, 6], env, uuids=lambda: UUIDS) == "GPU-0002aaaa,GPU-0006aaaa"
