"""`wirewise collect` as a function: the compute side's one way into the store.

    collect(paths, db=None, patience_s=None) -> str   what was stored, in collect's own words

A training job stores its own result file (wirewise.jobs.history) through the path every
result file takes into the store, `wirewise collect`'s code (wirewise.orchestrator.record.
collect.collect_paths), in its own process: no CLI run as a subprocess, no second way to store.
The control plane's code is looked up when this is called, never when it is imported, so the
contract stays torch-free and cheap and no contract module depends on the orchestrator but
through this edge (tests/test_architecture.py: FRONT_DOOR names it and checks it stays lazy).

Raises what `wirewise collect` would say as its one error line (UserError): a path that is no
result file, settings it cannot read, a database it cannot reach, one that stayed busy for
`patience_s` (default: the setting db_wait_s).
"""

from __future__ import annotations

from pathlib import Path


def collect(paths: list[str | Path], db: str | None = None, patience_s: float | None = None) -> str:
    """Store the result files named (or found under the folders named) in `db`, else the
    database of the setting db, as `wirewise collect PATH... [--db DB]` does."""
    from wirewise.orchestrator.record.collect import collect_paths

    collected, where = collect_paths(paths, db, patience_s)
    return collected.summary(where)
