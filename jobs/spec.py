"""What a task asks a compute node to do. Built by the orchestrator, read by jobs.launch.

Pure pydantic (no torch), so the control plane can build and validate specs.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Backend = Literal["nccl", "gloo"]

# Workload name -> "module:function" run on every rank (see jobs.worker).
WORKLOADS = {
    "collective": "jobs.collectives.loop:run_rank",
    "train": "jobs.train.loop:run_rank",
}


class TaskSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    campaign: str | None = None
    workload: Literal["collective", "train"]
    params: dict[str, Any] = Field(default_factory=dict)  # validated by the workload's own model

    gpus: list[int] = Field(default_factory=list)  # physical GPU indices on each node; [] = CPU ranks
    nproc_per_node: int = 1
    nnodes: int = 1
    backend: Backend = "gloo"
    env: dict[str, str] = Field(default_factory=dict)  # set in every rank (e.g. NCCL_P2P_DISABLE)
    timeout_s: float = 600.0

    node: str | None = None  # name recorded with results; default: hostname
    topology_file: str | None = None  # `nvidia-smi topo -m` text to fingerprint instead of probing

    @model_validator(mode="after")
    def _gpus_match_ranks(self) -> TaskSpec:
        if self.nproc_per_node < 1 or self.nnodes < 1:
            raise ValueError("nproc_per_node and nnodes must be at least 1")
        if self.gpus and len(self.gpus) != self.nproc_per_node:
            raise ValueError(f"{len(self.gpus)} GPUs given for {self.nproc_per_node} ranks per node: give one GPU per rank")
        if self.backend == "nccl" and not self.gpus:
            raise ValueError("the nccl backend needs GPUs: give --gpus or use --backend gloo")
        return self

    @property
    def world_size(self) -> int:
        return self.nproc_per_node * self.nnodes
