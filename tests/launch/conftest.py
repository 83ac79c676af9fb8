"""Helpers for the tests of `wirewise launch`, `wirewise.advice()` and the job history: a
workstation's environment, and a GPU node where none exists (the fake NVML of
tests/report/fake_nvml: one H200 NVL quad)."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

from tests.conftest import ROOT

FAKE_NVML = ROOT / "tests" / "report" / "fake_nvml"


def no_slurm(**extra: str) -> dict[str, str]:
    """A workstation's environment: no allocation, nothing pinned."""
    env = {key: "" for key in os.environ if key.startswith("SLURM_")}
    return {**env, "SLURM_JOB_ID": "", **extra}


def fake_gpu_node(**extra: str) -> dict[str, str]:
    """The environment of a process on the fake NVML's quad (the module first on its path)."""
    return no_slurm(PYTHONPATH=os.pathsep.join([str(FAKE_NVML), str(ROOT)]), **extra)


@pytest.fixture
def gpu_node(monkeypatch, tmp_path):
    """This process on the fake NVML's quad: its `pynvml` is the fake module."""
    spec = importlib.util.spec_from_file_location("pynvml", FAKE_NVML / "pynvml.py")
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("WIREWISE_RUNS", str(tmp_path / "runs"))


def launcher_config_of(distributed_type: str, processes: int, *, use_cpu: bool = False, **own) -> dict:
    """The accelerate launcher config docs/launch.md ("The configuration", "CPU ranks") says a
    launch writes, spelt out: the keys `accelerate config` writes for one machine, as the
    descriptor's template (templates/accelerate/) holds them, with what the launch decides
    (`distributed_type`, `num_processes`, `use_cpu`, and `own`: the precision, the FSDP block,
    the DeepSpeed file). Literal, so a test of the launch's config fails when the config changes
    (comparing with wirewise.configs.launcher_config called the same way never could)."""
    return {
        "compute_environment": "LOCAL_MACHINE", "debug": False, "distributed_type": distributed_type,
        "downcast_bf16": "no", "enable_cpu_affinity": False, "machine_rank": 0, "main_training_function": "main",
        "num_machines": 1, "num_processes": processes, "rdzv_backend": "static", "same_network": True,
        "tpu_env": [], "tpu_use_cluster": False, "tpu_use_sudo": False, "use_cpu": use_cpu, **own,
    }


# ddp on two CPU ranks: the MULTI_GPU launcher (one process per rank) with use_cpu, no mixed precision.
DDP_ON_TWO_CPU_RANKS = launcher_config_of("MULTI_GPU", 2, use_cpu=True, gpu_ids="all", mixed_precision="no")
# fsdp on two GPUs: fully_shard (FSDP2), one unit per Mistral decoder layer, bf16.
FSDP_ON_TWO_GPUS = launcher_config_of("FSDP", 2, mixed_precision="bf16", fsdp_config={
    "fsdp_activation_checkpointing": False, "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
    "fsdp_cpu_ram_efficient_loading": False, "fsdp_offload_params": False, "fsdp_reshard_after_forward": True,
    "fsdp_state_dict_type": "SHARDED_STATE_DICT", "fsdp_transformer_layer_cls_to_wrap": "MistralDecoderLayer",
    "fsdp_version": 2,
})
