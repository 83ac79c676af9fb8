"""SQLAlchemy 2.0 typed models. Schema changes go through alembic (db/versions)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    ForeignKey,
    Index,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    type_annotation_map = {
        dict[str, Any]: JSON,
        list[int]: JSON,
        list[Any]: JSON,
        list[str]: JSON,
        datetime: DateTime(timezone=True),
    }


class NodeRow(Base):
    """A host, by name. Its wiring lives in TopologyRow, linked through NodeTopologyRow."""

    __tablename__ = "nodes"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    observations: Mapped[list[NodeTopologyRow]] = relationship(back_populates="node")


class TopologyRow(Base):
    """One wiring. Same wiring on many nodes (or renumbered) = one row."""

    __tablename__ = "topologies"

    id: Mapped[int] = mapped_column(primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), unique=True)
    fabric: Mapped[str] = mapped_column(String(32), index=True)
    switched: Mapped[bool | None]
    gpu_count: Mapped[int]
    gpu_model: Mapped[str | None] = mapped_column(String(128))
    parsed: Mapped[dict[str, Any]]  # the topology object of docs/contracts.md; per-node links and paths live in NodeTopologyRow.details
    raw_text: Mapped[str | None] = mapped_column(Text)  # `nvidia-smi topo -m` as read
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    observations: Mapped[list[NodeTopologyRow]] = relationship(back_populates="topology")


class NodeTopologyRow(Base):
    """A node seen with a topology; what is not part of the fingerprint lives here."""

    __tablename__ = "node_topologies"
    __table_args__ = (UniqueConstraint("node_id", "topology_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    node_id: Mapped[int] = mapped_column(ForeignKey("nodes.id"))
    topology_id: Mapped[int] = mapped_column(ForeignKey("topologies.id"))
    details: Mapped[dict[str, Any]]  # UUIDs, PCI ids, CPU affinity, driver/CUDA/NCCL versions
    first_seen: Mapped[datetime] = mapped_column(default=utcnow)
    last_seen: Mapped[datetime] = mapped_column(default=utcnow)

    node: Mapped[NodeRow] = relationship(back_populates="observations")
    topology: Mapped[TopologyRow] = relationship(back_populates="observations")


class CampaignRow(Base):
    __tablename__ = "campaigns"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    spec: Mapped[dict[str, Any]]
    folder: Mapped[str | None] = mapped_column(String(4096))  # spec, plan, task run folders, submitit logs
    executor: Mapped[str | None] = mapped_column(String(16))  # local | slurm
    slurm_arrays: Mapped[list[str]] = mapped_column(default=list)  # every array job id submitted: one sacct reads them all
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    tasks: Mapped[list[TaskRow]] = relationship(back_populates="campaign")


class TaskRow(Base):
    """One task: a workload on exact GPUs. Campaign tasks are tracked through their array element;
    a `bench` run is a task without a campaign. `key` is the task id (wirewise.task.task_key)."""

    __tablename__ = "tasks"

    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(128), unique=True)
    campaign_id: Mapped[int | None] = mapped_column(ForeignKey("campaigns.id"), index=True)
    workload: Mapped[str] = mapped_column(String(32))
    params: Mapped[dict[str, Any]]
    gpus: Mapped[list[int]]
    node: Mapped[str | None] = mapped_column(String(255))
    placement: Mapped[str | None] = mapped_column(String(64))  # packed | spread | all | explicit | cpu
    transport: Mapped[str | None] = mapped_column(String(16))
    repeat: Mapped[int] = mapped_column(default=0)
    bundle: Mapped[int | None] = mapped_column()  # the array element (bundle) that runs it, in its submission
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    slurm_job_id: Mapped[str | None] = mapped_column(String(64))
    slurm_array_id: Mapped[str | None] = mapped_column(String(64))
    attempts: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    campaign: Mapped[CampaignRow | None] = relationship(back_populates="tasks")


class ResultRow(Base):
    """One measurement; columns are the fields of wirewise.record.ResultRecord."""

    __tablename__ = "results"
    __table_args__ = (
        Index("ix_results_collective", "fingerprint", "op", "bytes"),
        Index("ix_results_train", "fingerprint", "model", "strategy", "gpu_count"),
        # `wirewise results` / `report` / `doctor` filters (db/versions/0004)
        Index("ix_results_fabric_case", "fabric", "op", "bytes"),
        Index("ix_results_node_started", "node", "started_at"),
        Index("ix_results_started_at", "started_at"),
        Index("ix_results_campaign_case", "campaign", "workload", "model"),
        Index("ix_results_source", "source"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    record_id: Mapped[str] = mapped_column(String(64), unique=True)
    task_id: Mapped[str | None] = mapped_column(String(128), index=True)
    campaign: Mapped[str | None] = mapped_column(String(255), index=True)
    workload: Mapped[str] = mapped_column(String(16), index=True)
    source: Mapped[str] = mapped_column(String(16), default="wirewise")
    params: Mapped[dict[str, Any]]

    node: Mapped[str | None] = mapped_column(String(255))
    node_count: Mapped[int | None] = mapped_column(default=1)  # a multi-node task's nodes, in node-rank order:
    nodes: Mapped[list[str]] = mapped_column(default=list)
    node_fingerprints: Mapped[list[Any]] = mapped_column(default=list)
    gpus: Mapped[list[int]]
    gpu_count: Mapped[int | None] = mapped_column(index=True)  # NULL: unknown (db/versions/0005)
    fingerprint: Mapped[str | None] = mapped_column(String(64), index=True)
    fabric: Mapped[str | None] = mapped_column(String(32), index=True)

    status: Mapped[str] = mapped_column(String(16), index=True)
    error: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime]
    ended_at: Mapped[datetime] = mapped_column(index=True)
    versions: Mapped[dict[str, Any]]
    env: Mapped[dict[str, Any]]

    op: Mapped[str | None] = mapped_column(String(32), index=True)
    bytes: Mapped[int | None] = mapped_column(BigInteger)
    count: Mapped[int | None] = mapped_column(BigInteger)
    dtype: Mapped[str | None] = mapped_column(String(16))
    in_place: Mapped[bool | None]
    time_us: Mapped[float | None]
    algbw_gbs: Mapped[float | None]
    busbw_gbs: Mapped[float | None]
    wrong: Mapped[int | None] = mapped_column(BigInteger)

    model: Mapped[str | None] = mapped_column(String(255), index=True)
    strategy: Mapped[str | None] = mapped_column(String(32), index=True)
    world_size: Mapped[int | None]
    micro_batch: Mapped[int | None]
    seq_len: Mapped[int | None]
    step_time_s: Mapped[float | None]
    samples_per_s: Mapped[float | None]
    tokens_per_s: Mapped[float | None]
    peak_mem_bytes: Mapped[list[int] | None] = mapped_column(JSON)
    model_state_bytes: Mapped[list[int] | None] = mapped_column(JSON)
    mfu: Mapped[float | None]
    extra: Mapped[dict[str, Any]]


class PlacedJobRow(Base):
    """A user's own command submitted by `wirewise run`, with the placement it got: the GPUs it
    runs on (chosen and pinned, or given by Slurm), their predicted busbw next to the best free
    set's, and the strategy exported to it."""

    __tablename__ = "placed_jobs"

    id: Mapped[int] = mapped_column(primary_key=True)
    slurm_job_id: Mapped[str] = mapped_column(String(64), index=True)
    mode: Mapped[str] = mapped_column(String(16))  # whole-node (pinned) or shared (Slurm picks)
    command: Mapped[list[Any]]  # the argument list, exactly as given
    node: Mapped[str | None] = mapped_column(String(255))
    requested_gpus: Mapped[int]
    gpus: Mapped[list[int] | None] = mapped_column(JSON)  # None until Slurm says which (shared)
    fingerprint: Mapped[str | None] = mapped_column(String(64), index=True)
    fabric: Mapped[str | None] = mapped_column(String(32))
    constraint: Mapped[str | None] = mapped_column(String(255))
    predicted_busbw_gbs: Mapped[float | None]
    basis: Mapped[str | None] = mapped_column(String(16))
    best_free_gpus: Mapped[list[int] | None] = mapped_column(JSON)
    best_free_busbw_gbs: Mapped[float | None]
    model: Mapped[str | None] = mapped_column(String(255))
    strategy: Mapped[str | None] = mapped_column(String(32))
    warnings: Mapped[list[Any]]
    folder: Mapped[str] = mapped_column(Text)  # submitit's folder: the job's logs
    submitted_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
