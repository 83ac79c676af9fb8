"""A log's sections as result records: one per stored row and form (out of place, in place),
one for a failed run, each with the fields a native wirewise run records.

Records are made from a section's rows on demand, a row at a time (SectionResult.records),
while they are stored a batch at a time (wirewise.orchestrator.record.ingest.store_measurement):
memory is a constant plus the rows and runs kept, whatever the log's size. The node is rank
0's host; the hosts and their count go to `extra`, and the run's `Avg bus bandwidth` line as
printed (it counts the rows of size 0, which are not stored) to extra.avg_busbw_gbs. A section
that failed is stored as one failed record (as wirewise stores a failed native run); one whose
op is unknown, or that repeats another or interleaves two runs, is named and stores nothing
while the file's other runs are stored; a file of nothing else is refused.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wirewise.clock import utcnow
from wirewise.dtypes import NCCL_TESTS_TYPES
from wirewise.errors import UserError
from wirewise.jobenv import visible_indices
from wirewise.orchestrator.record.nccl_tests.identity import record_id, run_identity
from wirewise.orchestrator.record.nccl_tests.inference import Ranks, UnknownOp, command_ranks, op_of, ranks_of
from wirewise.orchestrator.record.nccl_tests.options import Given, HowItRan
from wirewise.orchestrator.record.nccl_tests.reader import parse_log
from wirewise.orchestrator.record.nccl_tests.sections import Section
from wirewise.orchestrator.record.nccl_tests.validation import validation_failure, wrong_count
from wirewise.record import ResultRecord

if TYPE_CHECKING:
    from wirewise.topology import Topology


@dataclass
class SectionResult:
    """One section read: what its records will be (made on demand, a row at a time), or why
    it stores none."""

    section: Section
    op: str | None
    ranks: Ranks
    node: str | None
    status: str  # ok, failed (validation or a failed run), skipped
    error: str | None
    not_stored: str | None = None  # why the section stored nothing (unknown op, repeat, interleaved runs)
    run_id: str = ""
    topology: Topology | None = None
    index: int = 0  # the run's place in the file
    file_name: str = ""
    when: datetime | None = None
    transport: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def base(self) -> dict:
        """The fields every record of the run shares (made on demand: a log of 100,000 runs
        would keep 100,000 of these dicts)."""
        if self.op is None:
            return {}
        base = _section_fields(self.section, self.index, self.op, self.file_name, self.node, self.run_id, self.when, self.ranks)
        base["params"]["transport"], base["env"] = self.transport, self.env
        return base

    @cached_property
    def record_count(self) -> int:
        """Records the run gives: two per non-empty size (one where only out of place is printed), one for a failed run."""
        if self.not_stored:
            return 0
        if self.section.failure and not self.section.rows:
            return 1
        return sum(1 + (row.in_place is not None) for row in self.section.rows if row.size)

    def records(self) -> Iterator[ResultRecord]:
        if self.not_stored:
            return
        section, topology, base = self.section, self.topology, self.base
        wiring = {"fingerprint": topology.fingerprint if topology else None, "fabric": topology.fabric if topology else None}
        section_extra = _extra(section, self.ranks)
        if section.failure and not section.rows:
            yield ResultRecord(**base, **wiring, status="failed", error=self.error,
                               record_id=f"nccl-tests:{self.run_id[:32]}:failed", extra=section_extra)
            return
        seen_sizes: Counter[int] = Counter()
        for row in section.rows:
            seen_sizes[row.size] += 1
            if row.size == 0:
                continue
            for in_place, timing in ((False, row.out_of_place), (True, row.in_place)):
                if timing is None:
                    continue
                extra = {**section_extra, "redop": row.redop, "root": row.root}
                if timing.error is not None:
                    extra["max_error"] = timing.error
                yield ResultRecord(
                    **base, **wiring, status=self.status, error=self.error,
                    record_id=record_id(self.run_id, row, seen_sizes[row.size], in_place),
                    bytes=row.size, count=row.count, dtype=_recorded_dtype(row.type), in_place=in_place,
                    time_us=timing.time_us, algbw_gbs=timing.algbw_gbs, busbw_gbs=timing.busbw_gbs,
                    wrong=wrong_count(row, timing, self.ranks), extra=extra,
                )


def log_records(text: str, file_name: str, *, op: str | None = None, node: str | None = None,
                topology: Topology | None = None, logged_at: datetime | None = None,
                how: HowItRan = HowItRan(), ranks: int | None = None) -> list[ResultRecord]:
    """Every stored row of the log as records (two per size: out of place and in place), and
    one record per failed run. `node` defaults to each run's rank 0 host; `topology` gives the
    rows their fingerprint and fabric; `how` the transport and environment it ran with."""
    given = Given.from_options(op, ranks, node, how)
    results = read_sections(parse_log(text), file_name, given, topology, logged_at)
    return [record for result in results for record in result.records()]


def read_sections(sections: list[Section], file_name: str, given: Given, topology: Topology | None,
                   logged_at: datetime | None) -> list[SectionResult]:
    if not sections:
        raise UserError(f"{file_name}: no nccl-tests result rows found (is this the stdout of an *_perf run?)")
    given.check_lines(sections, file_name)
    when = logged_at or utcnow()
    results = []
    for index, section in enumerate(sections):
        try:
            results.append(_section_result(section, index, file_name, given, topology, when))
        except UnknownOp as exc:  # the other runs of the file are stored; this one is named
            if len(sections) == 1:
                raise
            results.append(SectionResult(section, None, Ranks(None, False, "unknown"), None, "skipped", None, str(exc)))
    stored = [r for r in results if r.record_count]
    if not stored:
        named = [r for r in results if r.not_stored and r.section.repeats is None]
        if named:
            raise UserError(named[0].not_stored)
        skipped = "; ".join(why for s in sections for why in s.skipped[:3])
        raise UserError(f"{file_name}: no whole nccl-tests result row found ({skipped or 'no rows'})")
    return results


def _section_result(section: Section, index: int, file_name: str, given: Given, topology: Topology | None,
                    when: datetime) -> SectionResult:
    where = f"{file_name} (run at line {section.first_line})"
    unknown = Ranks(None, False, "unknown")
    if section.repeats is not None:
        why = (f"the run at line {section.first_line} is the run at line {section.repeats} again (the same lines)" if section.copy else
               f"the run at line {section.first_line} repeats rows of the run at line {section.repeats} (a quoted excerpt)")
        return SectionResult(section, None, unknown, None, "skipped", None, why)
    if section.interleaved:
        why = (f"{where} holds the lines of two runs written at once ({section.interleaved}): its rows cannot be "
               "told apart; save each run's output to a file of its own")
        return SectionResult(section, None, unknown, None, "skipped", None, why)
    op = op_of(section, given.op, file_name)
    ranks = ranks_of(section, op, given.ranks, where)
    node = given.node or section.rank0_host
    transport, env = given.how.env_of(section, file_name)
    ran = dict(run_id=run_identity(section, op), topology=topology, index=index, file_name=file_name, when=when,
               transport=transport, env=env)
    if section.failure and not section.rows:
        error = f"line {section.failure_line}: {section.failure}"
        return SectionResult(section, op, ranks, node, "failed", error, **ran)
    error = validation_failure(section, ranks)
    if section.failure:
        error = "; ".join(filter(None, [f"line {section.failure_line}: {section.failure}", error]))
    return SectionResult(section, op, ranks, node, "failed" if error else "ok", error, **ran)


def _section_fields(
    section: Section, index: int, op: str, file_name: str, node: str | None, run_id: str, when: datetime, ranks: Ranks,
) -> dict:
    hosts = section.hosts
    versions = {section.tests_name: section.version, "nccl": section.nccl_version, "rccl": section.rccl_version}
    return dict(
        task_id=f"nccl-tests:{run_id[:12]}",
        workload="collective",
        source="nccl-tests",
        op=op,
        # cuda_graph as wirewise's own sweep records it: the header's `graph: N` is -G N
        params={"log": Path(file_name).name, "section": index, "test": section.test or (section.command.test if section.command else None),
                **section.settings, "cuda_graph": bool(section.settings.get("graph"))},
        node=node,
        # every host is known only when every rank line is shown; else the count is unknown
        node_count=len(hosts) if hosts and ranks.exact and ranks.source == "rank lines" else None,
        nodes=hosts,
        gpus=gpus_used(section, node),
        gpu_count=ranks.count,
        world_size=ranks.count,
        started_at=when,
        ended_at=when,
        versions={k: v for k, v in versions.items() if v},
        transport_carried=section.wire.carried,
    )


def gpus_used(section: Section, node: str | None) -> list[int]:
    """The GPU indices the run used on `node`: its rank lines' devices, read through the
    CUDA_VISIBLE_DEVICES of its command line where it set one (device 0 of `CUDA_VISIBLE_DEVICES=2,3`
    is GPU 2); without rank lines, those of a single-process command (`-g 2`)."""
    command = section.command
    on_node = sorted({d.device for d in section.devices if d.host == node})
    if section.devices:
        mapping = visible_indices(command.env, on_node[-1] + 1) if command and on_node else None
        return sorted(mapping[d] for d in on_node) if mapping else on_node
    return sorted(command.gpus) if command and command.gpus is not None and command_ranks(section) else []


def _recorded_dtype(printed: str) -> str:
    """The dtype a row records: torch's name for nccl-tests' (`float` -> float32), else as printed."""
    element = NCCL_TESTS_TYPES.get(printed)
    return element.name if element else printed


def _extra(section: Section, ranks: Ranks) -> dict[str, Any]:
    hosts = section.hosts
    extra: dict[str, Any] = {
        # docs/contracts.md: every record says how it ran; nccl-tests and rccl-tests run NCCL's API on GPUs
        "backend": "nccl", "device": "cuda",
        "avg_busbw_gbs": section.average_busbw, "hosts": hosts,
        "ranks_exact": ranks.exact, "ranks_from": ranks.source, "log_line": section.first_line,
        # what the record is known by: the run's own lines, or (an excerpt of rows only) its figures
        "identified_by": "run" if section.devices or section.has_preamble else "figures",
    }
    names = [name for name in dict.fromkeys(d.name for d in section.devices) if name]
    if names:
        extra["gpu_names"] = names
    if section.notes:
        extra["notes"] = section.notes
    return extra
