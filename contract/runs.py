"""Where run folders (spec, rank logs, result file) go: the setting runs (WIREWISE_RUNS, a
configuration file, else runs/ in the user's data folder: wirewise.settings).

Both sides name them: the control plane for the runs, campaigns and launches it starts, and a
job that records its own figures outside `wirewise launch` (wirewise.jobs.history)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

RESULT_FILE = "result.json"  # a run folder's one result document: jobs.launch writes it, campaigns and collect read it


def runs_root() -> Path:
    from wirewise.settings import setting

    return Path(setting("runs").value)


def run_dir_name(label: str) -> Path:
    """Where a new run folder for `label` (a task id, `launch`, `job`) goes; not created."""
    if "/" in label or "\0" in label:  # one folder directly under the root, never elsewhere
        raise ValueError(f"a run folder's label is a plain name, not {label!r}")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    return runs_root() / f"{stamp}-{label}"
