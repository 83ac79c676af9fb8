"""run_task inside a submitit job on the real test Slurm, signalled the way Slurm signals:
USR2 (preemption, or the warning before the time limit) stays submitit's, which requeues the
job; SIGTERM (scancel) reaches both submitit's handler and ours, and the task records itself
as cancelled."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import submitit

from wirewise.jobs.supervise import run_task
from wirewise.task import TaskSpec

LONG = {"ops": ["all_reduce"], "min_bytes": "1M", "max_bytes": "1M", "iters": 10_000_000, "warmup": 0}
SHORT = {"ops": ["all_reduce"], "min_bytes": "4K", "max_bytes": "4K", "iters": 2, "warmup": 1}


class Sweep(submitit.helpers.Checkpointable):
    """A sweep that, once requeued, runs a short one: the second run proves the requeue."""

    def __call__(self, params: dict, run_root: str) -> str:
        attempt = int(os.environ.get("SLURM_RESTART_COUNT", "0"))
        spec = TaskSpec(workload="collective", params=params, nproc_per_node=2, backend="gloo", timeout_s=300)
        return str(run_task(spec, Path(run_root) / f"attempt{attempt}"))

    def checkpoint(self, params: dict, run_root: str):
        return submitit.helpers.DelayedSubmission(Sweep(), SHORT, run_root)


def _submit(slurm_cluster, tmp_path: Path):
    executor = submitit.AutoExecutor(folder=tmp_path / "submitit", cluster="slurm")
    # Over 10 minutes: submitit counts any signal in a shorter job as a timeout (docs/facts.md).
    executor.update_parameters(slurm_partition=slurm_cluster.partition, timeout_min=60, cpus_per_task=2)
    return executor.submit(Sweep(), LONG, str(tmp_path / "runs"))


def _wait_for(path: Path, limit_s: float = 300) -> Path:  # the test node may be busy with other tests' jobs
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if path.exists():
            return path
        time.sleep(0.2)
    raise AssertionError(f"{path} never appeared")


def _wait_for_sweep(tmp_path: Path) -> None:
    _wait_for(tmp_path / "runs" / "attempt0" / "progress.jsonl")


@pytest.fixture
def submitted(slurm_cluster, tmp_path):
    """The long sweep's job; cancelled at the end whatever the test found (it runs for minutes)."""
    job = _submit(slurm_cluster, tmp_path)
    yield job
    if not job.done():
        job.cancel(check=False)


@pytest.mark.slurm
def test_usr2_is_left_to_submitit_which_requeues(submitted, tmp_path):
    job = submitted
    _wait_for_sweep(tmp_path)
    subprocess.run(["scancel", "--signal=USR2", job.job_id], check=True)
    # The requeued run's own result file, not job.result(): Slurm's requeue sends SIGTERM to
    # every process of the job, and at times that reaches submitit's `scontrol requeue` before
    # it exits; submitit then pickles a CalledProcessError as the first run's outcome, which
    # job.result() returns, though slurmctld had requeued the job and the second run goes on.
    result_file = _wait_for(tmp_path / "runs" / "attempt1" / "result.json")
    assert json.loads(result_file.read_text())["status"] == "ok"
    assert not (tmp_path / "runs" / "attempt0" / "result.json").exists()  # preempted: nothing recorded as done


@pytest.mark.slurm
def test_sigterm_reaches_submitit_and_records_cancelled(submitted, tmp_path):
    job = submitted
    _wait_for_sweep(tmp_path)
    subprocess.run(["scancel", job.job_id], check=True)
    result = json.loads(_wait_for(tmp_path / "runs" / "attempt0" / "result.json", limit_s=30).read_text())
    assert result["status"] == "cancelled"
    assert "cancelled" in result["records"][0]["error"]
    log = Path(job.paths.stderr).read_text()
    assert "Bypassing signal SIGTERM" in log  # submitit's own handler still ran
