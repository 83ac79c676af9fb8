"""Importing a log file: read a line at a time (log_text.LogText: any encoding, bounded by
MAX_LOG_BYTES), checked against the topology it ran on, and stored in one transaction with
that wiring; what was not stored is listed with why.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wirewise.errors import UserError
from wirewise.limits import MAX_LOG_BYTES
from wirewise.orchestrator.record.formats import looks_like_result_file
from wirewise.orchestrator.record.log_text import MAX_LINE_CHARS, LogText
from wirewise.orchestrator.record.nccl_tests.identity import already_stored
from wirewise.orchestrator.record.nccl_tests.options import Given, HowItRan
from wirewise.orchestrator.record.nccl_tests.reader import parse_log
from wirewise.orchestrator.record.nccl_tests.records import SectionResult, gpus_used, read_sections
from wirewise.orchestrator.record.nccl_tests.sections import MAX_SKIPPED_SHOWN, Section
from wirewise.orchestrator.record.nccl_tests.summary import import_summary
from wirewise.record import ResultRecord

if TYPE_CHECKING:
    from wirewise.orchestrator.store import Store
    from wirewise.topology import Topology


@dataclass
class LogImport:
    """A log file read: its runs, whose records are made as they are stored, and the node and
    wiring they are stored under."""

    file: Path
    node: str | None
    topology: Topology | None
    results: list[SectionResult]
    skipped: list[str] = field(default_factory=list)  # rows and runs not stored, and why

    @property
    def records(self) -> list[ResultRecord]:
        """Every record, in memory at once (tests and small logs; `store` makes them a batch at a time)."""
        return list(self.iter_records())

    def iter_records(self) -> Iterator[ResultRecord]:
        for result in self.results:
            yield from result.records()

    @property
    def record_count(self) -> int:
        return sum(result.record_count for result in self.results)

    def store(self, store: Store) -> int:
        """Save the node's wiring (when given) and the records, in one transaction; returns how
        many records were new. Rows of an excerpt that shows no line of its run (no rank,
        settings or version line) cannot be known by their run: those whose figures are stored
        already (the same log imported whole) are not stored again."""
        from wirewise.orchestrator.record.ingest import store_measurement

        stored = already_stored(store, self.results)

        def records() -> Iterator[ResultRecord]:
            return (record for record in self.iter_records() if not stored(record))

        return store_measurement(store, records, self.topology, self.node)

    def summary(self, new: int) -> dict[str, Any]:
        """What was imported (summary.import_summary), `new` of its records new to the store."""
        return import_summary(self, new)


def read_log_file(path: Path, *, op: list[str] | str | None = None, node: str | None = None,
                  topology_file: Path | None = None, how: HowItRan = HowItRan(),
                  ranks: list[str] | str | int | None = None) -> LogImport:
    """Read and check an nccl-tests log (and the topology it ran on), a line at a time: what is
    kept is each run's rows and facts, never the text; UserError for anything wrong."""
    given = Given.from_options(op, ranks, node, how)
    text = LogText(path, MAX_LOG_BYTES)
    if not path.exists():
        raise UserError(f"{str(path)!r}: no such file")
    try:
        sections = parse_log(text.lines())
    except OSError as exc:
        raise UserError(f"{str(path)!r}: cannot read it ({exc.strerror})") from None
    if not sections and looks_like_result_file(path):
        raise UserError(f"{path.name}: wirewise result records (JSON), not an nccl-tests log: store them with "
                        f"`wirewise collect {path}`")
    topology = None
    if topology_file is not None:
        node = node or next((s.rank0_host for s in sections if s.rank0_host), None)
        if node is None:
            raise UserError("the log names no host: give --node with --topology-file, so the wiring is stored for a node")
        from wirewise.topology import read_topology

        topology = read_topology(topology_file)
    logged_at = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    given.node = node
    results = read_sections(sections, path.name, given, topology, logged_at)
    imported = LogImport(path, node or next((r.node for r in results if r.node), None), topology, results)
    _check_gpus_fit(results, topology, topology_file)
    imported.skipped = _not_stored(path.name, text.long_lines, sections, results)
    return imported


def _not_stored(file_name: str, long_lines: list[int], sections: list[Section], results: list[SectionResult]) -> list[str]:
    """What of the file was not stored, and why: lines too long to be a log's, rows, runs."""
    skipped = [f"{file_name} line {line}: longer than {MAX_LINE_CHARS:,} characters, not a log line"
               for line in long_lines[:MAX_SKIPPED_SHOWN]]
    for section in sections:
        skipped += [f"{file_name} {why}" for why in section.skipped]
        if section.skipped_more:
            skipped.append(f"{file_name}: {section.skipped_more} more rows of the run at line {section.first_line}")
    return skipped + [f"{file_name}: {r.not_stored}" for r in results if r.not_stored]


def _check_gpus_fit(results: list[SectionResult], topology: Topology | None, topology_file: Path | None) -> None:
    """A log that used GPU 7 cannot have run on a node whose topology has 4 GPUs."""
    if topology is None:
        return
    highest = max((g for r in results if r.op for g in gpus_used(r.section, r.node)), default=-1)
    if highest >= topology.gpus:
        raise UserError(f"the log uses GPU {highest} but {topology_file} describes {topology.gpus} GPU(s): wrong --topology-file?")
