"""Store result files that are on disk: `wirewise collect PATH...`, `campaign collect`, the
end of every `bench` run and a training job's own record (wirewise.collect, the contract's door
to collect_paths) take this one path.

A result file is never lost to a busy database: ingest waits (SQLite's busy timeout) and
retries for up to $WIREWISE_DB_WAIT_S (600 s), and if the database stays busy it says where the file is
and how to store it later. Storing is idempotent (record ids), so collecting twice adds nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from wirewise.errors import UserError
from wirewise.orchestrator.record.formats import holds_result_records, is_nccl_tests_log, nccl_tests_logs_in, starts_as_json
from wirewise.orchestrator.record.ingest import RESULT_FILE_FIX, ingest_result_file
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.engine import DatabaseBusy, db_wait_s
from wirewise.record import ResultRecord
from wirewise.runs import RESULT_FILE

RETRY_PAUSE_S = 2.0


@dataclass
class Collected:
    files: int = 0
    records: int = 0
    new: int = 0
    statuses: dict[str, int] = field(default_factory=dict)

    def summary(self, where: str) -> str:
        """What was stored, in one line: `wirewise collect` prints it, a job says it."""
        statuses = ", ".join(f"{k} {v}" for k, v in self.statuses.items()) or "none found"
        return f"{self.files} result file(s) ({statuses}): {self.new} new record(s) of {self.records} stored in {where}"


def result_files(paths: list[str | Path]) -> list[Path]:
    """Result files named, or found under the folders named (every result.json, and every
    JSON-lines file of result records: wirewise.orchestrator.record.formats). Everything is
    checked before anything is stored: a path that is neither a file nor a folder, a result
    file that is not a regular file within MAX_RESULT_BYTES (a FIFO, /dev/zero behind a
    symlink), and a file that is not JSON (an nccl-tests log: its message names `import
    nccl-tests`) is a UserError. A folder that happens to be named result.json is searched, not read."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(_result_files_in(path))
        elif path.exists() or path.is_symlink():
            found.append(path)
        else:
            raise UserError(f"{raw}: no such file or folder (give result files or run folders)")
    for path in found:
        _check_readable(path)
    return found


def _result_files_in(folder: Path) -> list[Path]:
    """Every result.json and JSON-lines file of result records under the folder; where there is
    none but there are nccl-tests logs, UserError naming them and the command that stores them."""
    results = [p for p in folder.rglob(RESULT_FILE) if not p.is_dir()]
    results += [p for p in folder.rglob("*.jsonl") if p.is_file() and holds_result_records(p)]
    if not results and (logs := nccl_tests_logs_in(sorted(folder.rglob("*")))):
        named = ", ".join(str(p.relative_to(folder)) for p in logs[:3]) + (" ..." if len(logs) > 3 else "")
        raise UserError(f"{folder}: no wirewise result file under it, but nccl-tests logs ({named}): "
                        f"store each with `wirewise import nccl-tests {logs[0]}`; nothing stored")
    return sorted(results)


def _check_readable(path: Path) -> None:
    """What reading the file would refuse (ingest's read_json) where it is not JSON at all, said
    before anything is stored."""
    from wirewise.limits import MAX_RESULT_BYTES, cannot_read, check_bounded

    try:
        check_bounded(path, MAX_RESULT_BYTES)
    except OSError as exc:
        raise UserError(f"{cannot_read('result file', path, exc)}; nothing stored") from None
    if starts_as_json(path):
        return
    if is_nccl_tests_log(path):
        raise UserError(f"{path}: an nccl-tests log, not a wirewise result file: store it with "
                        f"`wirewise import nccl-tests {path}`; nothing stored")
    raise UserError(f"{path}: not a wirewise result file (not JSON); {RESULT_FILE_FIX} (an nccl-tests log: "
                    "`wirewise import nccl-tests LOG`); nothing stored")


def ingest_patiently(store: Store, path: Path, patience_s: float | None = None) -> tuple[list[ResultRecord], int]:
    """ingest_result_file, retried while the database is locked (for $WIREWISE_DB_WAIT_S, 600 s
    by default); UserError naming the file when it stays locked or is not a result file."""
    patience_s = db_wait_s() if patience_s is None else patience_s
    deadline = time.monotonic() + patience_s
    while True:
        try:
            return ingest_result_file(store, path)
        except DatabaseBusy:
            if time.monotonic() > deadline:
                raise UserError(f"the database stayed busy for {patience_s:g} s; the results are safe in {path}: "
                                f"store them later with `wirewise collect {path}`") from None
            time.sleep(RETRY_PAUSE_S)
        except (ValueError, KeyError, TypeError) as exc:
            raise UserError(f"{path}: not a wirewise result file ({type(exc).__name__}: {str(exc).splitlines()[0]})") from None


def collect_paths(paths: list[str | Path], db: str | None, patience_s: float | None = None) -> tuple[Collected, str]:
    """`wirewise collect PATH... [--db DB]`: the result files named or found under the folders,
    stored in the database of `db` (else the setting db); (what was stored, the database as
    shown to people). `patience_s`: how long a busy database is waited on (ingest_patiently)."""
    files = result_files(paths)
    store = Store(db)
    return collect(store, files, patience_s), store.safe_url


def collect(store: Store, files: list[Path], patience_s: float | None = None) -> Collected:
    """Store each file, each in one transaction: a file that is not a result file stores
    nothing of itself, and the error says how many files before it were stored."""
    summary = Collected()
    for path in files:
        try:
            records, new = ingest_patiently(store, path, patience_s)
        except UserError as exc:
            before = f" ({summary.files} file(s) before it are stored)" if summary.files else ""
            raise UserError(f"{exc}{before}") from None
        summary.files += 1
        summary.records += len(records)
        summary.new += new
        status = records[0].status if records else "empty"
        summary.statuses[status] = summary.statuses.get(status, 0) + 1
    return summary
