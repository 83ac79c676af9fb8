"""What a log leaves unsaid about a run, inferred: which op it measured and on how many ranks.

Which op: the log's own `Collective test starting` line; else --op; else a command line in the
log that names one binary (`./build/sendrecv_perf -b 8 ...`, `Running: ... all_gather_perf`);
else what the rows can only be (see `_op_from_rows`); else the file name. Every op is checked
against the redop column (sendrecv prints the redop it was given, `sum`, in every version).

Ranks. Rank lines give them: indices 0..k-1 all shown are exactly k ranks; an excerpt that
shows only `Rank 1439` means at least 1440 (stored as 1440, marked `ranks_exact: false`). The
chunked ops print size = ranks x count x element size (all_gather, reduce_scatter, alltoall,
gather, scatter: their GetCollByteCount), which gives the count where no rank line does;
`--ranks N` says it for the rest, then the run's command line. Without any of these the rank
count is unknown, stored as NULL (`gpu_count`, `world_size`), which `results` shows as unknown
and never counts as a CPU run or as one GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wirewise.case import REDUCING_OPS
from wirewise.dtypes import NCCL_TESTS_TYPES
from wirewise.errors import UserError

if TYPE_CHECKING:
    from wirewise.orchestrator.record.nccl_tests.options import PerRun
    from wirewise.orchestrator.record.nccl_tests.rows import Row
    from wirewise.orchestrator.record.nccl_tests.sections import Section

# nccl-tests binary (without _perf) -> wirewise op name where they differ.
OP_FROM_TEST = {"alltoall": "all_to_all"}
NON_REDUCING_OPS = {"all_gather", "broadcast", "all_to_all", "sendrecv", "gather", "scatter", "hypercube", "alltoallv"}
KNOWN_OPS = REDUCING_OPS | NON_REDUCING_OPS
# Ops whose printed size is ranks x count x element size (their GetCollByteCount).
CHUNKED_OPS = {"all_gather", "reduce_scatter", "all_to_all", "gather", "scatter", "hypercube"}
# Spellings of an op in file names and binaries, most specific first ("reduce_scatter" before "reduce").
OP_IN_NAME = [
    ("reduce_scatter", ("reduce_scatter", "reducescatter")),
    ("all_reduce", ("all_reduce", "allreduce")),
    ("all_gather", ("all_gather", "allgather")),
    ("all_to_all", ("all_to_all", "alltoall")),
    ("broadcast", ("broadcast", "bcast")),
    ("sendrecv", ("sendrecv",)),
    ("reduce", ("reduce",)),
    ("gather", ("gather",)),
    ("scatter", ("scatter",)),
]


class UnknownOp(UserError):
    """Nothing in the log, the options or the file name says which collective a run measured."""


def op_of(section: Section, given_op: PerRun | None, file_name: str) -> str:
    """The log's op line, --op, a command line in the log, the rows, the file name (first
    that says); checked against the redop column. UserError when none says or they disagree."""
    given = given_op.get(section.first_line) if given_op else None
    from_log = _op_from_test(section.test) if section.test else None
    command_test = section.command.test if section.command else None
    from_command = _op_from_test(command_test) if command_test else None
    for named, said in ((from_log, f"says it ran {section.test}"), (from_command, f"ran {command_test}")):
        if given and named and given != named:
            raise UserError(f"--op {given} but the run at line {section.first_line} of {file_name} {said}: "
                            f"give --op LINE:{given} for the run it is meant for")
    from_rows = _op_from_rows(section)
    op = from_log or given or from_command or from_rows or _op_from_name(file_name)
    where = f"{file_name} (run at line {section.first_line})"
    if op is None:
        raise UnknownOp(
            f"{where}: the log does not say which collective it measured (no 'Collective test starting' line, "
            f"no command naming the binary) and the file name does not either: give --op {section.first_line}:OP for this run "
            f"(e.g. --op {section.first_line}:all_gather), or --op OP for every run that names none"
        )
    if from_rows and not from_log and op != from_rows:
        raise UserError(f"{where}: the rows are those of {from_rows} (redop, root, size per element), not {op}: give the right --op")
    redops = {row.redop for row in section.rows}
    if op in REDUCING_OPS and redops == {"none"}:
        raise UserError(f"{where}: the rows have redop 'none', which {op} never prints; give the right --op")
    if op in NON_REDUCING_OPS - {"sendrecv"} and redops - {"none"}:
        raise UserError(f"{where}: the rows have redop {sorted(redops - {'none'})}, which {op} never prints; give the right --op")
    return op


def _op_from_rows(section: Section) -> str | None:
    """The op the rows can only be: redop with root >= 0 and one element per size unit is
    reduce, without redop broadcast; redop, root -1 and size = ranks x count is reduce_scatter;
    redop, root -1, one element per unit and busbw above algbw is all_reduce (only its bus
    factor 2(n-1)/n exceeds 1). Anything else (sendrecv or all_reduce on 2 ranks, all_gather
    or alltoall, gather or scatter) is left to the other sources."""
    if not section.rows:
        return None
    redops = {row.redop for row in section.rows}
    roots = {row.root for row in section.rows}
    per_unit = _elements_per_count(section.rows)
    if len(redops) != 1 or len(roots) != 1 or per_unit is None:
        return None
    reduces, rooted = redops != {"none"}, roots.pop() >= 0
    if rooted:
        return ("reduce" if reduces else "broadcast") if per_unit == 1 else None
    if reduces and per_unit > 1:
        return "reduce_scatter"
    busbw_over_algbw = [r.out_of_place.busbw_gbs / r.out_of_place.algbw_gbs for r in section.rows if r.out_of_place.algbw_gbs >= 1]
    if reduces and per_unit == 1 and busbw_over_algbw and min(busbw_over_algbw) > 1.05:
        return "all_reduce"
    return None


def _elements_per_count(rows: list[Row]) -> int | None:
    """size / (count x element size), the same whole number on every non-empty row, or None."""
    ratios = set()
    for row in rows:
        element = NCCL_TESTS_TYPES.get(row.type)
        if element is None or row.count == 0:
            continue
        whole, rest = divmod(row.size, row.count * element.bytes)
        if rest:
            return None
        ratios.add(whole)
    return ratios.pop() if len(ratios) == 1 else None


def _op_from_test(test: str) -> str:
    name = re.sub(r"_perf(_mpi)?$", "", test)
    return OP_FROM_TEST.get(name, name)


def _op_from_name(file_name: str) -> str | None:
    name = Path(file_name).name.lower().replace("-", "_")
    for op, spellings in OP_IN_NAME:
        if any(spelling in name for spelling in spellings):
            return op
    return None


@dataclass(frozen=True)
class Ranks:
    """How many ranks a section ran, and how it is known."""

    count: int | None  # None: unknown
    exact: bool
    source: str  # rank lines, rank lines (highest), rows (size per count), --ranks, unknown


def ranks_of(section: Section, op: str | None, given_ranks: PerRun | None, where: str) -> Ranks:
    """The section's rank count from its rank lines, its rows (chunked ops), --ranks or the
    command line that ran it; UserError where --ranks contradicts what the log shows."""
    given = given_ranks.get(section.first_line) if given_ranks else None
    indices = {d.rank for d in section.devices}
    highest = max(indices) + 1 if indices else None
    from_rows = _elements_per_count(section.rows) if op in CHUNKED_OPS else None
    if given is not None:
        if highest is not None and (given < highest or (len(indices) == highest and given != highest)):
            raise UserError(f"--ranks {given} but {where} shows rank lines up to Rank {highest - 1} ({len(indices)} shown)")
        if from_rows is not None and from_rows != given:
            raise UserError(f"--ranks {given} but the rows of {where} are sized for {from_rows} ranks ({op}: size = ranks x count)")
    from_command = command_ranks(section)
    if highest is not None and len(indices) == highest:
        return Ranks(highest, True, "rank lines")
    if from_rows is not None and (highest is None or from_rows >= highest):
        return Ranks(from_rows, True, "rows (size per count)")
    if given is not None:
        return Ranks(given, True, "--ranks")
    if from_command is not None and (highest is None or from_command >= highest):
        return Ranks(from_command, True, "command line")
    if highest is not None:
        return Ranks(highest, False, "rank lines (highest)")
    return Ranks(None, False, "unknown")


def command_ranks(section: Section) -> int | None:
    """The ranks the run's command line starts, where the settings line (per process) agrees."""
    command = section.command
    if command is None or command.ranks is None:
        return None
    per_process = section.settings.get("ngpus", 1) * section.settings.get("nthread", 1)
    if command.gpus is not None and section.settings and per_process != command.ranks:
        return None  # one process, but the settings line says otherwise: the command is another run's
    return command.ranks
