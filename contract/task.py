"""What a task asks a compute node to do. Built by the control plane, run by wirewise.jobs.supervise.

Pure pydantic (no torch), so the control plane can build and validate specs on a login node.

A task's id is its key: a hash of what it measures (campaign, workload, parameters, GPUs,
node, ranks, backend, environment) and its repeat, so a task planned, resubmitted or requeued is
recognised as the same task, and planning one spec twice gives the same ids.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from wirewise.registry import WorkloadName

Backend = Literal["nccl", "gloo"]
KEY_FIELDS = ("campaign", "workload", "params", "gpus", "node", "nproc_per_node", "nnodes", "backend", "env", "hosts")


def task_key(fields: dict[str, Any]) -> str:
    """12 hex digits of sha256 over the canonical JSON of the key fields, then the repeat."""
    return key_with_repeat(canonical_key_text(fields), fields.get("repeat", 0))


def canonical_key_text(fields: dict[str, Any]) -> str:
    """The key fields as canonical JSON. `hosts` counts only when a task is pinned, so a task
    that is not keeps the id it had before tasks could be pinned."""
    keyed = {name: fields.get(name) for name in KEY_FIELDS if name != "hosts" or fields.get(name)}
    return json.dumps(keyed, sort_keys=True, separators=(",", ":"), default=str)


def key_with_repeat(key_text: str, repeat: int) -> str:
    """Repeats of one measurement share the key text: a planner hashes it once per measurement."""
    return hashlib.sha256(f"{key_text}#{repeat}".encode()).hexdigest()[:12]


class TaskSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str = ""  # empty: derived from the key fields (task_key)
    campaign: str | None = None
    workload: WorkloadName
    params: dict[str, Any] = Field(default_factory=dict)  # validated by the workload's own model
    repeat: int = Field(0, ge=0)  # the n-th measurement of the same thing in one campaign

    gpus: list[int] = Field(default_factory=list)  # physical GPU indices on each node; [] = CPU ranks
    nproc_per_node: int = 1
    nnodes: int = 1
    backend: Backend = "gloo"
    env: dict[str, str] = Field(default_factory=dict)  # set in every rank (e.g. NCCL_P2P_DISABLE)
    timeout_s: float = Field(600.0, gt=0, allow_inf_nan=False)  # inf: no timedelta for the process group

    node: str | None = None  # name recorded with results; default: hostname
    # The Slurm nodes the task must run on (a fleet campaign's node, a pair test's two), sorted:
    # the same measurement on other nodes is another task. Empty: wherever the scheduler puts it.
    hosts: list[str] = Field(default_factory=list)
    topology_file: str | None = None  # `nvidia-smi topo -m` text to fingerprint instead of probing

    # Not part of the key: how the task was described and run, not what it measures.
    labels: dict[str, str] = Field(default_factory=dict)  # planner's words (placement, transport), put in every record's params
    attempt: int = Field(1, ge=1)  # the n-th run of this task (a requeue or a resume runs it again)
    device_ids: list[str] | None = None  # CUDA_VISIBLE_DEVICES entries for `gpus` where the job numbers GPUs its own way (Slurm cgroups, UUIDs)

    @model_validator(mode="after")
    def _gpus_match_ranks(self) -> TaskSpec:
        if self.nproc_per_node < 1 or self.nnodes < 1:
            raise ValueError("nproc_per_node and nnodes must be at least 1")
        if self.gpus and len(self.gpus) != self.nproc_per_node:
            raise ValueError(f"{len(self.gpus)} GPUs given for {self.nproc_per_node} ranks per node: give one GPU per rank")
        if self.hosts and len(self.hosts) != self.nnodes:
            raise ValueError(f"{len(self.hosts)} host(s) pinned for a task on {self.nnodes} node(s)")
        if self.backend == "nccl" and not self.gpus:
            raise ValueError("the nccl backend needs GPUs: give --gpus or use --backend gloo")
        if not self.task_id:
            self.task_id = task_key(self.model_dump(mode="json", include={*KEY_FIELDS, "repeat"}))
        return self

    @property
    def world_size(self) -> int:
        return self.nproc_per_node * self.nnodes
