"""A fresh run folder for a task run here (where they go: wirewise.runs)."""

from __future__ import annotations

from pathlib import Path

from wirewise.errors import UserError
from wirewise.runs import RunsRoot
from wirewise.settings import setting


def new_run_dir(task_id: str) -> Path:
    """A fresh folder for one run of a task, created: the same task run twice keeps both
    runs' files. A root that is a file or not writable is a one-line UserError."""
    root = RunsRoot.configured()
    run_dir = root.new_run(task_id)
    try:
        run_dir.mkdir(parents=True)
    except OSError as exc:
        raise UserError(f"cannot make a run folder under {root.root} ({setting('runs').origin}): {exc.strerror}") from None
    return run_dir
