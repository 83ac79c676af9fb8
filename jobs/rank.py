"""What a workload sees on each rank: who it is, its device, and where to report progress."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wirewise.jobenv import read_job_env
from wirewise.runs import RunPaths
from wirewise.task import TaskSpec


@dataclass
class RankContext:
    spec: TaskSpec
    run_dir: Path
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    device: Any = None  # torch.device, set by wirewise.jobs.worker once torch is imported
    notes: dict[str, Any] = field(default_factory=dict)  # figures a workload leaves for a failure record

    @classmethod
    def from_env(cls, spec: TaskSpec, run_dir: Path) -> RankContext:
        """This rank's place, as wirewise.jobs.supervise set it (read by wirewise.jobenv)."""
        ranks = read_job_env().ranks
        if ranks is None or ranks.rank is None or ranks.local_rank is None:
            raise RuntimeError("RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE are unset: a rank runs under wirewise.jobs.supervise")
        return cls(spec=spec, run_dir=run_dir, rank=ranks.rank, world_size=ranks.world_size,
                   local_rank=ranks.local_rank, local_world_size=ranks.local_world_size)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def backend(self) -> str:
        return self.spec.backend

    def progress(self, done: int, total: int, label: str = "", row: dict[str, Any] | None = None) -> None:
        """Rank 0 appends a progress event, with the row it has just measured where there is one;
        the supervisor turns them into a progress bar and rows printed as they come."""
        if not self.is_main:
            return
        event = {"done": done, "total": total, "label": label, **({"row": row} if row is not None else {})}
        with open(RunPaths(self.run_dir).progress, "a") as fh:
            fh.write(json.dumps(event) + "\n")
