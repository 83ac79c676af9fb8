"""The result record: one per measurement (docs/contracts.md, "Result record").

Workloads on compute nodes write these as JSON lines; `ingest` stores them. The
fields are flat and map one to one onto the `results` table, so a record is the
row and nothing is stored twice. Collective fields are empty on training rows
and the other way round.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# The environment variables a record's `env` keeps: what changes how NCCL and torch move data.
RECORDED_ENV_PREFIXES = (
    "NCCL_", "TORCH_NCCL_", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "OMP_NUM_THREADS", "TORCH_DISTRIBUTED",
)

Status = Literal["ok", "oom", "failed", "timeout", "cancelled"]
Workload = Literal["collective", "train"]
Source = Literal["wirewise", "nccl-tests"]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class ResultRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # identity: record_id makes ingestion idempotent
    record_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    task_id: str | None = None
    campaign: str | None = None
    workload: Workload
    source: Source = "wirewise"
    params: dict[str, Any] = Field(default_factory=dict)

    # where it ran
    node: str | None = None  # the first node (a multi-node task's node 0)
    node_count: int | None = Field(1, ge=1)  # None: an imported log that does not show every host
    nodes: list[str] = Field(default_factory=list)  # every node, in node-rank order
    node_fingerprints: list[str | None] = Field(default_factory=list)  # each node's wiring, as `nodes`
    gpus: list[int] = Field(default_factory=list)  # physical indices
    gpu_count: int | None = 0  # None: unknown (an imported log that shows no rank count)
    fingerprint: str | None = None
    fabric: str | None = None

    # outcome
    status: Status = "ok"
    error: str | None = None
    started_at: datetime = Field(default_factory=utcnow)
    ended_at: datetime = Field(default_factory=utcnow)
    versions: dict[str, str | None] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)  # NCCL_* and friends in effect

    # collectives (nccl-tests names)
    op: str | None = None
    bytes: int | None = None
    count: int | None = None
    dtype: str | None = None
    in_place: bool | None = None
    time_us: float | None = None
    algbw_gbs: float | None = None
    busbw_gbs: float | None = None
    wrong: int | None = None

    # training
    model: str | None = None
    strategy: str | None = None
    world_size: int | None = None
    micro_batch: int | None = None
    seq_len: int | None = None
    step_time_s: float | None = None
    samples_per_s: float | None = None
    tokens_per_s: float | None = None
    peak_mem_bytes: list[int] | None = None  # per rank
    model_state_bytes: list[int] | None = None  # per rank
    mfu: float | None = None
    extra: dict[str, Any] = Field(default_factory=dict)  # anything a workload adds beyond the contract
