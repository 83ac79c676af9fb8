"""The result record: one per measurement (docs/contracts.md, "Result record").

Workloads on compute nodes write these as JSON lines; `ingest` stores them. The
fields are flat and map one to one onto the `results` table, so a record is the
row and nothing is stored twice. Collective fields are empty on training rows
and the other way round.

`extra` holds what a record says beyond its columns, under two kinds of key: those one side
writes and the other reads (the compute side's figures that reports, advice and health read),
each declared in Extra with what it holds, and keys private to the side that writes them (kept
with the record and shown as they are, read by no code of the other side: a training run's
`step_times_s`, the importer's `identified_by`). tests/test_architecture.py finds a key read
across the seam that Extra does not declare.
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from wirewise.clock import as_utc, utcnow
from wirewise.limits import MAX_INT
from wirewise.settings import PEAK_TFLOPS

# The environment variables a record's `env` keeps: what changes how NCCL and torch move data.
RECORDED_ENV_PREFIXES = (
    "NCCL_", "TORCH_NCCL_", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "OMP_NUM_THREADS", "TORCH_DISTRIBUTED",
)

Status = Literal["ok", "oom", "failed", "timeout", "cancelled"]
Workload = Literal["collective", "train"]
# wirewise: its own benchmarks; nccl-tests: imported logs; job: a real training job's own figures
# (wirewise.jobs.history: the Trainer callback or record_job in a custom loop).
Source = Literal["wirewise", "nccl-tests", "job"]


# The measured figures and counts a record may carry: finite and never negative, counts
# within the 64-bit integers the database stores. One check (`figure_problem`) for every
# path into the store: `collect` of result files and the nccl-tests reader.
FIGURES = ("time_us", "algbw_gbs", "busbw_gbs", "step_time_s", "samples_per_s", "tokens_per_s", "mfu")
COUNTS = ("bytes", "count", "gpu_count", "wrong", "world_size", "micro_batch", "seq_len")
PER_RANK = ("peak_mem_bytes", "model_state_bytes", "gpus")

# A record's `mfu` has one basis, so that every reader that pools MFU pools like with like: the
# GPU's datasheet dense bf16 peak (wirewise.topology.hardware), what every GPU has and no run
# changes. A measured peak (PEAK_TFLOPS, e.g. a bf16 matmul's TFLOP/s) gives a second MFU,
# kept beside it in extra under its own names (mfu_measured_peak, measured_peak_tflops).
MFU_BASIS = "datasheet"


class Extra(TypedDict, total=False):
    """The keys of a record's `extra` that both sides read (the module's docstring says why)."""

    # how it ran, every workload
    backend: str  # the torch.distributed backend: nccl or gloo
    device: str  # what the ranks ran on: cuda, or cpu (a CPU run holds no GPUs: gpu_count 0)
    # collectives, as nccl-tests names them
    redop: str | None  # the reduction of a reducing op (sum, prod, max, min, avg)
    root: int | None  # the root rank of a rooted op (broadcast, reduce)
    avg_busbw_gbs: float  # the sweep's "Avg bus bandwidth", on the last row of each op
    timer: str  # what took the time: cuda-events, cuda-graph, or perf-counter on CPU ranks
    # training
    precision: str  # what it ran as: fp32, bf16-mixed or bf16 ("auto" resolved)
    n_params: int  # the model's parameters, counted before any wrapping (the MFU's N)
    device_name: str | None  # rank 0's GPU model, as NVML names it
    param_bytes: list[int]  # per rank: parameters held
    grad_bytes: list[int]  # per rank: gradients held
    optimizer_bytes: list[int]  # per rank: optimizer state held
    losses: list[float]  # every step's loss, in order
    # MFU: `mfu` is on the datasheet's peak (MFU_BASIS); a measured peak gives a second one beside it
    mfu_basis: str  # MFU_BASIS
    peak_tflops: float | None  # the datasheet's dense bf16 TFLOP/s per GPU that `mfu` is against
    peak_source: str | None  # where that peak comes from
    mfu_with_attention: float | None  # MFU with the attention FLOPs counted
    mfu_measured_peak: float  # MFU against PEAK_TFLOPS's peak, where it was set
    measured_peak_tflops: float  # that peak
    measured_peak_source: str  # where it was read
    mfu_datasheet: float | None  # records before MFU_BASIS: the datasheet's MFU (mfu_on_datasheet moves it)


def figure_problem(name: str, value: Any) -> str | None:
    """Why a figure or a count is not a measurement (NaN, Inf, negative, past 64 bits), or None."""
    if value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name} {value} is not a measurement"
    if value < 0:
        return f"{name} {value} is negative"
    if isinstance(value, int) and value > MAX_INT:
        return f"{name} {value} does not fit a 64-bit integer"
    return None


def record_problem(record: ResultRecord) -> str | None:
    """The first figure of a record that is not a measurement, or None."""
    for name in FIGURES + COUNTS:
        problem = figure_problem(name, getattr(record, name))
        if problem:
            return problem
    for name in PER_RANK:
        for value in getattr(record, name) or ():
            problem = figure_problem(name, value)
            if problem:
                return problem
    return None


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
    # the transports NCCL's INFO lines show the run's connections used (wirewise.nccl_info):
    # "P2P/CUMEM", "NVLS+P2P/IPC", "P2P/IPC+NET/IB/GDRDMA", "local" (one rank); None: not shown
    transport_carried: str | None = None

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
    extra: dict[str, Any] = Field(default_factory=dict)  # Extra's keys, and keys private to the side that wrote them

    @model_validator(mode="after")
    def _mfu_on_its_basis(self) -> ResultRecord:
        if self.workload == "train":
            self.mfu, self.extra = mfu_on_datasheet(self.mfu, self.extra)
        return self

    @field_validator("started_at", "ended_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return as_utc(value)


def mfu_on_datasheet(mfu: float | None, extra: dict[str, Any]) -> tuple[float | None, dict[str, Any]]:
    """A training record's (mfu, extra) on the one basis (MFU_BASIS). Records written before the
    basis was recorded took `mfu` against PEAK_TFLOPS where it was set (their
    extra.peak_source names it) and the datasheet's in extra.mfu_datasheet: the measured-peak
    figures move to their own names and the datasheet's become mfu and peak_tflops. Every other
    record is returned as it is. The store's migration 0011 applies this to the rows stored."""
    from wirewise.topology.hardware import datasheet_peak

    if "mfu_basis" in extra or not str(extra.get("peak_source") or "").startswith(PEAK_TFLOPS.name):
        return mfu, extra
    moved = {key: value for key, value in extra.items() if key != "mfu_datasheet"}
    datasheet = extra.get("mfu_datasheet")
    tflops, source = datasheet_peak(extra.get("device_name"))
    with_attention = extra.get("mfu_with_attention")
    moved.update(
        mfu_basis=MFU_BASIS, peak_tflops=tflops, peak_source=source,
        mfu_with_attention=with_attention * datasheet / mfu if with_attention and datasheet and mfu else None,
        mfu_measured_peak=mfu, measured_peak_tflops=extra.get("peak_tflops"), measured_peak_source=extra["peak_source"],
    )
    return datasheet, moved
