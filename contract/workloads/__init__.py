"""Each workload's parameter model and rules, one module each (collective, train).

A workload's `Params.to_task(ranks, ...)` is the one way to turn options into a TaskSpec:
the bench commands, the campaign planner and `wirewise run` all call it, so a rule such as
"--engine accelerate needs GPUs" or "pcie sets NCCL_P2P_DISABLE=1" cannot be skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from wirewise.errors import UserError, first_error

Transport = Literal["default", "pcie"]

# What each --transport sets in every rank's environment.
# pcie: NCCL_P2P_DISABLE=1 turns off NCCL's peer-to-peer transport, over NVLink and PCIe
# alike; NCCL then moves intra-node traffic through host memory (its SHM transport), i.e.
# GPU -> PCIe -> host -> PCIe -> GPU: the PCIe path. SHM stays on on purpose: without it
# NCCL falls back to the network transport (sockets or IB loopback), which measures the
# NIC, not PCIe. NVLink SHARP (NVLS, NVSwitch multicast) is governed by NCCL_NVLS_ENABLE,
# which is left exactly as the environment sets it; NCCL never uses NVLS on 2 GPUs.
TRANSPORT_ENV: dict[str, dict[str, str]] = {
    "default": {},
    "pcie": {"NCCL_P2P_DISABLE": "1"},
}


def transport_env(transport: str, env: dict[str, str]) -> dict[str, str]:
    """The environment a run on `transport` records: `env` (what else was set) with the
    transport's own settings. ValueError where `env` contradicts the transport or is what
    another transport sets: such a row would be stored under the wrong transport and mix
    with the other transport's rows in every query by transport."""
    for name, settings in TRANSPORT_ENV.items():
        if name != transport and settings and all(env.get(k) == v for k, v in settings.items()):
            given = " ".join(f"{k}={v}" for k, v in settings.items())
            raise ValueError(f"{given} is what --transport {name} sets: give --transport {name}, not {transport}")
    for key, value in TRANSPORT_ENV[transport].items():
        if env.get(key, value) != value:
            raise ValueError(f"--transport {transport} sets {key}={value}, but {key}={env[key]} was given")
    return {**env, **TRANSPORT_ENV[transport]}


def transport_set_by(env: dict[str, str]) -> str:
    """The transport whose settings `env` holds (NCCL_P2P_DISABLE=1: pcie), else default: how
    a run that names no transport ran (an imported log's own command line or NCCL INFO lines)."""
    for name, settings in TRANSPORT_ENV.items():
        if settings and all(env.get(k) == v for k, v in settings.items()):
            return name
    return "default"


@dataclass(frozen=True)
class Ranks:
    """How a task's ranks sit on one node: the physical GPUs (one rank each; [] = CPU ranks),
    the rank count, and the process-group backend."""

    gpus: list[int]
    count: int
    backend: str  # nccl | gloo

    @property
    def on_cpu(self) -> bool:
        return not self.gpus


def make_task(workload: str, params: dict[str, Any], ranks: Ranks, env: dict[str, str], **task: Any):
    """The TaskSpec for a workload's checked params; a bad task field is a one-line UserError."""
    from pydantic import ValidationError

    from wirewise.task import TaskSpec

    fields = dict(workload=workload, params=params, gpus=ranks.gpus, nproc_per_node=ranks.count,
                  backend=ranks.backend, env=env, **task)
    try:
        return TaskSpec(**fields)
    except ValidationError as exc:
        timeout = {"timeout_s": "--timeout"}
        raise first_error(exc, timeout, {"timeout_s": task.get("timeout_s")}) from None


__all__ = ["TRANSPORT_ENV", "Ranks", "Transport", "UserError", "make_task", "transport_env", "transport_set_by"]
