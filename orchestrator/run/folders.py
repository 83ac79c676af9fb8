"""Where run folders (spec, rank logs, result file) go: $WIREWISE_RUNS, else ./.wirewise/runs."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path


def runs_root() -> Path:
    return Path(os.environ.get("WIREWISE_RUNS") or ".wirewise/runs")


def new_run_dir(task_id: str) -> Path:
    """A fresh folder for one run of a task: the same task run twice keeps both runs' files."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    return runs_root() / f"{stamp}-{task_id}"
