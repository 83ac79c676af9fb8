"""The protocol every executor implements, defined once (as submitit's core/core.py defines its
Executor and Job): a submission is a callable and one argument tuple per element; an element
is the unit the executor schedules (a Slurm array element, a step of the local run).

    parameters(request) -> dict            what it submits with, in its own terms (a dry run prints it)
    array_limit(dry_run) -> int | None     elements per array at most; None: no limit
    submit(request, fn, elements, on_submitted, until) -> Submitted
    states([element, ...]) -> {element: state}   one query for all of them
    cancel([element, ...]) -> dict         stop them; what was done, for the report
    nodes(scope) -> [Node] | None          the nodes a scope names (a fleet's, a job's), with the
                                           GPUs each has and why it takes no new work, if so;
                                           None: an executor without nodes to name (it runs here)

`runs_here`: the submitting process runs the elements itself, one after another, on this
machine (so it can plan on this machine's wiring and show progress); otherwise they run
elsewhere and `submit` returns once they are queued.

States are the executor's answer in one vocabulary: PENDING, RUNNING, and for an element that
ended without its task's own word (every task writes one, whatever happens): CANCELLED,
TIMEOUT, or ENDED (the node, the job or the process died). An element None is one not
submitted yet.

JobRequest is what a job asks for, in one vocabulary for every executor. It checks itself
when it is made: every string against Slurm's character sets and every number against its
range (wirewise.orchestrator.slurm.values), so no executor is handed a value that could end
an #SBATCH line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Protocol

from wirewise.errors import UserError
from wirewise.orchestrator.slurm.values import check_values

PENDING, RUNNING, CANCELLED, TIMEOUT, ENDED = "pending", "running", "cancelled", "timeout", "ended"


@dataclass(frozen=True)
class JobRequest:
    """One job (or each element of an array): where its files go, and what it holds."""

    folder: Path  # the executor's files for this submission: scripts, logs, pickles
    name: str
    time_min: int
    nodes: int = 1
    tasks_per_node: int = 1
    whole_node: bool = False  # every CPU, GPU and byte of memory of its nodes
    gpus_per_node: int | None = None
    cpus_per_task: int | None = None
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    nodelist: str | None = None
    exclude: str | None = None  # nodes it must not go to (down, drained, flagged)
    reservation: str | None = None  # run inside this reservation (a re-test on a node reserved for it)
    parallelism: int | None = None  # array elements running at once
    # Nodes kept together inside one block of the cluster's block topology (one NVLink domain,
    # sbatch --segment); None: the Slurm executor asks it for a multi-node job where the cluster
    # has a block that holds the job (wirewise.orchestrator.slurm.blocks.segment_for).
    segment: int | None = None
    # The scheduler may start it again by itself after its node failed. Campaign elements say
    # no: what runs again is wirewise's choice (`campaign resume`, on nodes that are up), and a
    # lost node leaves its tasks `missing` at once instead of queued behind it. A preempted
    # element still goes back to the queue (campaign.bundle allows it in its checkpoint).
    requeue: bool = True
    labels: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)  # field -> what a person wrote

    def __post_init__(self) -> None:
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("labels", "whole_node", "requeue")}
        check_values(values, self.labels)

    def describe(self) -> str:
        """What the job asks for, as a person would check it against the cluster."""
        held = [f"{self.nodes} node(s)"]
        if self.gpus_per_node:
            held.append(f"{self.gpus_per_node} GPU(s) per node")
        if self.whole_node:
            held.append("whole nodes")
        if self.cpus_per_task:
            held.append(f"{self.cpus_per_task} CPU(s) per task")
        if self.segment:
            held.append(f"segments of {self.segment} node(s) inside one block")
        for key in ("partition", "account", "qos", "constraint", "nodelist", "exclude", "reservation"):
            if getattr(self, key):
                held.append(f"{key} {getattr(self, key)}")
        held.append(f"{self.time_min} min")
        return ", ".join(held)


class SubmissionRefused(UserError):
    """The scheduler refused the submission; str(exc) is one line with its reason and what the
    job asked for; `reason` is the scheduler's own words."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Scope:
    """Which nodes: a partition, a node list, a feature expression (any of them, together)."""

    partition: str | None = None
    nodelist: str | None = None
    constraint: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)  # field -> what a person wrote

    def describe(self) -> str:
        said = [f"{key} {getattr(self, key)}" for key in ("partition", "nodelist", "constraint") if getattr(self, key)]
        return ", ".join(said) or "every node"


@dataclass(frozen=True)
class Node:
    """A node an executor can send work to."""

    name: str
    gpus: int
    features: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    unavailable: str | None = None  # why it takes no new work now (down, drained, not responding); None: it does


@dataclass(frozen=True)
class Submitted:
    array: str | None  # the scheduler's id for the whole submission, where it has one
    elements: list[str]  # one id per element, in order


Elements = list[tuple]
OnSubmitted = Callable[[Submitted], None]


class Executor(Protocol):
    name: ClassVar[str]
    runs_here: ClassVar[bool]

    def parameters(self, request: JobRequest) -> dict[str, Any]: ...

    def array_limit(self, dry_run: bool = False) -> int | None: ...

    def submit(self, request: JobRequest, fn: Callable, elements: Elements,
               on_submitted: OnSubmitted | None = None, until: Callable[[Any], bool] | None = None) -> Submitted:
        """One element per argument tuple, all with `request`'s resources. `on_submitted` is
        called once the element ids exist, before any element can be seen running, so the
        caller records them first. `until(result)`, for executors that run here: stop after the
        element whose result it accepts (the rest do not start). SubmissionRefused when the
        scheduler says no; nothing of the submission is left behind then."""
        ...

    def states(self, elements: list[str | None]) -> dict[str | None, str]: ...

    def cancel(self, elements: list[str]) -> dict[str, Any]: ...

    def allocation_problems(self, elements: list[str]) -> dict[str, str]:
        """{element: what is wrong} with where the scheduler put these running elements (Slurm:
        nodes a --segment should have kept inside one block, and did not); {} when nothing is."""
        ...

    def nodes(self, scope: Scope) -> list[Node] | None:
        """The nodes of the scope, in the executor's order; UserError (one line) for a name it
        does not know or a feature no node has."""
        ...
