"""A run's identity: what makes two copies of a log one measurement, and what is not stored twice.

Record ids come from the measurement, not the file's bytes: the run's header (ranks' hosts,
pids, devices and bus ids, settings, version, test; without rank lines, its first row's
figures too, so two runs of unknown rank counts are never one) and the row's own values. The
same log with other whitespace, another encoding or a byte-order mark, a truncated copy, or
the log inside a longer file give the same ids.

Within a file, a section with no preamble of its own whose rows all repeat an earlier
section's (a README quoting an excerpt of the log it showed above), or whose lines all repeat
an earlier run's (a log appended to itself), is not stored twice (mark_repeats). Against the
store, rows of an excerpt that shows no line of its run are known by their figures only: those
stored already (the same log imported whole) are not stored again (already_stored).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wirewise.record import ResultRecord

if TYPE_CHECKING:
    from wirewise.orchestrator.record.nccl_tests.records import SectionResult
    from wirewise.orchestrator.record.nccl_tests.rows import Row
    from wirewise.orchestrator.record.nccl_tests.sections import Section
    from wirewise.orchestrator.store import Store


def mark_repeats(sections: list[Section]) -> None:
    """A section with no preamble or rank lines of its own whose rows all appear in an earlier
    section is a quoted excerpt of it (READMEs show a log, then quote its middle); a section
    whose run lines and rows are all an earlier one's is that run again (a log appended twice)."""
    seen_rows: dict[int, int] = {}  # hashes, not the rows: a row's values again would double what is kept
    seen_runs: dict[int, int] = {}
    for section in sections:
        keys = [hash(row.key) for row in section.rows]
        whole = hash((section.test, section.version, tuple(sorted(section.settings.items())),
                      tuple((d.rank, d.host, d.pid, d.device, d.bus_id) for d in section.devices), tuple(keys)))
        if section.rows and (section.has_preamble or section.devices) and whole in seen_runs:
            section.repeats, section.copy = seen_runs[whole], True
        elif section.rows and not (section.has_preamble or section.devices) and all(k in seen_rows for k in keys):
            section.repeats = seen_rows[keys[0]]
        seen_runs.setdefault(whole, section.first_line)
        for key in keys:
            seen_rows.setdefault(key, section.first_line)


def run_identity(section: Section, op: str) -> str:
    """sha256 of what identifies the run: its ranks (host, pid, device, bus id), settings,
    version, test and op; for a run that shows no rank line, also its first row's figures (two
    such runs differ in them where nothing else tells them apart). Whitespace, a byte-order
    mark, the encoding, truncation and the rest of the file do not enter."""
    identity: dict[str, Any] = {
        "op": op, "test": section.test, "version": section.version, "nccl": section.nccl_version,
        "settings": section.settings, "ranks": [[d.rank, d.host, d.pid, d.device, d.bus_id] for d in section.devices],
    }
    if section.tests_name != "nccl-tests":
        identity["tests"] = section.tests_name
    if section.rccl_version:
        identity["rccl"] = section.rccl_version
    if not section.devices and section.rows:
        identity["first_row"] = list(section.rows[0].key)
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def record_id(run_id: str, row: Row, occurrence: int, in_place: bool) -> str:
    """The run's identity plus the row's own values (and which time that size came up: runs
    with -N repeat the sweep), so a record is known by what it measured."""
    timing = row.in_place if in_place else row.out_of_place
    values = [row.size, row.count, row.type, row.redop, row.root, occurrence, in_place,
              timing.time_us, timing.algbw_gbs, timing.busbw_gbs, timing.wrong]
    digest = hashlib.sha256(f"{run_id}:{json.dumps(values)}".encode()).hexdigest()
    return f"nccl-tests:{digest[:32]}"


def already_stored(store: Store, results: list[SectionResult]) -> Callable[[ResultRecord], bool]:
    """Which records of the runs are stored already, known by their figures: those of an excerpt
    that shows no line of its run (no rank, settings or version line), whose figures the store
    holds (the same log imported whole). The rest are known by their ids (record_id)."""
    from wirewise.orchestrator.store.results import results_with

    excerpt = [r for r in results if r.record_count and not (r.section.devices or r.section.has_preamble)]
    known: set[tuple] = set()
    if excerpt:
        sizes = tuple(sorted({row.size for r in excerpt for row in r.section.rows}))
        known = set(results_with(store, FIGURES, source="nccl-tests", op=tuple(sorted({r.op for r in excerpt})), bytes=sizes))
    return lambda record: bool(known) and record.extra.get("identified_by") == "figures" and _figures(record) in known


# What an excerpt's record is matched by: its stored columns, and the record's fields of those names.
FIGURES = ("op", "bytes", "count", "dtype", "in_place", "time_us", "algbw_gbs", "busbw_gbs")


def _figures(record: ResultRecord) -> tuple:
    return tuple(getattr(record, name) for name in FIGURES)
