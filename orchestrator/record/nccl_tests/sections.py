"""One run inside a log (a Section): its preamble, rank lines, rows and footer as the reader
finds them, and how its row lines become rows.

A section that shows the same rank twice with another host or process, or the same size twice
in a row of a sweep, holds two runs' lines interleaved (two jobs writing one file): no row can
be told to be whose, so it is marked `interleaved` and not stored (records). Its row lines are
judged when the run ends: a row is whole when it has the column count of the run's header (one
fewer where every row leaves the redop column blank: alltoall before 2.13).
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field

from wirewise.nccl_info import Wire
from wirewise.orchestrator.record.nccl_tests.commands import Command
from wirewise.orchestrator.record.nccl_tests.rows import Row, RowTable, parse_row, why_not_measured


@dataclass(slots=True)
class Device:
    rank: int
    pid: int | None
    host: str
    device: int
    bus_id: str
    name: str  # "" where the line ends at the bus id (rccl-tests since 2025)


MAX_SKIPPED_SHOWN = 20  # skipped rows named per run; the rest are counted


@dataclass(slots=True)
class Section:
    """One `*_perf` run inside the log."""

    first_line: int = 0
    test: str | None = None  # e.g. all_reduce_perf, from `Collective test starting`
    command: Command | None = None  # the command line in the log that ran it
    tests_name: str = "nccl-tests"  # or rccl-tests
    version: str | None = None
    nccl_version: str | None = None
    rccl_version: str | None = None
    settings: dict[str, int] = field(default_factory=dict)
    devices: list[Device] = field(default_factory=list)
    header: list[str] | None = None  # column names
    rows: RowTable = field(default_factory=RowTable)
    row_lines: array = field(default_factory=lambda: array("L"))  # the line of each row
    average_busbw: float | None = None
    bounds: tuple[int, bool] | None = None  # Out of bounds values: (count, ok)
    failure: str | None = None  # the first `Test ... failure` line, cleaned
    failure_line: int | None = None
    concluded: bool = False
    notes: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # NCCL INFO "set by environment" lines
    wire: Wire = field(default_factory=Wire)  # what its NCCL INFO lines say the connections used
    skipped: list[str] = field(default_factory=list)  # why rows were not stored, by line (the first MAX_SKIPPED_SHOWN)
    skipped_more: int = 0  # and how many more
    repeats: int | None = None  # first line of the earlier section whose rows this one repeats
    copy: bool = False  # and its run lines too: the same run again (a log appended to itself)
    interleaved: str | None = None  # why the section holds the lines of two runs at once
    # row lines being read: (line, token count, the row or None); decided on when the run ends
    candidates: list[tuple[int, int, Row | None]] = field(default_factory=list)
    pending: tuple[int, list[str]] | None = None  # the last row line, which a continuation may complete
    lengths: Counter = field(default_factory=Counter)
    gap: bool = False  # a blank line or prose since the last row line

    @property
    def has_preamble(self) -> bool:
        return bool(self.version or self.test or self.settings)

    @property
    def has_rows(self) -> bool:
        return bool(self.candidates or self.pending or self.rows)

    @property
    def has_body(self) -> bool:
        return bool(self.devices or self.header or self.has_rows or self.closed)

    @property
    def closed(self) -> bool:
        """Past its rows: a footer, a failure or the concluding line was seen."""
        return bool(self.average_busbw is not None or self.bounds or self.failure or self.concluded)

    @property
    def hosts(self) -> list[str]:
        """The hosts of the rank lines, in rank order."""
        return list(dict.fromkeys(d.host for d in sorted(self.devices, key=lambda d: d.rank)))

    @property
    def rank0_host(self) -> str | None:
        return next((d.host for d in self.devices if d.rank == 0), None)

    @property
    def zero_size_rows(self) -> int:
        return sum(row.size == 0 for row in self.rows)

    @property
    def last_size(self) -> int | None:
        if self.pending:
            return int(self.pending[1][0])
        return next((row.size for _, _, row in reversed(self.candidates) if row), None)

    def skip(self, why: str) -> None:
        if len(self.skipped) < MAX_SKIPPED_SHOWN:
            self.skipped.append(why)
        else:
            self.skipped_more += 1

    def add_candidate(self, number: int, tokens: list[str]) -> None:
        self.flush()
        self.pending = (number, tokens)

    def flush(self) -> None:
        """The pending row line is whole now: parse it (its column count is judged at the end)."""
        if self.pending is None:
            return
        number, tokens = self.pending
        self.pending = None
        self.lengths[len(tokens)] += 1
        self.candidates.append((number, len(tokens), parse_row(tokens, self.old_error_column)))

    def read_rows(self) -> None:
        """Rows from the candidate lines: whole ones only (see the module's docstring)."""
        self.flush()
        expected = self._expected_columns()
        for number, length, row in self.candidates:
            if length != expected:
                self.skip(f"line {number}: {length} columns where the run prints {expected} (cut row?)")
            elif row is None:
                self.skip(f"line {number}: not a result row")
            elif (problem := why_not_measured(row)) is not None:
                self.skip(f"line {number}: {problem}")
            else:
                self.rows.append(row)
                self.row_lines.append(number)
        self.candidates = []
        self._check_sweep()

    def _check_sweep(self) -> None:
        """A sweep prints each size once, growing (-N and -d all start it again from the
        smallest): two rows of one size and type in a row, in a run of several sizes, are the
        rows of two runs taking turns."""
        if len({row.size for row in self.rows}) < 2:
            return  # one size (-b = -e), maybe repeated by -N: nothing to judge by
        twice = [index for index in range(1, len(self.rows)) if self.rows[index].size
                 and (self.rows[index - 1].size, self.rows[index - 1].type) == (self.rows[index].size, self.rows[index].type)]
        # the chunked ops round small sizes down to a multiple of ranks x element: 0, 0, 0 or
        # 32, 32 once are one run's; two runs taking turns repeat every size
        if len(twice) >= 2 and 3 * len(twice) >= sum(1 for row in self.rows if row.size):
            first = twice[0]
            self.interleaved = self.interleaved or (
                f"{len(twice)} sizes printed twice in a row, the first at lines {self.row_lines[first - 1]} and {self.row_lines[first]}")

    @property
    def old_error_column(self) -> bool:
        """The header names `error` (before 2.13: the largest deviation, a float), not `#wrong`."""
        return bool(self.header) and "error" in self.header and "#wrong" not in self.header

    def _expected_columns(self) -> int:
        """The header's column count; one fewer where every row leaves the redop column blank
        (alltoall before 2.13 printed an empty redop under the header's `redop`)."""
        if not self.lengths:
            return 0
        common = self.lengths.most_common(1)[0][0]
        if self.header is None:
            return common
        named = len(self.header)
        if self.lengths[named] == 0 and common == named - 1 and "redop" in self.header:
            return common
        return named

    def add_device(self, device: Device) -> None:
        """A rank line; the same rank shown twice with another host, process or device means
        the lines of two runs are interleaved here (two jobs writing one file at once)."""
        for other in self.devices:
            if other.rank == device.rank and (other.host, other.pid, other.device, other.bus_id) != (
                    device.host, device.pid, device.device, device.bus_id):
                self.interleaved = self.interleaved or (
                    f"Rank {device.rank} is shown twice (on {other.host} pid {other.pid} and on {device.host} pid {device.pid})")
                return
            if other.rank == device.rank:
                return  # the same line again
        self.devices.append(device)
