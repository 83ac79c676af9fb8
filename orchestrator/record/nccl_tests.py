"""Read nccl-tests logs (NVIDIA/nccl-tests `*_perf` stdout, and ROCm/rccl-tests') into result
records, as people keep them: every format since 2.0, several runs in one file, pasted from a
terminal or a README, saved in any encoding (log_text: a byte-order mark, UTF-16, Latin-1).

Streaming. The log is read a line at a time (log_text.LogText) and each run keeps its rows
in two arrays (RowTable, ~130 bytes a row) and its own lines' facts (hosts, GPU names, headers
and settings shared between runs), never the text; records are made from the rows while they
are stored, a batch at a time (wirewise.orchestrator.record.ingest.store_measurement): memory
is a constant plus the rows and runs kept, whatever the log's size (issue 29: a 20 MB log held
1.3 GB read whole; tests/benchmarks/bench_import_nccl_tests.py measures 200 MB).

What a run prints (src/common.cu), old format or new:
- optional `# nccl-tests version X nccl-headers=C nccl-library=C` and
  `# Collective test starting: all_reduce_perf` (before 2.17 neither);
- `# nThread 1 nGpus 1 minBytes ... iters: 20 ...`: the settings;
- rccl-tests: `# rccl-tests version X rccl-headers=C rccl-library=C`, or before 2.17
  `rccl-tests: Version develop:5272cd1` after the settings line; RCCL's own
  `RCCL version : 2.22.3-HEAD:7d8d67c` (NCCL_DEBUG=VERSION) after the rank lines;
- `#  Rank  0 Group  0 Pid 123 on HOST device  0 [BUS] NAME` (before 2.6 without Group, 2.0
  without Pid, rccl-tests since 2025 without NAME): one line per rank, the hosts, GPU indices
  and models;
- a header naming the columns, then one row per size: size, count, type, redop, root (older
  ops print one of them, or leave redop blank), then time/algbw/busbw/#wrong out of place and
  again in place. Before 2.13 the last column was `error`, the largest deviation as a float;
- `# Out of bounds values : N OK|FAILED`, `# Avg bus bandwidth : X`,
  `# Collective test concluded: ...`;
- or, when a run dies, `HOST: Test NCCL failure common.cu:401 'remote process exited or
  there was a network error / '` and no rows or footer.

Sections. A file holds any number of runs (cluster scripts run every `*_perf` into one log;
READMEs paste several). A run begins at its version, op or settings line, or at rank lines or
a header that follow another run's rows, footer or failure; each section has its own op, rank
lines, rows and footer, so the rank lines of a failed run never join the next one. Rows whose
sweep starts again (a size not above the last) after a blank line or a heading (`====== 2-node
======`) are another run's: an excerpt of several runs with no header of their own. A section
that failed is stored as one failed record (as wirewise stores a failed native run) and named
in the summary. A section with no preamble of its own whose rows all repeat an earlier
section's (a README quoting an excerpt of the log it showed above), or whose lines all repeat
an earlier run's (a log appended to itself), is not stored twice. A section that shows the
same rank twice with another host or process, or the same size twice in a row of a sweep,
holds two runs' lines interleaved (two jobs writing one file): no row can be told to be
whose, so it is not stored, and a file of nothing else is refused.

Command lines. A line that runs one `*_perf` binary (maybe continued with a backslash) belongs to
the run that follows it: its binary names the op; the recorded variables set on it
(`NCCL_P2P_DISABLE=1 CUDA_VISIBLE_DEVICES=2,3 ./all_reduce_perf`, `mpirun -x K=V`, `srun
--export=`) are the run's environment, which sets its transport (HowItRan) and maps its
devices to GPUs (device 0 of CUDA_VISIBLE_DEVICES=2,3 is GPU 2); its `-g`/`-t` and a
launcher's process count (`mpirun -np`, `srun -n`; none: one process) give the rank count
where nothing else does. A prompt line running something else in between (`$ egrep ...`)
ends its claim.

Pasted text. Lines are read as tokens, so indentation, Markdown fences, `$ mpirun ...`
commands, `...` elisions, ssh warnings, NCCL INFO lines anywhere (also between the header and
the rows), shell traces and prose around the table do not matter. `mpirun --tag-output`
prefixes (`[1,0]<stdout>:`) and `srun --label` prefixes (`0: `) are stripped; where the
outputs of two ranks interleave mid-line, the line is split at the tag, and a row cut that way
is joined with its continuation when the pieces make a whole row, else skipped with a warning
naming its line. Markdown that ate a leading `#` (rank and settings lines) is read the same.

Options that set a run's facts (--op, --ranks, --transport) take `VALUE` for every run or
`LINE:VALUE` for the run starting at LINE (PerRun), so one run of a file can be named alone.

Which op: the log's own `Collective test starting` line; else --op; else a command line in the
log that names one binary (`./build/sendrecv_perf -b 8 ...`, `Running: ... all_gather_perf`);
else what the rows can only be (see `_op_from_rows`); else the file name. Every op is checked
against the redop column (sendrecv prints the redop it was given, `sum`, in every version).

Ranks. Rank lines give them: indices 0..k-1 all shown are exactly k ranks; an excerpt that
shows only `Rank 1439` means at least 1440 (stored as 1440, marked `ranks_exact: false`). The
chunked ops print size = ranks x count x element size (all_gather, reduce_scatter, alltoall,
gather, scatter: their GetCollByteCount), which gives the count where no rank line does;
`--ranks N` says it for the rest, then the run's command line. Without any of these the rank count is unknown, stored as
NULL (`gpu_count`, `world_size`), which `results` shows as unknown and never counts as a CPU
run or as one GPU. The node is rank 0's host; the hosts and their count go to `extra`.

Validation, as nccl-tests itself decides it (src/common.cu before 2.13): a row fails when its
error exceeds DeltaMaxValue(type) x (ranks - 1) (half and bfloat16 1e-2, float 1e-5, double
1e-12, integers any error at all); a `#wrong` above 0 or an `Out of bounds values : N FAILED`
footer fails the run too. Every record of a failed run is stored with status "failed" and the
reason in `error`; `wrong` is the count nccl-tests printed, and for the old float column 0
within the tolerance and 1 (at least one element) beyond it, the error kept in extra.max_error.

Rows of size 0 carry no bandwidth and are not stored (counted in the summary); the average
line, which counts them, is kept as printed in extra.avg_busbw_gbs. A row is stored only when
whole (as many columns as its section's rows have) and its times and bandwidths are finite and
non-negative; others are skipped with a warning naming their line.

Record ids come from the measurement, not the file's bytes: the run's header (ranks' hosts,
pids, devices and bus ids, settings, version, test; without rank lines, its first row's
figures too, so two runs of unknown rank counts are never one) and the row's own values. The
same log with other whitespace, another encoding or a byte-order mark, a truncated copy, or
the log inside a longer file give the same ids.
"""

from __future__ import annotations

import hashlib
import math
from array import array
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from wirewise.case import REDUCING_OPS
from wirewise.dtypes import NCCL_TESTS_TYPES
from wirewise.errors import UserError
from wirewise.jobenv import visible_indices
from wirewise.limits import MAX_LOG_BYTES
from wirewise.nccl_info import VERSION_LINE, Wire
from wirewise.orchestrator.record.log_text import MAX_LINE_CHARS
from wirewise.record import RECORDED_ENV_PREFIXES, ResultRecord, figure_problem
from wirewise.versions import decode_nccl_version

if TYPE_CHECKING:
    from wirewise.orchestrator.store import Store
    from wirewise.topology import Topology

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
# DeltaMaxValue(type) of nccl-tests' src/common.cu (until 2.13, when #wrong replaced the float
# error column): a row failed when its error exceeded this times (ranks - 1); integers: any error.
ERROR_TOLERANCE = {"half": 1e-2, "bfloat16": 1e-2, "float": 1e-5, "double": 1e-12}
INTEGER_TOLERANCE = 1e-200

_TAG = re.compile(r"\[\d+,\d+\]<std(?:out|err)>:")  # mpirun --tag-output
_LABEL = re.compile(r"^\d+:\s")  # srun --label
# nccl-tests and rccl-tests since 2.17: `# rccl-tests version 2.17.9-x rccl-headers=22803 rccl-library=22803`;
# rccl-tests before: `rccl-tests: Version develop:5272cd1` (after the settings line)
_VERSION = re.compile(
    r"^#?\s*(?P<tests>[nr]ccl-tests)(?:\s+version|:\s*Version)\s+(?P<version>\S+)(?:.*?[nr]ccl-library=(?P<library>\d+))?", re.I
)
_RCCL_LINE = re.compile(r"\bRCCL version\s*:\s*(\S+)")  # RCCL's own banner (NCCL_DEBUG=VERSION or INFO)
_STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_CONCLUDED = re.compile(r"^#\s*Collective test concluded")
_SETTINGS = re.compile(r"^#?\s*nThread\s+\d+\s+nGpus\s+\d+")
_DEVICE = re.compile(
    r"^#?\s*Rank\s+(?P<rank>\d{1,9})\s+(?:Group\s+\d+\s+)?(?:Pid\s+(?P<pid>\d{1,18})\s+)?on\s+(?P<host>\S+)\s+"
    r"device\s+(?P<device>\d{1,9})\s+\[(?P<bus>[^\]]*)\](?:\s+(?P<name>.+?))?\s*$"
)
_HEADER = re.compile(r"^#?\s*size\s+count\s+type\b")
_AVERAGE = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_BOUNDS = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d{1,18})\s+(OK|FAILED)")
# The host is at most 255 characters (a DNS name's bound): unbounded, the search backtracked
# over every start of a long line without spaces, quadratic in its length (a 100 KB line: minutes).
_FAILURE = re.compile(r"(?:(?P<host>[^\s:]{1,255}):\s+)?Test (?:NCCL |CUDA )?failure (?P<where>\S+) '(?P<why>[^']*)")
_FAILURE_TRACE = re.compile(r"^\.\.\s+\S+\s+pid\s+\d+:\s+Test failure")
_BINARY = re.compile(r"(?:^|[\s/=])([a-z_]+?)_perf(?:_mpi)?(?=\s+-)")
# Terminal control sequences (ANSI CSI/OSC) and other control characters: never part of a
# host or GPU name, and a log may carry them (colourised srun output, or a hostile file).
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x00-\x1f\x7f-\x9f]")
_ENV_LINE = re.compile(r"NCCL INFO (NCCL_\w+) set by environment to (\S+?)\.?\s*$")
_ENV_PAIR = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_SETTING_FIELDS = {
    "nthread": r"nThread\s+(\d+)", "ngpus": r"nGpus\s+(\d+)", "min_bytes": r"minBytes\s+(\d+)",
    "max_bytes": r"maxBytes\s+(\d+)", "step_factor": r"step:\s*(\d+)\(factor\)", "step_bytes": r"step:\s*(\d+)\(bytes\)",
    "warmup": r"warmup iters:\s*(\d+)", "iters": r"(?<!warmup )(?<!agg )iters:\s*(\d+)", "agg_iters": r"agg iters:\s*(\d+)",
    "validation": r"validation:\s*(\d+)", "graph": r"graph:\s*(\d+)",
}
_BOILERPLATE = ("size", "(B)", "out-of-place", "Using", "Collective", "Out", "Rank", "Errors")
# Launchers whose command lines start several processes (`mpirun -np 16 ... all_reduce_perf -g 1`).
LAUNCHERS = set("mpirun mpiexec mpiexec.hydra orterun srun jsrun aprun prun flux torchrun horovodrun".split())
_PROMPT = re.compile(r"^(?:\(\S+\)\s*)?(?:\[[^\]]*\]|[\w.@:~/-]*)?[$%#]\s")  # `$ egrep ...`, `user@host:~$ ...`
MAX_COMMAND_CHARS = 64 * 1024  # a command continued with `\` over many lines
MAX_DIGITS = 30  # digits of any integer read (a size past 2^63 is 19): longer is no log's, and int() refuses 4,300
MOST_RANKS = 10**7  # --ranks bound: far beyond any machine, small enough to stay an integer everywhere


@dataclass(slots=True)
class Timing:
    time_us: float
    algbw_gbs: float
    busbw_gbs: float
    wrong: int | None  # #wrong; None where the log says N/A (run without -c) or prints the old float error
    error: float | None = None  # the old format's largest error (before 2.13)


@dataclass(slots=True)
class Row:
    size: int
    count: int
    type: str
    redop: str
    root: int
    out_of_place: Timing
    in_place: Timing | None

    @property
    def key(self) -> tuple:
        """The row's values, hashable: what finds a row quoted again."""
        timings = [(t.time_us, t.algbw_gbs, t.busbw_gbs, t.wrong, t.error) for t in (self.out_of_place, self.in_place) if t]
        return (self.size, self.count, self.type, self.redop, self.root, *timings)


NONE_INT = -(2**63)  # RowTable's None of an integer column (#wrong N/A)


class RowTable:
    """A run's rows, column by column in two arrays, ~130 bytes a row and no object per row (a
    200 MB log holds ~800,000 rows); each Row is made again as it is read. Used as a list."""

    __slots__ = ("ints", "floats", "names")
    INTS, FLOATS = 7, 8  # size, count, root, type, redop, wrong x2; time, algbw, busbw, error x2

    def __init__(self):
        self.ints, self.floats, self.names = array("q"), array("d"), []

    def append(self, row: Row) -> None:
        ints, floats = [row.size, row.count, row.root, self._name(row.type), self._name(row.redop)], []
        for timing in (row.out_of_place, row.in_place):
            ints.append(NONE_INT if timing is None or timing.wrong is None else timing.wrong)
            floats += [math.nan] * 4 if timing is None else [
                timing.time_us, timing.algbw_gbs, timing.busbw_gbs, math.nan if timing.error is None else timing.error]
        if row.in_place is None:
            floats[4] = math.inf  # marks "no in-place timing" (a time is never infinite: _unmeasured)
        self.ints.extend(ints)
        self.floats.extend(floats)

    def _name(self, name: str) -> int:
        if name not in self.names:
            self.names.append(name)
        return self.names.index(name)

    def __len__(self) -> int:
        return len(self.ints) // self.INTS

    def __getitem__(self, index: int) -> Row:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        i, f = self.ints[index * self.INTS : (index + 1) * self.INTS], self.floats[index * self.FLOATS : (index + 1) * self.FLOATS]
        timings = [Timing(f[k], f[k + 1], f[k + 2], None if i[5 + n] == NONE_INT else i[5 + n],
                          None if math.isnan(f[k + 3]) else f[k + 3]) for n, k in enumerate((0, 4))]
        return Row(i[0], i[1], self.names[i[3]], self.names[i[4]], i[2], timings[0], None if f[4] == math.inf else timings[1])

    def __iter__(self) -> Iterator[Row]:
        return (self[index] for index in range(len(self)))


@dataclass(slots=True)
class Device:
    rank: int
    pid: int | None
    host: str
    device: int
    bus_id: str
    name: str  # "" where the line ends at the bus id (rccl-tests since 2025)


@dataclass
class Command:
    """A command line in the log that runs a `*_perf` binary, as far as it says how it ran."""

    test: str  # the binary, e.g. all_gather_perf
    env: dict[str, str]  # recorded variables set on it: `NCCL_X=1 ./build/...`, mpirun -x, srun --export
    ranks: int | None  # processes x -g x -t where the launcher's count is on the line (no launcher: one process)
    gpus: list[int] | None  # devices a single process uses: -g N of CUDA_VISIBLE_DEVICES, or 0..N-1


@dataclass(frozen=True)
class HowItRan:
    """What the log does not say about its runs, as `import nccl-tests` is told it: the
    transport (--transport, for every run or the run at a line) and the environment (--env)."""

    transport: PerRun | str | None = None
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_options(cls, transports: list[str] | str | None, pairs: list[str]) -> HowItRan:
        """--transport and the --env pairs, checked; UserError names the bad one."""
        from wirewise.workloads import TRANSPORT_ENV

        transport = PerRun.parse("--transport", transports, lambda text: text if text in TRANSPORT_ENV else None,
                                 f"choose one of {', '.join(TRANSPORT_ENV)}")
        env: dict[str, str] = {}
        for pair in pairs:
            match = _ENV_PAIR.match(pair)
            if not match:
                raise UserError(f"--env {pair!r}: give KEY=VALUE, e.g. --env NCCL_ALGO=Ring")
            if not match.group(1).startswith(RECORDED_ENV_PREFIXES):
                raise UserError(f"--env {pair!r}: a run records only variables beginning {', '.join(RECORDED_ENV_PREFIXES)}")
            env[match.group(1)] = match.group(2)
        return cls(transport, env)

    def transport_of(self, section: Section, logged: dict[str, str]) -> str:
        """--transport for this run, else the transport the log shows the run's environment set, else default."""
        from wirewise.workloads import transport_set_by

        given = self.transport if isinstance(self.transport, str) or self.transport is None else self.transport.get(section.first_line)
        return given or transport_set_by(logged)

    def env_of(self, section: Section, file_name: str) -> tuple[str, dict[str, str]]:
        """The run's transport and recorded environment: its command line, its NCCL INFO lines,
        --env, the transport's settings."""
        from wirewise.workloads import transport_env

        logged = {**(section.command.env if section.command else {}), **section.env}
        for key, value in self.env.items():
            if logged.get(key, value) != value:
                raise UserError(f"--env {key}={value} but {file_name} says {key}={logged[key]} (line {section.first_line})")
        env = {**logged, **self.env}
        transport = self.transport_of(section, logged)
        try:
            return transport, dict(sorted(transport_env(transport, env).items()))
        except ValueError as exc:
            raise UserError(f"{file_name} (run at line {section.first_line}): {exc}") from None


class PerRun:
    """An option that sets a fact of a run: `VALUE` for every run, `LINE:VALUE` for the run at
    LINE (its first line, as the summary and the messages number runs); the two combine."""

    def __init__(self, option: str, every: Any = None, by_line: dict[int, Any] | None = None):
        self.option, self.every, self.by_line = option, every, by_line or {}

    @classmethod
    def parse(cls, option: str, values: list[str] | str | None, convert, expected: str) -> PerRun | None:
        if values is None:
            return None
        per_run = cls(option)
        for text in [values] if isinstance(values, str) else values:
            line, sep, value = str(text).rpartition(":")
            converted = convert(value.strip())
            if converted is None:
                raise UserError(f"{option} {text!r}: {expected}")
            if not sep:
                if per_run.every is not None and per_run.every != converted:
                    raise UserError(f"{option} given twice for every run ({per_run.every}, {converted}): name a run, {option} LINE:VALUE")
                per_run.every = converted
            elif line.strip().isdigit() and len(line.strip()) <= MAX_DIGITS and int(line) >= 1:
                per_run.by_line[int(line)] = converted
            else:
                raise UserError(f"{option} {text!r}: LINE:VALUE names the run starting at line LINE, e.g. {option} 40:{value.strip()}")
        return per_run

    def get(self, line: int) -> Any:
        return self.by_line.get(line, self.every)

    def check_used(self, runs: list[int], file_name: str) -> None:
        """A LINE that starts no run is a mistake (a typo would silently set nothing)."""
        for line in sorted(set(self.by_line) - set(runs)):
            starts = ", ".join(map(str, runs[:10])) + (" ..." if len(runs) > 10 else "")
            raise UserError(f"{self.option} {line}:{self.by_line[line]}: no run of {file_name} starts at line {line} (runs start at lines {starts})")


def _op_option(text: str) -> str | None:
    return text if text in KNOWN_OPS else None


def _ranks_option(text: str) -> int | None:
    return int(text) if text.isdigit() and len(text) <= MAX_DIGITS and 1 <= int(text) <= MOST_RANKS else None


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
        self.candidates.append((number, len(tokens), _row(tokens, self.old_error_column)))

    def read_rows(self) -> None:
        """Rows from the candidate lines: whole ones only (see the module's docstring)."""
        self.flush()
        expected = self._expected_columns()
        for number, length, row in self.candidates:
            if length != expected:
                self.skip(f"line {number}: {length} columns where the run prints {expected} (cut row?)")
            elif row is None:
                self.skip(f"line {number}: not a result row")
            elif (problem := _unmeasured(row)) is not None:
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


# -- reading the text ---------------------------------------------------------
def _pieces(lines: Iterable[tuple[int, str]]):
    """(line number, text) of every line with launcher tags stripped; a line where another
    rank's tagged output starts mid-line is split there, each piece keeping the line's number."""
    for number, raw in lines:
        line = raw.strip()
        while prefix := _TAG.match(line) or _LABEL.match(line):  # possibly stacked: a tag, then a label
            line = line[prefix.end() :].lstrip()
        for piece in _TAG.split(line):
            yield number, piece.strip()


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines of a text already in memory, numbered as wirewise.orchestrator.record.log_text numbers a file's."""
    for number, line in enumerate(text.split("\n"), start=1):
        for piece in line.replace("\ufeff", "").splitlines() or [""]:
            yield number, piece


def parse_log(text: str | Iterable[tuple[int, str]]) -> list[Section]:
    """Sections with rows or a failure, in file order (rows not whole are in each section's
    `skipped`; repeats are marked in `repeats`). `text` is the log, or its numbered lines
    (log_text.LogText.lines()): a section's rows are kept, nothing else of the text."""
    return list(_read_runs(numbered_lines(text) if isinstance(text, str) else text))


class _Reader:
    """The state of reading one log: the run being read, and a command line awaiting its run."""

    def __init__(self):
        self.section = Section()
        self.pending_command: Command | None = None  # a command line's binary, for the run that follows it
        self.command_text = ""  # a command line continued with `\`
        self.done: list[Section] = []

    def start(self, number: int) -> Section:
        self.finish()
        self.section = Section(first_line=number, command=self.pending_command)
        self.pending_command = None
        return self.section

    def finish(self) -> None:
        section = self.section
        if section.has_rows or section.failure:
            section.read_rows()
            self.done.append(section)

    def read(self, number: int, line: str) -> None:
        if not line:
            self.section.gap = self.section.gap or self.section.has_rows
            return
        section, content = self.section, True  # content: a line of the run itself, not prose around it
        if "NCCL" in line:
            section.wire.read(line)
        if match := _VERSION.match(line):
            section = self.start(number) if section.has_body or section.version else section
            section.version, section.tests_name = match["version"], match["tests"].lower()
            if match["library"] and section.tests_name == "rccl-tests":  # rccl-library is RCCL's NCCL_VERSION_CODE
                section.rccl_version = section.rccl_version or decode_nccl_version(int(match["library"]))
            elif match["library"]:
                section.nccl_version = decode_nccl_version(int(match["library"]))
        elif match := _STARTING.match(line):
            section = self.start(number) if section.has_body or section.test else section
            section.test = match.group(1)
        elif _SETTINGS.match(line):
            section = self.start(number) if section.has_body or section.settings else section
            section.settings = _shared_dict(_settings(line))
        elif _CONCLUDED.match(line):
            section.concluded = True
        elif match := _DEVICE.match(line):
            if section.has_rows or section.closed or section.header:
                section = self.start(number)
            section.add_device(Device(int(match["rank"]), int(match["pid"]) if match["pid"] else None, _shared(match["host"]),
                                      int(match["device"]), _shared(match["bus"]), _shared(match["name"] or "")))
        elif _HEADER.match(line):
            if section.has_rows or section.closed:
                section = self.start(number)
            elif section.header is not None and section.header != line.lstrip("#").split():
                section.interleaved = section.interleaved or "two column headers follow each other"
            section.header = _shared_list(line.lstrip("#").split())
        elif match := _AVERAGE.match(line):
            if section.average_busbw is not None:
                section.interleaved = section.interleaved or "it prints two 'Avg bus bandwidth' lines"
            section.average_busbw = _float_or_none(match.group(1))
        elif match := _BOUNDS.match(line):
            section.bounds = (int(match.group(1)), match.group(2) == "OK")
        elif match := _FAILURE.search(line):
            section = self.start(number) if section.closed else section
            _read_failure(section, number, line, match)
        elif _FAILURE_TRACE.match(line):
            return  # the failure's call stack, after its first line
        elif match := _ENV_LINE.search(line):
            section.env[match.group(1)] = match.group(2)
            content = False
        elif match := _RCCL_LINE.search(line):
            section.rccl_version = section.rccl_version or _clean(match.group(1))
            content = False
        elif line.startswith("#"):
            content = False
            note = line.lstrip("# ").strip()
            if note and section.has_preamble and not section.has_rows and not line.startswith("##") \
                    and note.split()[0] not in _BOILERPLATE:
                section.notes.append(note)
        elif _looks_like_row(tokens := line.split()):
            if section.closed or (section.gap and section.has_rows and int(tokens[0]) <= (section.last_size or 0)):
                section = self.start(number)  # a sweep that starts again after a gap: another run's excerpt
            section.add_candidate(number, tokens)
            section.gap = False
        elif _is_continuation(tokens) and _joins(section, tokens):
            section.pending[1].extend(tokens)
        else:
            content = False
            self._prose(line, section)
        if content and not section.first_line:
            section.first_line = number

    def _prose(self, line: str, section: Section) -> None:
        """A line that is not the run's own: maybe a command line that ran the next run."""
        if "NCCL " not in line:
            section.gap = section.gap or section.has_rows
        if (match := VERSION_LINE.search(line)) and section.nccl_version is None:
            section.nccl_version = match.group(1)
        if line.endswith("\\"):  # a command continued on the next line
            if len(self.command_text) < MAX_COMMAND_CHARS:
                self.command_text += line[:-1] + " "
            return
        text, self.command_text = self.command_text + line, ""
        command = _command(text)
        if command is None:
            if _PROMPT.match(text):
                self.pending_command = None  # another command ran in between: the last one is not the next run's
            return
        if section.has_body:
            self.pending_command = command
        else:
            section.command = command


def _read_runs(lines: Iterable[tuple[int, str]]) -> list[Section]:
    reader = _Reader()
    for number, line in _pieces(lines):
        reader.read(number, line)
    reader.finish()
    _mark_repeats(reader.done)
    return reader.done


def _read_failure(section: Section, number: int, line: str, match: re.Match) -> None:
    """The run's first failure line; what precedes the host on that line is a cut row."""
    if section.failure is None:
        why = match["why"].strip().removesuffix("/").strip()  # nccl-tests prints 'REASON / LAST ERROR'
        section.failure = _clean(f"{match.group(0)[: match.start('why') - match.start()]}{why}'")
        section.failure_line = number
    before = line[: match.start()].split()
    if before and _looks_like_row(before):
        section.skip(f"line {number}: a row cut by the failure ({' '.join(before)})")


def _mark_repeats(sections: list[Section]) -> None:
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


def _clean(text: str) -> str:
    return _CONTROL.sub("", text)


_SHARED: dict[Any, Any] = {}  # one header list and one settings dict for every run that prints the same


def _shared_list(words: list[str]) -> list[str]:
    if len(_SHARED) > 10_000:
        _SHARED.clear()
    return _SHARED.setdefault(tuple(words), words)


def _shared_dict(found: dict[str, int]) -> dict[str, int]:
    if len(_SHARED) > 10_000:
        _SHARED.clear()
    return _SHARED.setdefault(frozenset(found.items()), found)


def _shared(text: str) -> str:
    """Cleaned, and one string object per host, bus id and GPU name however many runs repeat it."""
    return sys.intern(_clean(text))


def _looks_like_row(tokens: list[str]) -> bool:
    """A line that starts like a result row (size, count, type): whole or not, it is one.
    Integers of more than MAX_DIGITS digits are no row's (and past Python's int() limit)."""
    return (len(tokens) >= 2 and tokens[0].isdigit() and tokens[1].isdigit() and len(tokens[0]) <= MAX_DIGITS
            and len(tokens[1]) <= MAX_DIGITS and (len(tokens) == 2 or not _is_number(tokens[2])))


def _is_continuation(tokens: list[str]) -> bool:
    """Figures only: the rest of a row cut by another rank's output or by a launcher that
    tagged each piece it forwarded (a 16 GiB row's time is an integer: 90115)."""
    return bool(tokens) and all(_is_number(t) or t == "N/A" for t in tokens)


def _joins(section: Section, tokens: list[str]) -> bool:
    """Whether `tokens` can complete the section's last row: it is short of the header's columns."""
    if section.pending is None or section.header is None:
        return False
    last = section.pending[1]
    return len(last) < len(section.header) and len(last) + len(tokens) <= len(section.header)


def _command(line: str) -> Command | None:
    """The command line that runs one `*_perf` binary (`NCCL_P2P_DISABLE=1 ./build/sendrecv_perf
    -b 8 ...`, `mpirun -np 16 -x NCCL_ALGO=Ring .../all_reduce_perf -g 1`), or None."""
    if "NCCL INFO" in line or "NCCL WARN" in line:
        return None
    names = set(_BINARY.findall(line))
    if len(names) != 1:
        return None
    name = names.pop()
    words = line.split()
    at = next((i for i, w in enumerate(words) if re.search(rf"(?:^|[/=]){re.escape(name)}_perf(?:_mpi)?$", w)), None)
    if at is None:
        return Command(f"{name}_perf", {}, None, None)
    before, after = words[:at], words[at + 1 :]
    env: dict[str, str] = {}
    for word in before:
        for item in word.removeprefix("--export=").split(",") if word.startswith("--export=") else [word]:
            if (match := _ENV_PAIR.match(item.strip("'\""))) and match.group(1).startswith(RECORDED_ENV_PREFIXES):
                env[match.group(1)] = match.group(2).strip("'\"")
    per_process = _option_int(after, ("-g", "--ngpus"), 1) * _option_int(after, ("-t", "--nthreads"), 1)
    if any(w.rsplit("/", 1)[-1] in LAUNCHERS for w in before):
        processes = _option_int(before, ("-np", "-n", "--np", "--ntasks"), None)
        ranks = processes * per_process if processes else None
        return Command(f"{name}_perf", env, ranks if ranks and ranks <= MOST_RANKS else None, None)
    if per_process > MOST_RANKS:
        return Command(f"{name}_perf", env, None, None)
    return Command(f"{name}_perf", env, per_process, visible_indices(env, per_process))


def _option_int(words: list[str], names: tuple[str, ...], default: int | None) -> int | None:
    """The integer value of an option (`-g 4`, `-g4`, `--ngpus=4`) among `words`, else `default`."""
    for index, word in enumerate(words):
        for name in names:
            value = None
            if word == name and index + 1 < len(words):
                value = words[index + 1]
            elif word.startswith(name + "=") or (len(name) == 2 and word.startswith(name) and word[2:].isdigit()):
                value = word[len(name) :].lstrip("=")
            if value is not None and value.isdigit() and len(value) <= MAX_DIGITS and 0 < int(value) <= MOST_RANKS:
                return int(value)
    return default


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _float_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _settings(line: str) -> dict[str, int]:
    found = {}
    for key, pattern in _SETTING_FIELDS.items():
        if (match := re.search(pattern, line)) and len(match.group(1)) <= MAX_DIGITS:
            found[key] = int(match.group(1))
    return found


_NAMES: dict[str, str] = {}  # one string object per type and redop name: millions of rows share a few


def _row(tokens: list[str], old_error_column: bool = False) -> Row | None:
    """A result row from a line's tokens, or None when they do not parse as one."""
    if len(tokens) < 7:
        return None
    size, count, type_ = int(tokens[0]), int(tokens[1]), tokens[2]
    rest = tokens[3:]
    # Columns between type and the timings: redop and root in current logs; older ones print
    # only one of them (broadcast: root; all_reduce: redop) or neither (all_gather, sendrecv).
    groups = 2 if len(rest) >= 8 else 1  # out of place, then in place (very old logs: one)
    label_count = len(rest) - 4 * groups
    if not 0 <= label_count <= 2:
        return None
    labels, timings = rest[:label_count], rest[label_count:]
    redop, root = "none", -1
    for label in labels:
        if _is_int(label):
            root = int(label)
        else:
            redop = label
    try:
        parsed = [_timing(timings[i : i + 4], old_error_column) for i in range(0, 4 * groups, 4)]
    except ValueError:
        return None
    type_, redop = _NAMES.setdefault(type_, type_), _NAMES.setdefault(redop, redop)
    if len(_NAMES) > 10_000:
        _NAMES.clear()
    return Row(size, count, type_, redop, root, parsed[0], parsed[1] if groups == 2 else None)


def _unmeasured(row: Row) -> str | None:
    """Why a parsed row is not a measurement (NaN, Inf or negative figures), or None."""
    for timing in (row.out_of_place, row.in_place):
        if timing is None:
            continue
        for name in ("time_us", "algbw_gbs", "busbw_gbs"):
            problem = figure_problem(name, getattr(timing, name))
            if problem:
                return problem
    wrong = [t.wrong for t in (row.out_of_place, row.in_place) if t and t.wrong is not None]
    if any(not NONE_INT < w < 2**63 for w in wrong):
        return "a #wrong count past 2^63"
    return figure_problem("size", row.size) or figure_problem("count", row.count)


def _timing(fields: list[str], old_error_column: bool) -> Timing:
    time_us, algbw, busbw, last = fields
    timing = Timing(float(time_us), float(algbw), float(busbw), None)
    if last == "N/A":
        return timing
    value = float(last)  # anything else is not a result row
    if _is_int(last) and not old_error_column:
        timing.wrong = int(last)
    elif old_error_column or not value.is_integer() or ("e" in last.lower() and "." not in last):
        timing.error = value  # the old format's largest error (%5.0le): 2e-07, 1e+00
    else:
        timing.wrong = int(value)  # #wrong as %6g prints a large count: 1.04858e+06
    return timing


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit() and len(text) <= MAX_DIGITS


# -- which op -----------------------------------------------------------------
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


# -- ranks, hosts, validation ---------------------------------------------------
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
    from_command = _command_ranks(section)
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


def _command_ranks(section: Section) -> int | None:
    """The ranks the run's command line starts, where the settings line (per process) agrees."""
    command = section.command
    if command is None or command.ranks is None:
        return None
    per_process = section.settings.get("ngpus", 1) * section.settings.get("nthread", 1)
    if command.gpus is not None and section.settings and per_process != command.ranks:
        return None  # one process, but the settings line says otherwise: the command is another run's
    return command.ranks


def _hosts(section: Section) -> list[str]:
    """The hosts of the rank lines, in rank order."""
    return list(dict.fromkeys(d.host for d in sorted(section.devices, key=lambda d: d.rank)))


def _rank0_host(section: Section) -> str | None:
    return next((d.host for d in section.devices if d.rank == 0), None)


def validation_failure(section: Section, ranks: Ranks) -> str | None:
    """Why the run's validation failed (None: it did not), the old float error column judged
    as nccl-tests judged it (see wrong_count)."""
    reasons: list[str] = []
    more = 0
    if section.bounds and not section.bounds[1]:
        reasons.append(f"nccl-tests printed 'Out of bounds values : {section.bounds[0]} FAILED'")
    for row in section.rows:
        for in_place, timing in ((False, row.out_of_place), (True, row.in_place)):
            if timing is None or not wrong_count(row, timing, ranks):
                continue
            if len(reasons) >= 3:
                more += 1
                continue
            form = "in place" if in_place else "out of place"
            if timing.wrong:
                reasons.append(f"{timing.wrong} wrong elements at {row.size} B {form}")
            else:
                limit = _tolerance(row.type, ranks.count)
                reasons.append(f"error {timing.error:g} at {row.size} B {form} exceeds {row.type}'s tolerance {limit:.3g}")
    if not reasons:
        return None
    return "validation failed: " + "; ".join(reasons + ([f"{more} more"] if more else []))


def wrong_count(row: Row, timing: Timing, ranks: Ranks) -> int | None:
    """The count nccl-tests printed; for the old float error column 0 within the tolerance and
    1 (at least one element) beyond it; None where it printed N/A or the tolerance is unknown."""
    if timing.wrong is not None or timing.error is None:
        return timing.wrong
    limit = _tolerance(row.type, ranks.count)
    return None if limit is None else int(timing.error > limit)


def _tolerance(type_: str, ranks: int | None) -> float | None:
    """DeltaMaxValue(type) x (ranks - 1), nccl-tests' limit on the old error column; None
    where the rank count is unknown (the limit grows with it)."""
    if ranks is None:
        return None if type_ in ERROR_TOLERANCE else INTEGER_TOLERANCE
    return ERROR_TOLERANCE.get(type_, INTEGER_TOLERANCE) * max(ranks - 1, 1)


# -- records ----------------------------------------------------------------
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
                    record_id=_record_id(self.run_id, row, seen_sizes[row.size], in_place),
                    bytes=row.size, count=row.count, dtype=_recorded_dtype(row.type), in_place=in_place,
                    time_us=timing.time_us, algbw_gbs=timing.algbw_gbs, busbw_gbs=timing.busbw_gbs,
                    wrong=wrong_count(row, timing, self.ranks), extra=extra,
                )


@dataclass
class Given:
    """What `import nccl-tests` is told of the runs (each option for every run, or per run)."""

    op: PerRun | None = None
    ranks: PerRun | None = None
    node: str | None = None
    how: HowItRan = HowItRan()

    @classmethod
    def from_options(cls, op: list[str] | str | None = None, ranks: list[str] | str | int | None = None,
                     node: str | None = None, how: HowItRan = HowItRan()) -> Given:
        """--op and --ranks (`VALUE` or `LINE:VALUE`, repeatable), checked; UserError names the bad one."""
        ops = PerRun.parse("--op", op, _op_option, f"not a collective nccl-tests measures; choose one of {', '.join(sorted(KNOWN_OPS))}")
        counts = PerRun.parse("--ranks", [str(ranks)] if isinstance(ranks, int) else ranks, _ranks_option,
                              f"give the run's rank count, 1 to {MOST_RANKS:,}")
        return cls(ops, counts, node, how)

    def check_lines(self, sections: list[Section], file_name: str) -> None:
        runs = [s.first_line for s in sections]
        for option in (self.op, self.ranks, self.how.transport):
            if isinstance(option, PerRun):
                option.check_used(runs, file_name)


def log_records(text: str, file_name: str, *, op: str | None = None, node: str | None = None,
                topology: Topology | None = None, logged_at: datetime | None = None,
                how: HowItRan = HowItRan(), ranks: int | None = None) -> list[ResultRecord]:
    """Every stored row of the log as records (two per size: out of place and in place), and
    one record per failed run. `node` defaults to each run's rank 0 host; `topology` gives the
    rows their fingerprint and fabric; `how` the transport and environment it ran with."""
    given = Given.from_options(op, ranks, node, how)
    results = _read_sections(parse_log(text), file_name, given, topology, logged_at)
    return [record for result in results for record in result.records()]


def _read_sections(sections: list[Section], file_name: str, given: Given, topology: Topology | None,
                   logged_at: datetime | None) -> list[SectionResult]:
    if not sections:
        raise UserError(f"{file_name}: no nccl-tests result rows found (is this the stdout of an *_perf run?)")
    given.check_lines(sections, file_name)
    when = logged_at or datetime.now(timezone.utc)
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
    node = given.node or _rank0_host(section)
    transport, env = given.how.env_of(section, file_name)
    ran = dict(run_id=_run_identity(section, op), topology=topology, index=index, file_name=file_name, when=when,
               transport=transport, env=env)
    if section.failure and not section.rows:
        error = f"line {section.failure_line}: {section.failure}"
        return SectionResult(section, op, ranks, node, "failed", error, **ran)
    error = validation_failure(section, ranks)
    if section.failure:
        error = "; ".join(filter(None, [f"line {section.failure_line}: {section.failure}", error]))
    return SectionResult(section, op, ranks, node, "failed" if error else "ok", error, **ran)


def _run_identity(section: Section, op: str) -> str:
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


def _record_id(run_id: str, row: Row, occurrence: int, in_place: bool) -> str:
    """The run's identity plus the row's own values (and which time that size came up: runs
    with -N repeat the sweep), so a record is known by what it measured."""
    timing = row.in_place if in_place else row.out_of_place
    values = [row.size, row.count, row.type, row.redop, row.root, occurrence, in_place,
              timing.time_us, timing.algbw_gbs, timing.busbw_gbs, timing.wrong]
    digest = hashlib.sha256(f"{run_id}:{json.dumps(values)}".encode()).hexdigest()
    return f"nccl-tests:{digest[:32]}"


def _section_fields(
    section: Section, index: int, op: str, file_name: str, node: str | None, run_id: str, when: datetime, ranks: Ranks,
) -> dict:
    hosts = _hosts(section)
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
        gpus=_gpus(section, node),
        gpu_count=ranks.count,
        world_size=ranks.count,
        started_at=when,
        ended_at=when,
        versions={k: v for k, v in versions.items() if v},
        transport_carried=section.wire.carried,
    )


def _gpus(section: Section, node: str | None) -> list[int]:
    """The GPU indices the run used on `node`: its rank lines' devices, read through the
    CUDA_VISIBLE_DEVICES of its command line where it set one (device 0 of `CUDA_VISIBLE_DEVICES=2,3`
    is GPU 2); without rank lines, those of a single-process command (`-g 2`)."""
    command = section.command
    on_node = sorted({d.device for d in section.devices if d.host == node})
    if section.devices:
        mapping = visible_indices(command.env, on_node[-1] + 1) if command and on_node else None
        return sorted(mapping[d] for d in on_node) if mapping else on_node
    return sorted(command.gpus) if command and command.gpus is not None and _command_ranks(section) else []


def _recorded_dtype(printed: str) -> str:
    """The dtype a row records: torch's name for nccl-tests' (`float` -> float32), else as printed."""
    element = NCCL_TESTS_TYPES.get(printed)
    return element.name if element else printed


def _extra(section: Section, ranks: Ranks) -> dict[str, Any]:
    hosts = _hosts(section)
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


# -- importing a log file ---------------------------------------------------
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
        from wirewise.orchestrator.store.results import stored_figures

        excerpt = [r for r in self.results if r.record_count and not (r.section.devices or r.section.has_preamble)]
        known: set[tuple] = set()
        if excerpt:
            sizes = {row.size for r in excerpt for row in r.section.rows}
            known = stored_figures(store, "nccl-tests", {r.op for r in excerpt}, sizes)

        def records() -> Iterator[ResultRecord]:
            for record in self.iter_records():
                if not (known and record.extra.get("identified_by") == "figures" and _figures(record) in known):
                    yield record

        return store_measurement(store, records, self.topology, self.node)

    def summary(self, new: int) -> dict[str, Any]:
        """What was imported, one entry per run: op, status, rows, ranks, hosts, peak busbw."""
        return {
            "file": str(self.file),
            "node": self.node,
            "rows": self.record_count,  # results rows: two per size (out of place, in place), one per failed run
            "new": new,
            "fingerprint": self.topology.fingerprint if self.topology else None,
            "fabric": self.topology.fabric if self.topology else None,
            "sections": [_section_summary(result) for result in self.results if result.record_count],
            "failed": [_section_summary(result) for result in self.results if result.status == "failed"],
            "skipped": self.skipped,
        }


def _figures(record: ResultRecord) -> tuple:
    return (record.op, record.bytes, record.count, record.dtype, record.in_place,
            record.time_us, record.algbw_gbs, record.busbw_gbs)


def read_log_file(path: Path, *, op: list[str] | str | None = None, node: str | None = None,
                  topology_file: Path | None = None, how: HowItRan = HowItRan(),
                  ranks: list[str] | str | int | None = None) -> LogImport:
    """Read and check an nccl-tests log (and the topology it ran on), a line at a time: what is
    kept is each run's rows and facts, never the text; UserError for anything wrong."""
    from wirewise.orchestrator.record.log_text import LogText

    given = Given.from_options(op, ranks, node, how)
    text = LogText(path, MAX_LOG_BYTES)
    if not path.exists():
        raise UserError(f"{str(path)!r}: no such file")
    try:
        sections = parse_log(text.lines())
    except OSError as exc:
        raise UserError(f"{str(path)!r}: cannot read it ({exc.strerror})") from None
    topology = None
    if topology_file is not None:
        node = node or next((_rank0_host(s) for s in sections if _rank0_host(s)), None)
        if node is None:
            raise UserError("the log names no host: give --node with --topology-file, so the wiring is stored for a node")
        from wirewise.topology import read_topology

        topology = read_topology(topology_file)
    logged_at = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    given.node = node
    results = _read_sections(sections, path.name, given, topology, logged_at)
    imported = LogImport(path, node or next((r.node for r in results if r.node), None), topology, results)
    _check_gpus_fit(results, topology, topology_file)
    imported.skipped = [f"{path.name} line {line}: longer than {MAX_LINE_CHARS:,} characters, not a log line"
                        for line in text.long_lines[:MAX_SKIPPED_SHOWN]]
    for section in sections:
        imported.skipped += [f"{path.name} {why}" for why in section.skipped]
        if section.skipped_more:
            imported.skipped.append(f"{path.name}: {section.skipped_more} more rows of the run at line {section.first_line}")
    imported.skipped += [f"{path.name}: {r.not_stored}" for r in results if r.not_stored]
    return imported


def _check_gpus_fit(results: list[SectionResult], topology: Topology | None, topology_file: Path | None) -> None:
    """A log that used GPU 7 cannot have run on a node whose topology has 4 GPUs."""
    if topology is None:
        return
    highest = max((g for r in results if r.op for g in _gpus(r.section, r.node)), default=-1)
    if highest >= topology.gpus:
        raise UserError(f"the log uses GPU {highest} but {topology_file} describes {topology.gpus} GPU(s): wrong --topology-file?")


def _section_summary(result: SectionResult) -> dict[str, Any]:
    section = result.section
    rows = [row for row in section.rows if row.size]
    timings = [(t.busbw_gbs, row.size) for row in rows for t in (row.out_of_place, row.in_place) if t]
    peak = max(timings, key=lambda pair: pair[0]) if timings else None
    base = result.base
    params = base.get("params", {})
    return {
        "op": result.op,
        "line": section.first_line,
        "status": result.status,
        "error": result.error,
        "rows": len(timings),
        "sizes": len(rows),  # log rows stored
        "zero_size_rows": section.zero_size_rows,
        "ranks": result.ranks.count,
        "ranks_exact": result.ranks.exact,
        "ranks_from": result.ranks.source,
        "node": result.node,
        "hosts": _hosts(section),
        "gpus": base.get("gpus", []),
        "nccl_tests": section.version,
        "versions": base.get("versions", {}),
        "peak_busbw_gbs": peak[0] if peak else None,
        "peak_bytes": peak[1] if peak else None,
        "largest_bytes": max((row.size for row in rows), default=None),
        "avg_busbw_gbs": section.average_busbw,
        "transport": params.get("transport"),
        "cuda_graph": params.get("cuda_graph"),
        "env": base.get("env", {}),
    }
