"""The campaign spec: one YAML file that names the whole grid of measurements.

```yaml
name: article-h200
workloads:
  - collectives: {ops: [all_reduce, all_gather, reduce_scatter], min_bytes: 1M, max_bytes: 1G}
  - train: {models: [mistral-7b], strategies: [ddp, zero1, zero2, zero3, fsdp], batch_size: 1}
    axes: {gpus: [4, 8]}                       # this workload only; the rest of `axes` applies
axes: {gpus: [2, 4, 8], placement: [packed, spread], transport: [default, pcie], repeats: 3}
target: {executor: slurm, partition: gpu, fabric: nvlink-groups, time: "01:00:00", tasks_per_element: 8}
```

Validated by pydantic with unknown keys refused; every error names its field path
(`workloads[1].train.strategies[2]: 'zero4' is not one of ddp, fsdp, zero1, zero2, zero3`).
Strings that Slurm reads (names, partition, account, folder, ...) are held to Slurm's own
character sets (wirewise.orchestrator.slurm.values, the same that every job request is held
to): submitit writes them into `#SBATCH` lines, so a newline or a `$(...)` must never pass.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from wirewise.errors import UserError, first_problem
from wirewise.limits import (
    MAX_GPU_INDEX, MAX_NODES, MAX_RANKS, MAX_REPEATS, MAX_TASKS, MAX_TIME_MIN,
)
from wirewise.orchestrator.executor import EXECUTORS, LOCAL
from wirewise.orchestrator.slurm.values import CONSTRAINT, FOLDER, NAME, NODELIST, TIME, WORD, Pattern
from wirewise.models import check_model_name
from wirewise.registry import StrategyName
from wirewise.topology.classify import FABRICS
from wirewise.workloads import Transport
from wirewise.workloads.collective import CollectiveParams
from wirewise.workloads.train import TrainParams

Strict = ConfigDict(extra="forbid")
PLACEMENTS = ("packed", "spread", "all")
UNKNOWN_KEY = "unknown key (check its spelling; see docs/campaigns.md)"


def _held_to(pattern: Pattern):
    """A pydantic check by one of Slurm's character sets (wirewise.orchestrator.slurm.values)."""

    def check(value: str) -> str:
        problem = pattern.problem(value)
        if problem:
            raise ValueError(f"{value!r} {'is ' if problem.startswith('not ') else ''}{problem}")
        return value

    return AfterValidator(check)


Name = Annotated[str, _held_to(NAME)]
SlurmWord = Annotated[str, _held_to(WORD)]
Constraint = Annotated[str, _held_to(CONSTRAINT)]
NodeList = Annotated[str, _held_to(NODELIST)]
SlurmTime = Annotated[str, _held_to(TIME)]
Folder = Annotated[str, _held_to(FOLDER)]
ExecutorName = Annotated[str, AfterValidator(lambda v: _one_of(v, sorted(EXECUTORS)))]
Fingerprint = Annotated[str, _held_to(Pattern(re.compile(r"[0-9a-f]{6,64}"), "a fingerprint or a prefix of at least 6 hex digits"))]
Fabric = Annotated[str, AfterValidator(lambda v: _one_of(v, FABRICS))]
ModelName = Annotated[str, AfterValidator(lambda v: _checked_model(v))]


def _one_of(value: str, allowed) -> str:
    if value not in allowed:
        raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
    return value


def _checked_model(name: str) -> str:
    check_model_name(name)
    return name


def _placement(value: Any) -> str | list[int]:
    if isinstance(value, str):
        return _one_of(value, PLACEMENTS)
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        if max(value) > MAX_GPU_INDEX:  # checked here, not only where a wiring is planned: CPU ranks plan none
            raise ValueError(f"{value}: GPU index {max(value)} is past the largest a node has ({MAX_GPU_INDEX})")
        if len(set(value)) != len(value):
            raise ValueError(f"{value} names a GPU twice")
        return sorted(value)
    raise ValueError(f"{value!r} is not packed, spread, all or a list of GPU indices such as [0, 1, 4, 5]")


Placement = Annotated[Any, AfterValidator(_placement)]
GpuCount = Annotated[int, Field(ge=1, le=MAX_RANKS)]


def _once_each(values: list | None) -> list | None:
    """An axis lists each value once: a value listed twice would plan the same task twice."""
    seen = set()
    for value in values or ():
        key = str(value)  # placements may be lists: compared by their text
        if key in seen:
            raise ValueError(f"{value!r} is listed twice")
        seen.add(key)
    return values


class Axes(BaseModel):
    """The sweep: every combination becomes a task (per workload case)."""

    model_config = Strict
    gpus: list[GpuCount] = Field(default_factory=lambda: [2], min_length=1)
    placement: list[Placement] = Field(default_factory=lambda: ["packed"], min_length=1)
    transport: list[Transport] = Field(default_factory=lambda: ["default"], min_length=1)
    repeats: int = Field(1, ge=1, le=MAX_REPEATS, strict=True)  # strict: YAML's `true` is no count

    _unique = field_validator("gpus", "placement", "transport")(_once_each)


class AxesOverride(BaseModel):
    """A workload's own axes: what it sets replaces the campaign's."""

    model_config = Strict
    gpus: list[GpuCount] | None = Field(None, min_length=1)
    placement: list[Placement] | None = Field(None, min_length=1)
    transport: list[Transport] | None = Field(None, min_length=1)
    repeats: int | None = Field(None, ge=1, le=MAX_REPEATS, strict=True)

    _unique = field_validator("gpus", "placement", "transport")(_once_each)


class CollectiveSweep(CollectiveParams):
    """`bench collectives` options; the transport is an axis, not an option here."""

    @model_validator(mode="before")
    @classmethod
    def _no_transport(cls, data: Any) -> Any:
        if isinstance(data, dict) and "transport" in data:
            raise ValueError("the transport is an axis: set axes.transport")
        return data


class TrainSweep(BaseModel):
    """`bench train` options, with lists of models and strategies to sweep."""

    model_config = Strict
    models: list[ModelName] = Field(min_length=1)
    strategies: list[StrategyName] = Field(min_length=1)
    batch_size: int = Field(8, ge=1)
    seq_len: int | None = Field(None, ge=2)
    steps: int = Field(10, ge=1)
    warmup_steps: int = Field(2, ge=1)
    engine: str = "native"
    precision: str = "auto"
    compile: bool = False
    lr: float = Field(1e-4, gt=0)
    data: str | None = None
    memory_limit_gb: float | None = Field(None, gt=0)

    _unique = field_validator("models", "strategies")(_once_each)

    def params(self, model: str, strategy: str) -> TrainParams:
        fields = self.model_dump(exclude={"models", "strategies", "batch_size"}, exclude_none=True)
        return TrainParams(model=model, strategy=strategy, micro_batch=self.batch_size, **fields)

    @model_validator(mode="after")
    def _each_case_is_valid(self) -> TrainSweep:
        for model in self.models:  # TrainParams' own rules (engine, precision, data kind...)
            for strategy in self.strategies:
                try:
                    self.params(model, strategy)
                except ValidationError as exc:
                    raise ValueError(first_problem(exc)) from None
        return self


class Workload(BaseModel):
    """One entry of `workloads`: a collective sweep or a training run, and its own axes."""

    model_config = Strict
    collectives: CollectiveSweep | None = None
    train: TrainSweep | None = None
    axes: AxesOverride | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Workload:
        if (self.collectives is None) == (self.train is None):
            raise ValueError("give exactly one of collectives or train")
        return self

    @property
    def kind(self) -> Literal["collective", "train"]:
        return "collective" if self.collectives is not None else "train"


class Target(BaseModel):
    """Where the tasks run. For Slurm, each array element takes a whole node and runs
    `tasks_per_element` tasks one after another on their planned GPUs. `scope: each-node`
    makes it a fleet campaign: every node of the partition, node list or constraint runs
    the whole grid, pinned to it and planned on its own wiring."""

    model_config = Strict
    executor: ExecutorName = LOCAL  # a name of wirewise.orchestrator.executor.EXECUTORS
    scope: Literal["each-node"] | None = None  # None: the tasks go to nodes of one type, wherever Slurm puts them
    partition: SlurmWord | None = None
    account: SlurmWord | None = None
    qos: SlurmWord | None = None
    constraint: Constraint | None = None
    nodelist: NodeList | None = None
    reservation: SlurmWord | None = None  # run inside this Slurm reservation
    fingerprint: Fingerprint | None = None
    fabric: Fabric | None = None
    time: SlurmTime = "01:00:00"
    array_parallelism: int = Field(16, ge=1, le=MAX_TASKS)
    tasks_per_element: int = Field(8, ge=1, le=MAX_TASKS)
    nodes: int = Field(1, ge=1, le=MAX_NODES)  # nodes per task: more than 1 runs each task as one multi-node job
    backend: Literal["nccl", "gloo"] | None = None  # default: nccl on GPUs, gloo on CPU ranks
    timeout_s: float = Field(3600.0, gt=0, le=MAX_TIME_MIN * 60, allow_inf_nan=False)  # per task, enforced by the supervisor
    folder: Folder | None = None  # campaign folder (shared storage for Slurm); default $WIREWISE_RUNS/campaigns/NAME

    @field_validator("time")
    @classmethod
    def _bounded_time(cls, value: str) -> str:
        if _minutes(value) > MAX_TIME_MIN:
            raise ValueError(f"{value!r} is longer than {MAX_TIME_MIN // 1440} days, the bound for a time limit")
        if _minutes(value) < 1:
            raise ValueError(f"{value!r} is no time: Slurm reads a limit of 0 as none at all; give at least a minute")
        return value
    @model_validator(mode="after")
    def _fleet(self) -> Target:
        if self.scope != "each-node":
            return self
        if not (self.partition or self.nodelist or self.constraint):
            raise ValueError("scope each-node: name the nodes with partition, nodelist or constraint")
        if self.nodes != 1:
            raise ValueError("scope each-node runs each node on its own: nodes must be 1 (pair tests: `wirewise fleet pairs`)")
        if self.fingerprint:
            raise ValueError("scope each-node plans every node on its own wiring: drop fingerprint (constraint selects nodes)")
        return self

    @property
    def time_minutes(self) -> int:
        return _minutes(self.time)


def _minutes(time: str) -> int:
    """Slurm's time formats in minutes (rounded up)."""
    days, _, clock = time.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    if days:
        hours, minutes, seconds = (parts + [0, 0])[:3]
        return int(days) * 1440 + hours * 60 + minutes + (seconds > 0)
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return parts[0] + (parts[1] > 0)
    return parts[0] * 60 + parts[1] + (parts[2] > 0)


class CampaignSpec(BaseModel):
    model_config = Strict
    name: Name
    workloads: list[Workload] = Field(min_length=1)
    axes: Axes = Field(default_factory=Axes)
    target: Target = Field(default_factory=Target)

    def overridden(self, name: str | None = None, gpus: list[int] | None = None) -> CampaignSpec:
        """The spec run under another name, or on other GPU counts (every workload's), checked again."""
        doc = self.model_dump(mode="json", exclude_unset=True)
        if name is not None:
            doc["name"] = name
        if gpus is not None:
            doc.setdefault("axes", {})["gpus"] = gpus
            for workload in doc["workloads"]:
                workload.get("axes", {}).pop("gpus", None)
        return parse_spec(doc, "overrides")

    def axes_for(self, workload: Workload) -> Axes:
        if workload.axes is None:
            return self.axes
        return self.axes.model_copy(update=workload.axes.model_dump(exclude_none=True))


def load_spec(path: str | Path) -> CampaignSpec:
    """The spec in a YAML file; UserError naming the file and the field for anything wrong.
    Bounded as every YAML file people write (wirewise.yamlfile)."""
    from wirewise.yamlfile import read_yaml

    return parse_spec(read_yaml(path, "campaign spec"), str(path))


def parse_spec(doc: Any, source: str = "spec") -> CampaignSpec:
    if not isinstance(doc, dict):
        raise UserError(f"{source}: a campaign spec is a mapping with name, workloads, axes and target")
    try:
        return CampaignSpec.model_validate(doc)
    except ValidationError as exc:
        where = "" if exc.errors()[0]["loc"] else "spec"
        raise UserError(f"{source}: {first_problem(exc, where, unknown=UNKNOWN_KEY)}") from None
