"""What a workload sees on each rank: who it is, its device, and where to report progress."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
        env = os.environ
        return cls(
            spec=spec,
            run_dir=run_dir,
            rank=int(env["RANK"]),
            world_size=int(env["WORLD_SIZE"]),
            local_rank=int(env["LOCAL_RANK"]),
            local_world_size=int(env["LOCAL_WORLD_SIZE"]),
        )

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def backend(self) -> str:
        return self.spec.backend

    def progress(self, done: int, total: int, label: str = "") -> None:
        """Rank 0 appends a progress event; the supervisor turns them into a progress bar."""
        if not self.is_main:
            return
        with open(self.run_dir / "progress.jsonl", "a") as fh:
            fh.write(json.dumps({"done": done, "total": total, "label": label}) + "\n")
