"""Where run folders (spec, rank logs, result file) go: $WIREWISE_RUNS, else ./.wirewise/runs."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from wirewise.errors import UserError


def runs_root() -> Path:
    return Path(os.environ.get("WIREWISE_RUNS") or ".wirewise/runs")


def run_dir_name(label: str) -> Path:
    """Where a new run folder for `label` (a task id, `launch`) goes; not created."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    return runs_root() / f"{stamp}-{label}"


def new_run_dir(task_id: str) -> Path:
    """A fresh folder for one run of a task, created: the same task run twice keeps both
    runs' files. A root that is a file or not writable is a one-line UserError."""
    run_dir = run_dir_name(task_id)
    try:
        run_dir.mkdir(parents=True)
    except OSError as exc:
        raise UserError(f"cannot make a run folder under {runs_root()} (WIREWISE_RUNS): {exc.strerror}") from None
    return run_dir
