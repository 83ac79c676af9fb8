"""What `wirewise launch` decided for a job, as the job reads it back: the launch file.

The launcher (wirewise.orchestrator.launch) writes RUN_DIR/launch.json before it starts
`accelerate launch`, and puts RUN_DIR in every rank's environment (WIREWISE_LAUNCH_DIR). The
job side reads it twice: the per-node step under srun (the accelerate command, its GPUs), and
the history recorder (wirewise.jobs.history), which stores the job's own figures with the
placement, strategy and wiring they ran on. A job started without `wirewise launch` has no
launch file; the recorder then says what it can see for itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from wirewise import settings

LAUNCH_FILE = "launch.json"


class LaunchFile(BaseModel):
    """One launch: what was asked, what was chosen and why, and how it starts."""

    model_config = ConfigDict(extra="forbid")

    model: str  # registry name or config path as given, or "params:N" for --params
    batch_size: int
    seq_len: int | None
    strategy: str  # what runs
    chosen_by: str  # "advice", "--strategy", ...
    advised: str | None  # the advisor's pick (None: nothing fits)
    device: Literal["cuda", "cpu"]
    processes_per_node: int
    nodes: list[str]  # host names; node 0 runs the main process
    gpus: list[int] = Field(default_factory=list)  # physical indices on every node; [] for CPU ranks
    assigned_gpus: list[int] = Field(default_factory=list)  # GPUs placed on that CPU ranks stand in for
    placement: str | None = None  # packed (a subset chosen on the wiring) or all (every GPU given)
    predicted_busbw_gbs: float | None = None
    busbw_basis: str | None = None
    topology: dict[str, Any] | None = None  # the node's Topology (wirewise.topology), None where unknown
    slurm_job_id: str | None = None
    accelerate_config_file: str
    script: list[str]  # the command accelerate launch runs: the script and its arguments
    db: str | None = None  # where the job's own figures are stored; None: left in the result file

    @property
    def num_processes(self) -> int:
        return self.processes_per_node * len(self.nodes)


def launch_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """The run folder of the launch this process belongs to; None outside `wirewise launch`."""
    value = settings.LAUNCH_DIR.get(env)
    return Path(value) if value else None


def read_launch(run_dir: Path) -> LaunchFile:
    return LaunchFile.model_validate_json((Path(run_dir) / LAUNCH_FILE).read_text())
