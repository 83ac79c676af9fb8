"""Where run folders go, and what every file and folder in them is called: the one home of
those names (as submitit's JobPaths names a job's files), which both sides read.

The root is the setting runs (WIREWISE_RUNS, a configuration file, else runs/ in the user's
data folder: wirewise.settings), RUNS below (RunsRoot):

    RUNS/STAMP-LABEL/           a run folder (RunPaths): a task run here, a launch, a job's record
    RUNS/campaigns/NAME/        a campaign's folder, unless its spec names one (campaign/folder.py)
    RUNS/fleet/NAME/            the campaign a health check or retest runs on a node
    RUNS/fleet/NAME-live/       the live check beside it (live.json)
    RUNS/jobs/                  `wirewise run`'s Slurm jobs
    RUNS/survey/STAMP-XXXXXX/   a survey (SurveyPaths): nodes/NODE.json, submitit/

Both sides name them: the control plane for the runs, campaigns and launches it starts, and a
job that runs a task or records its own figures outside `wirewise launch` (wirewise.jobs).
The layout is what operators' scripts and earlier folders read: a name changes here or nowhere.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

RESULT_FILE = "result.json"  # a run folder's one result document: jobs.supervise writes it, campaigns and collect read it
SPEC_FILE = "spec.json"  # the task a run folder runs (wirewise.task.TaskSpec): written before its ranks start
PROGRESS_FILE = "progress.jsonl"  # rank 0's progress events, followed by the supervisor
SUBMITIT = "submitit"  # submitit's pickles and job logs, in a folder of jobs the Slurm executor submitted

# The stamps in the names wirewise makes, in UTC: run folders are unique to the microsecond and
# sort by time; surveys, and the campaigns and jobs named after a check, to the second; a
# retest's Slurm reservation, digits only.
_STAMPS = {"run": "%Y%m%dT%H%M%S%fZ", "name": "%Y%m%d-%H%M%S", "digits": "%Y%m%d%H%M%S"}


def utc_stamp(style: Literal["run", "name", "digits"] = "name") -> str:
    return datetime.now(timezone.utc).strftime(_STAMPS[style])


def runs_root() -> Path:
    from wirewise.settings import setting

    return Path(setting("runs").value)


@dataclass(frozen=True)
class RunsRoot:
    """The folders under the runs root (the configured one unless given)."""

    root: Path

    @classmethod
    def configured(cls) -> RunsRoot:
        return cls(runs_root())

    def new_run(self, label: str) -> Path:
        """Where a new run folder for `label` (a task id, `launch`, `job`) goes; not created."""
        if "/" in label or "\0" in label:  # one folder directly under the root, never elsewhere
            raise ValueError(f"a run folder's label is a plain name, not {label!r}")
        return self.root / f"{utc_stamp('run')}-{label}"

    def campaign(self, name: str) -> Path:
        return self.root / "campaigns" / name

    def fleet_check(self, name: str) -> Path:
        return self.root / "fleet" / name

    def live_check(self, name: str) -> Path:
        return self.fleet_check(f"{name}-live")

    def jobs(self) -> Path:
        return self.root / "jobs"

    def surveys(self) -> Path:
        return self.root / "survey"


@dataclass(frozen=True)
class RunPaths:
    """The files of one run folder. The supervisor (jobs.supervise) writes the spec, then each rank
    its log, its outcome and rank 0 the progress events, each node of several its heartbeat, and
    the supervisor the result, which campaigns, collect and `bench` read."""

    folder: Path

    @property
    def spec(self) -> Path:
        return self.folder / SPEC_FILE

    @property
    def result(self) -> Path:
        return self.folder / RESULT_FILE

    def result_numbered(self, n: int) -> Path:
        """A job's n-th result in one folder (n > 1: result-N.json beside the first)."""
        return self.result if n == 1 else self.folder / f"result-{n}.json"

    @property
    def progress(self) -> Path:
        return self.folder / PROGRESS_FILE

    def rank_log(self, rank: int) -> Path:
        """The rank's stdout and stderr."""
        return self.folder / f"rank{rank}.log"

    def rank_outcome(self, rank: int) -> Path:
        """What the rank's worker says of its end (jobs.worker)."""
        return self.folder / f"rank{rank}.json"

    def node_beat(self, node_rank: int) -> Path:
        """A node's heartbeat in a run of several nodes (jobs.peers)."""
        return self.folder / f"node{node_rank}.json"

    def nccl_debug(self, rank: int) -> Path:
        """Where a rank's NCCL INFO lines go when the user set no NCCL_DEBUG_FILE (jobs.nccl_debug)."""
        return self.folder / f"nccl-rank{rank}.log"


@dataclass(frozen=True)
class SurveyPaths:
    """A survey's folder: each node's job writes its answer, the submitting process reads it."""

    folder: Path

    @classmethod
    def new(cls, under: Path | None = None) -> SurveyPaths:
        """A new survey's folder under `under` (the runs root's survey/ unless given); not created."""
        return cls((under or RunsRoot.configured().surveys()) / f"{utc_stamp('name')}-{uuid.uuid4().hex[:6]}")

    @property
    def nodes(self) -> Path:
        return self.folder / "nodes"

    @property
    def submitit(self) -> Path:
        return self.folder / SUBMITIT

    def answer(self, node: str) -> Path:
        return self.nodes / f"{node}.json"
