"""Read nccl-tests logs (NVIDIA/nccl-tests `*_perf` stdout) into result records, as people
keep them: every format since 2.0, several runs in one file, pasted from a terminal or a README.

What a run prints (src/common.cu), old format or new:
- optional `# nccl-tests version X nccl-headers=C nccl-library=C` and
  `# Collective test starting: all_reduce_perf` (before 2.17 neither);
- `# nThread 1 nGpus 1 minBytes ... iters: 20 ...`: the settings;
- `#  Rank  0 Group  0 Pid 123 on HOST device  0 [BUS] NAME` (before 2.6 without Group, 2.0
  without Pid): one line per rank, the hosts, GPU indices and models;
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
lines, rows and footer, so the rank lines of a failed run never join the next one. A section
that failed is stored as one failed record (as wirewise stores a failed native run) and named
in the summary. A section with no preamble of its own whose rows all repeat an earlier
section's (a README quoting an excerpt of the log it showed above) is not stored twice.

Pasted text. Lines are read as tokens, so indentation, Markdown fences, `$ mpirun ...`
commands, `...` elisions, ssh warnings, NCCL INFO lines anywhere (also between the header and
the rows), shell traces and prose around the table do not matter. `mpirun --tag-output`
prefixes (`[1,0]<stdout>:`) and `srun --label` prefixes (`0: `) are stripped; where the
outputs of two ranks interleave mid-line, the line is split at the tag, and a row cut that way
is joined with its continuation when the pieces make a whole row, else skipped with a warning
naming its line. Markdown that ate a leading `#` (rank and settings lines) is read the same.

Which op: the log's own `Collective test starting` line; else --op; else a command line in the
log that names one binary (`./build/sendrecv_perf -b 8 ...`, `Running: ... all_gather_perf`);
else what the rows can only be (see `_op_from_rows`); else the file name. Every op is checked
against the redop column (sendrecv prints the redop it was given, `sum`, in every version).

Ranks. Rank lines give them: indices 0..k-1 all shown are exactly k ranks; an excerpt that
shows only `Rank 1439` means at least 1440 (stored as 1440, marked `ranks_exact: false`). The
chunked ops print size = ranks x count x element size (all_gather, reduce_scatter, alltoall,
gather, scatter: their GetCollByteCount), which gives the count where no rank line does;
`--ranks N` says it for the rest. Without any of these the rank count is unknown, stored as
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
pids, devices and bus ids, settings, version, test) and the row's own values. The same log with
other whitespace, a truncated copy, or the log inside a longer file give the same ids.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wirewise.case import REDUCING_OPS
from wirewise.errors import UserError
from wirewise.limits import MAX_LOG_BYTES, read_bounded
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
# nccl-tests type names -> torch's (the names wirewise records) and bytes per element.
DTYPES = {
    "float": "float32", "half": "float16", "double": "float64", "bfloat16": "bfloat16",
    "int8": "int8", "uint8": "uint8", "int32": "int32", "uint32": "uint32", "int64": "int64",
    "uint64": "uint64", "char": "int8", "int": "int32", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2",
}
ELEMENT_BYTES = {
    "float": 4, "half": 2, "double": 8, "bfloat16": 2, "int8": 1, "uint8": 1, "int32": 4, "uint32": 4,
    "int64": 8, "uint64": 8, "char": 1, "int": 4, "f8e4m3": 1, "f8e5m2": 1,
}
# DeltaMaxValue(type) of nccl-tests' src/common.cu (until 2.13, when #wrong replaced the float
# error column): a row failed when its error exceeded this times (ranks - 1); integers: any error.
ERROR_TOLERANCE = {"half": 1e-2, "bfloat16": 1e-2, "float": 1e-5, "double": 1e-12}
INTEGER_TOLERANCE = 1e-200

_TAG = re.compile(r"\[\d+,\d+\]<std(?:out|err)>:")  # mpirun --tag-output
_LABEL = re.compile(r"^\d+:\s")  # srun --label
_VERSION = re.compile(r"^#\s*nccl-tests version\s+(\S+)(?:.*?nccl-library=(\d+))?")
_STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_CONCLUDED = re.compile(r"^#\s*Collective test concluded")
_SETTINGS = re.compile(r"^#?\s*nThread\s+\d+\s+nGpus\s+\d+")
_DEVICE = re.compile(
    r"^#?\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+(?P<pid>\d+)\s+)?on\s+(?P<host>\S+)\s+"
    r"device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s+(?P<name>.+?)\s*$"
)
_HEADER = re.compile(r"^#?\s*size\s+count\s+type\b")
_AVERAGE = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_BOUNDS = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)")
# The host is at most 255 characters (a DNS name's bound): unbounded, the search backtracked
# over every start of a long line without spaces, quadratic in its length (a 100 KB line: minutes).
_FAILURE = re.compile(r"(?:(?P<host>[^\s:]{1,255}):\s+)?Test (?:NCCL |CUDA )?failure (?P<where>\S+) '(?P<why>[^']*)")
_FAILURE_TRACE = re.compile(r"^\.\.\s+\S+\s+pid\s+\d+:\s+Test failure")
_NCCL_LINE = re.compile(r"\bNCCL version (\d+\.\d+\.\d+)")
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
MOST_RANKS = 10**7  # --ranks bound: far beyond any machine, small enough to stay an integer everywhere


@dataclass
class Timing:
    time_us: float
    algbw_gbs: float
    busbw_gbs: float
    wrong: int | None  # #wrong; None where the log says N/A (run without -c) or prints the old float error
    error: float | None = None  # the old format's largest error (before 2.13)


@dataclass
class Row:
    size: int
    count: int
    type: str
    redop: str
    root: int
    out_of_place: Timing
    in_place: Timing | None


@dataclass
class Device:
    rank: int
    pid: int | None
    host: str
    device: int
    bus_id: str
    name: str


@dataclass(frozen=True)
class HowItRan:
    """What the log does not say about its run, as `import nccl-tests` is told it: the
    transport (--transport) and the environment (--env KEY=VALUE)."""

    transport: str = "default"
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_options(cls, transport: str, pairs: list[str]) -> HowItRan:
        """--transport and the --env pairs, checked; UserError names the bad one."""
        from wirewise.workloads import TRANSPORT_ENV

        if transport not in TRANSPORT_ENV:
            raise UserError(f"--transport {transport!r}: choose one of {', '.join(TRANSPORT_ENV)}")
        env: dict[str, str] = {}
        for pair in pairs:
            match = _ENV_PAIR.match(pair)
            if not match:
                raise UserError(f"--env {pair!r}: give KEY=VALUE, e.g. --env NCCL_ALGO=Ring")
            if not match.group(1).startswith(RECORDED_ENV_PREFIXES):
                raise UserError(f"--env {pair!r}: a run records only variables beginning {', '.join(RECORDED_ENV_PREFIXES)}")
            env[match.group(1)] = match.group(2)
        return cls(transport, env)

    def env_of(self, section: Section, file_name: str) -> dict[str, str]:
        """The section's recorded environment: the log's own lines, --env, the transport's settings."""
        from wirewise.workloads import transport_env

        for key, value in self.env.items():
            if section.env.get(key, value) != value:
                raise UserError(f"--env {key}={value} but {file_name} says {key}={section.env[key]} (NCCL INFO line)")
        try:
            return dict(sorted(transport_env(self.transport, {**section.env, **self.env}).items()))
        except ValueError as exc:
            raise UserError(f"{file_name}: {exc}") from None


@dataclass
class Section:
    """One `*_perf` run inside the log."""

    first_line: int = 0
    test: str | None = None  # e.g. all_reduce_perf, from `Collective test starting`
    command_test: str | None = None  # the binary a command line in the log names
    version: str | None = None
    nccl_version: str | None = None
    settings: dict[str, int] = field(default_factory=dict)
    devices: list[Device] = field(default_factory=list)
    header: list[str] | None = None  # column names
    candidates: list[tuple[int, list[str]]] = field(default_factory=list)  # (line number, tokens)
    rows: list[Row] = field(default_factory=list)
    row_lines: list[int] = field(default_factory=list)
    average_busbw: float | None = None
    bounds: tuple[int, bool] | None = None  # Out of bounds values: (count, ok)
    failure: str | None = None  # the first `Test ... failure` line, cleaned
    failure_line: int | None = None
    concluded: bool = False
    notes: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # NCCL INFO "set by environment" lines
    skipped: list[str] = field(default_factory=list)  # why rows were not stored, by line
    repeats: int | None = None  # first line of the earlier section whose rows this one quotes

    @property
    def has_preamble(self) -> bool:
        return bool(self.version or self.test or self.settings)

    @property
    def has_body(self) -> bool:
        return bool(self.devices or self.header or self.candidates or self.closed)

    @property
    def closed(self) -> bool:
        """Past its rows: a footer, a failure or the concluding line was seen."""
        return bool(self.average_busbw is not None or self.bounds or self.failure or self.concluded)

    @property
    def zero_size_rows(self) -> int:
        return sum(row.size == 0 for row in self.rows)

    def read_rows(self) -> None:
        """Rows from the candidate lines: whole ones only (see the module's docstring)."""
        expected = self._expected_columns()
        for number, tokens in self.candidates:
            if len(tokens) != expected:
                self.skipped.append(f"line {number}: {len(tokens)} columns where the run prints {expected} (cut row?)")
            elif (row := _row(tokens, self.old_error_column)) is None:
                self.skipped.append(f"line {number}: not a result row")
            elif (problem := _unmeasured(row)) is not None:
                self.skipped.append(f"line {number}: {problem}")
            else:
                self.rows.append(row)
                self.row_lines.append(number)

    @property
    def old_error_column(self) -> bool:
        """The header names `error` (before 2.13: the largest deviation, a float), not `#wrong`."""
        return bool(self.header) and "error" in self.header and "#wrong" not in self.header

    def _expected_columns(self) -> int:
        """The header's column count; one fewer where every row leaves the redop column blank
        (alltoall before 2.13 printed an empty redop under the header's `redop`)."""
        lengths = Counter(len(tokens) for _, tokens in self.candidates)
        common = lengths.most_common(1)[0][0]
        if self.header is None:
            return common
        named = len(self.header)
        if lengths[named] == 0 and common == named - 1 and "redop" in self.header:
            return common
        return named


# -- reading the text ---------------------------------------------------------
def _pieces(text: str):
    """(line number, text) of every line with launcher tags stripped; a line where another
    rank's tagged output starts mid-line is split there, each piece keeping the line's number."""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        while prefix := _TAG.match(line) or _LABEL.match(line):  # possibly stacked: a tag, then a label
            line = line[prefix.end() :].lstrip()
        for piece in _TAG.split(line):
            yield number, piece.strip()


def parse_log(text: str) -> list[Section]:
    """Sections with rows or a failure, in file order (rows not whole are in each section's
    `skipped`; quoted repeats are marked in `repeats`)."""
    sections = [Section()]
    pending_test: str | None = None  # a command line's binary, for the run that follows it

    def start(number: int) -> Section:
        nonlocal pending_test
        sections.append(Section(first_line=number, command_test=pending_test))
        pending_test = None
        return sections[-1]

    for number, line in _pieces(text):
        if not line:
            continue
        section, content = sections[-1], True  # content: a line of the run itself, not prose around it
        if match := _VERSION.match(line):
            section = start(number) if section.has_body or section.version else section
            section.version = match.group(1)
            if match.group(2):
                section.nccl_version = decode_nccl_version(int(match.group(2)))
        elif match := _STARTING.match(line):
            section = start(number) if section.has_body or section.test else section
            section.test = match.group(1)
        elif _SETTINGS.match(line):
            section = start(number) if section.has_body or section.settings else section
            section.settings = _settings(line)
        elif _CONCLUDED.match(line):
            section.concluded = True
        elif match := _DEVICE.match(line):
            if section.candidates or section.closed or section.header:
                section = start(number)
            section.devices.append(
                Device(int(match["rank"]), int(match["pid"]) if match["pid"] else None, _clean(match["host"]),
                       int(match["device"]), _clean(match["bus"]), _clean(match["name"]))
            )
        elif _HEADER.match(line):
            if section.candidates or section.closed:
                section = start(number)
            section.header = line.lstrip("#").split()
        elif match := _AVERAGE.match(line):
            section.average_busbw = _float_or_none(match.group(1))
        elif match := _BOUNDS.match(line):
            section.bounds = (int(match.group(1)), match.group(2) == "OK")
        elif match := _FAILURE.search(line):
            section = start(number) if section.closed else section
            _read_failure(section, number, line, match)
        elif _FAILURE_TRACE.match(line):
            continue  # the failure's call stack, after its first line
        elif match := _ENV_LINE.search(line):
            section.env[match.group(1)] = match.group(2)
            content = False
        elif line.startswith("#"):
            content = False
            note = line.lstrip("# ").strip()
            if note and section.has_preamble and not section.candidates and not line.startswith("##") \
                    and note.split()[0] not in _BOILERPLATE:
                section.notes.append(note)
        elif _looks_like_row(tokens := line.split()):
            if section.closed:
                section = start(number)
            section.candidates.append((number, tokens))
        elif _is_continuation(tokens) and _joins(section, tokens):
            section.candidates[-1][1].extend(tokens)
        else:
            content = False
            if (match := _NCCL_LINE.search(line)) and section.nccl_version is None:
                section.nccl_version = match.group(1)
            if (test := _binary_named(line)) is not None:
                if section.has_body:
                    pending_test = test
                else:
                    section.command_test = test
        if content and not section.first_line:
            section.first_line = number
    found = [s for s in sections if s.candidates or s.failure]
    for section in found:
        if section.candidates:
            section.read_rows()
    _mark_repeats(found)
    return found


def _read_failure(section: Section, number: int, line: str, match: re.Match) -> None:
    """The run's first failure line; what precedes the host on that line is a cut row."""
    if section.failure is None:
        why = match["why"].strip().removesuffix("/").strip()  # nccl-tests prints 'REASON / LAST ERROR'
        section.failure = _clean(f"{match.group(0)[: match.start('why') - match.start()]}{why}'")
        section.failure_line = number
    before = line[: match.start()].split()
    if before and _looks_like_row(before):
        section.skipped.append(f"line {number}: a row cut by the failure ({' '.join(before)})")


def _mark_repeats(sections: list[Section]) -> None:
    """A section with no preamble or rank lines of its own whose rows all appear in an earlier
    section is a quoted excerpt of it (READMEs show a log, then quote its middle)."""
    for index, section in enumerate(sections):
        if section.has_preamble or section.devices or not section.rows:
            continue
        for earlier in sections[:index]:
            if earlier.rows and all(row in earlier.rows for row in section.rows):
                section.repeats = earlier.first_line
                break


def _clean(text: str) -> str:
    return _CONTROL.sub("", text)


def _looks_like_row(tokens: list[str]) -> bool:
    """A line that starts like a result row (size, count, type): whole or not, it is one."""
    return len(tokens) >= 2 and tokens[0].isdigit() and tokens[1].isdigit() and (len(tokens) == 2 or not _is_number(tokens[2]))


def _is_continuation(tokens: list[str]) -> bool:
    """Figures only, the first not an integer: the rest of a row cut by another rank's output."""
    return bool(tokens) and not tokens[0].isdigit() and all(_is_number(t) or t == "N/A" for t in tokens)


def _joins(section: Section, tokens: list[str]) -> bool:
    """Whether `tokens` can complete the section's last row: it is short of the header's columns."""
    if not section.candidates or section.header is None:
        return False
    last = section.candidates[-1][1]
    return len(last) < len(section.header) and len(last) + len(tokens) <= len(section.header)


def _binary_named(line: str) -> str | None:
    """The one `*_perf` binary a command line runs (`./build/sendrecv_perf -b 8 ...`)."""
    if "NCCL INFO" in line:
        return None
    names = set(_BINARY.findall(line))
    return f"{names.pop()}_perf" if len(names) == 1 else None


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
        if match := re.search(pattern, line):
            found[key] = int(match.group(1))
    return found


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
    return text.lstrip("-").isdigit()


# -- which op -----------------------------------------------------------------
class UnknownOp(UserError):
    """Nothing in the log, the options or the file name says which collective a run measured."""


def op_of(section: Section, given: str | None, file_name: str) -> str:
    """The log's op line, --op, a command line in the log, the rows, the file name (first
    that says); checked against the redop column. UserError when none says or they disagree."""
    from_log = _op_from_test(section.test) if section.test else None
    from_command = _op_from_test(section.command_test) if section.command_test else None
    if given and from_log and given != from_log:
        raise UserError(f"--op {given} but the log says it ran {section.test}")
    if given and from_command and given != from_command:
        raise UserError(f"--op {given} but the log ran {section.command_test} (line {section.first_line})")
    from_rows = _op_from_rows(section)
    op = from_log or given or from_command or from_rows or _op_from_name(file_name)
    where = f"{file_name} (run at line {section.first_line})"
    if op is None:
        raise UnknownOp(
            f"{where}: the log does not say which collective it measured (no 'Collective test starting' line, "
            "no command naming the binary) and the file name does not either: give --op, e.g. --op all_gather"
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
        width = ELEMENT_BYTES.get(row.type)
        if width is None or row.count == 0:
            continue
        whole, rest = divmod(row.size, row.count * width)
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


def ranks_of(section: Section, op: str | None, given: int | None, where: str) -> Ranks:
    """The section's rank count from its rank lines, its rows (chunked ops) or --ranks;
    UserError where --ranks contradicts what the log shows."""
    indices = {d.rank for d in section.devices}
    highest = max(indices) + 1 if indices else None
    from_rows = _elements_per_count(section.rows) if op in CHUNKED_OPS else None
    if given is not None:
        if highest is not None and (given < highest or (len(indices) == highest and given != highest)):
            raise UserError(f"--ranks {given} but {where} shows rank lines up to Rank {highest - 1} ({len(indices)} shown)")
        if from_rows is not None and from_rows != given:
            raise UserError(f"--ranks {given} but the rows of {where} are sized for {from_rows} ranks ({op}: size = ranks x count)")
    if highest is not None and len(indices) == highest:
        return Ranks(highest, True, "rank lines")
    if from_rows is not None and (highest is None or from_rows >= highest):
        return Ranks(from_rows, True, "rows (size per count)")
    if given is not None:
        return Ranks(given, True, "--ranks")
    if highest is not None:
        return Ranks(highest, False, "rank lines (highest)")
    return Ranks(None, False, "unknown")


def _hosts(section: Section) -> list[str]:
    """The hosts of the rank lines, in rank order."""
    return list(dict.fromkeys(d.host for d in sorted(section.devices, key=lambda d: d.rank)))


def _rank0_host(section: Section) -> str | None:
    return next((d.host for d in section.devices if d.rank == 0), None)


def validation_failure(section: Section, ranks: Ranks) -> tuple[str | None, dict[tuple[int, bool], int | None]]:
    """Why the run's validation failed (None: it did not), and each row's wrong count by
    (row index, in place), for the old float error column judged as nccl-tests judged it."""
    reasons: list[str] = []
    if section.bounds and not section.bounds[1]:
        reasons.append(f"nccl-tests printed 'Out of bounds values : {section.bounds[0]} FAILED'")
    wrong: dict[tuple[int, bool], int | None] = {}
    for index, row in enumerate(section.rows):
        for in_place, timing in ((False, row.out_of_place), (True, row.in_place)):
            if timing is None:
                continue
            wrong[(index, in_place)] = timing.wrong
            if timing.wrong:
                reasons.append(f"{timing.wrong} wrong elements at {row.size} B {'in place' if in_place else 'out of place'}")
            elif timing.error is not None:
                limit = _tolerance(row.type, ranks.count)
                if limit is None:
                    continue
                wrong[(index, in_place)] = int(timing.error > limit)
                if timing.error > limit:
                    form = "in place" if in_place else "out of place"
                    reasons.append(f"error {timing.error:g} at {row.size} B {form} exceeds {row.type}'s tolerance {limit:.3g}")
    if not reasons:
        return None, wrong
    shown = reasons[:3] + ([f"{len(reasons) - 3} more"] if len(reasons) > 3 else [])
    return "validation failed: " + "; ".join(shown), wrong


def _tolerance(type_: str, ranks: int | None) -> float | None:
    """DeltaMaxValue(type) x (ranks - 1), nccl-tests' limit on the old error column; None
    where the rank count is unknown (the limit grows with it)."""
    if ranks is None:
        return None if type_ in ERROR_TOLERANCE else INTEGER_TOLERANCE
    return ERROR_TOLERANCE.get(type_, INTEGER_TOLERANCE) * max(ranks - 1, 1)


# -- records ----------------------------------------------------------------
@dataclass
class SectionResult:
    """One section read into records, or why it was not."""

    section: Section
    op: str | None
    ranks: Ranks
    node: str | None
    records: list[ResultRecord]
    status: str  # ok, failed (validation or a failed run)
    error: str | None
    not_stored: str | None = None  # why the section stored nothing (unknown op, quoted repeat)


def log_records(
    text: str,
    file_name: str,
    *,
    op: str | None = None,
    node: str | None = None,
    topology: Topology | None = None,
    logged_at: datetime | None = None,
    how: HowItRan = HowItRan(),
    ranks: int | None = None,
) -> list[ResultRecord]:
    """Every stored row of the log as records (two per size: out of place and in place), and
    one record per failed run. `node` defaults to each run's rank 0 host; `topology` gives the
    rows their fingerprint and fabric; `how` the transport and environment it ran with."""
    results = _read_sections(parse_log(text), file_name, op, node, topology, logged_at, how, ranks)
    return [record for result in results for record in result.records]


def _read_sections(
    sections: list[Section], file_name: str, op: str | None, node: str | None, topology: Topology | None,
    logged_at: datetime | None, how: HowItRan, ranks: int | None,
) -> list[SectionResult]:
    if not sections:
        raise UserError(f"{file_name}: no nccl-tests result rows found (is this the stdout of an *_perf run?)")
    when = logged_at or datetime.now(timezone.utc)
    results = []
    for index, section in enumerate(sections):
        try:
            results.append(_section_result(section, index, file_name, op, node, topology, when, how, ranks))
        except UnknownOp as exc:  # the other runs of the file are stored; this one is named
            if len(sections) == 1:
                raise
            results.append(SectionResult(section, None, Ranks(None, False, "unknown"), None, [], "skipped", None, str(exc)))
    unknown = [r for r in results if r.status == "skipped" and r.section.repeats is None]
    if unknown and not any(r.records for r in results):
        raise UserError(unknown[0].not_stored)
    if not any(r.records for r in results):
        skipped = "; ".join(why for s in sections for why in s.skipped[:3])
        raise UserError(f"{file_name}: no whole nccl-tests result row found ({skipped or 'no rows'})")
    return results


def _section_result(
    section: Section, index: int, file_name: str, given_op: str | None, given_node: str | None,
    topology: Topology | None, when: datetime, how: HowItRan, given_ranks: int | None,
) -> SectionResult:
    where = f"{file_name} (run at line {section.first_line})"
    if section.repeats is not None:
        why = f"the run at line {section.first_line} repeats rows of the run at line {section.repeats} (a quoted excerpt)"
        return SectionResult(section, None, Ranks(None, False, "unknown"), None, [], "skipped", None, why)
    op = op_of(section, given_op, file_name)
    ranks = ranks_of(section, op, given_ranks, where)
    node = given_node or _rank0_host(section)
    run_id = _run_identity(section, op)
    base = _section_fields(section, index, op, file_name, node, run_id, when, ranks)
    base["params"]["transport"] = how.transport
    base["env"] = how.env_of(section, file_name)
    if section.failure and not section.rows:
        error = f"line {section.failure_line}: {section.failure}"
        record = ResultRecord(**base, status="failed", error=error, record_id=f"nccl-tests:{run_id[:32]}:failed",
                              fingerprint=topology.fingerprint if topology else None,
                              fabric=topology.fabric if topology else None, extra=_extra(section, ranks))
        return SectionResult(section, op, ranks, node, [record], "failed", error)
    error, wrong = validation_failure(section, ranks)
    if section.failure:
        error = "; ".join(filter(None, [f"line {section.failure_line}: {section.failure}", error]))
    status = "failed" if error else "ok"
    records = []
    section_extra = _extra(section, ranks)
    seen_sizes: Counter[int] = Counter()
    for row_index, row in enumerate(section.rows):
        seen_sizes[row.size] += 1
        if row.size == 0:
            continue
        for in_place, timing in ((False, row.out_of_place), (True, row.in_place)):
            if timing is None:
                continue
            extra = {**section_extra, "redop": row.redop, "root": row.root}
            if timing.error is not None:
                extra["max_error"] = timing.error
            records.append(
                ResultRecord(
                    **base,
                    status=status,
                    error=error,
                    record_id=_record_id(run_id, row, seen_sizes[row.size], in_place),
                    fingerprint=topology.fingerprint if topology else None,
                    fabric=topology.fabric if topology else None,
                    bytes=row.size,
                    count=row.count,
                    dtype=DTYPES.get(row.type, row.type),
                    in_place=in_place,
                    time_us=timing.time_us,
                    algbw_gbs=timing.algbw_gbs,
                    busbw_gbs=timing.busbw_gbs,
                    wrong=wrong[(row_index, in_place)],
                    extra=extra,
                )
            )
    return SectionResult(section, op, ranks, node, records, status, error)


def _run_identity(section: Section, op: str) -> str:
    """sha256 of what identifies the run: its ranks (host, pid, device, bus id), settings,
    version, test and op. Whitespace, truncation and the rest of the file do not enter."""
    identity = {
        "op": op, "test": section.test, "version": section.version, "nccl": section.nccl_version,
        "settings": section.settings, "ranks": [[d.rank, d.host, d.pid, d.device, d.bus_id] for d in section.devices],
    }
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
    on_node = [d for d in section.devices if d.host == node]
    hosts = _hosts(section)
    versions = {"nccl-tests": section.version, "nccl": section.nccl_version}
    return dict(
        task_id=f"nccl-tests:{run_id[:12]}",
        workload="collective",
        source="nccl-tests",
        op=op,
        # cuda_graph as wirewise's own sweep records it: the header's `graph: N` is -G N
        params={"log": Path(file_name).name, "section": index, "test": section.test or section.command_test,
                **section.settings, "cuda_graph": bool(section.settings.get("graph"))},
        node=node,
        # every host is known only when every rank line is shown; else the count is unknown
        node_count=len(hosts) if hosts and ranks.exact and ranks.source == "rank lines" else None,
        nodes=hosts,
        gpus=sorted({d.device for d in on_node}),
        gpu_count=ranks.count,
        world_size=ranks.count,
        started_at=when,
        ended_at=when,
        versions={k: v for k, v in versions.items() if v},
    )


def _extra(section: Section, ranks: Ranks) -> dict[str, Any]:
    hosts = _hosts(section)
    extra: dict[str, Any] = {
        "avg_busbw_gbs": section.average_busbw, "hosts": hosts,
        "ranks_exact": ranks.exact, "ranks_from": ranks.source, "log_line": section.first_line,
        # what the record is known by: the run's own lines, or (an excerpt of rows only) its figures
        "identified_by": "run" if section.devices or section.has_preamble else "figures",
    }
    names = list(dict.fromkeys(d.name for d in section.devices))
    if names:
        extra["gpu_names"] = names
    if section.notes:
        extra["notes"] = section.notes
    return extra


# -- importing a log file ---------------------------------------------------
@dataclass
class LogImport:
    """A log file read into records, with the node and wiring they are stored under."""

    file: Path
    node: str | None
    topology: Topology | None
    results: list[SectionResult]
    skipped: list[str] = field(default_factory=list)  # rows and runs not stored, and why

    @property
    def records(self) -> list[ResultRecord]:
        return [record for result in self.results for record in result.records]

    def store(self, store: Store) -> int:
        """Save the node's wiring (when given) and the records; returns how many records were new.
        Rows of an excerpt that shows no line of its run (no rank, settings or version line)
        cannot be known by their run: those whose figures are stored already (the same log
        imported whole) are not stored again."""
        from wirewise.orchestrator.record.ingest import store_measurement
        from wirewise.orchestrator.store.results import stored_figures

        records = self.records
        excerpt = [r for r in records if r.extra.get("identified_by") == "figures" and r.bytes is not None]
        if excerpt:
            known = stored_figures(store, "nccl-tests", {r.op for r in excerpt}, {r.bytes for r in excerpt})
            repeated = {r.record_id for r in excerpt if _figures(r) in known}
            records = [r for r in records if r.record_id not in repeated]
        return store_measurement(store, records, self.topology, self.node)

    def summary(self, new: int) -> dict[str, Any]:
        """What was imported, one entry per run: op, status, rows, ranks, hosts, peak busbw."""
        return {
            "file": str(self.file),
            "node": self.node,
            "rows": len(self.records),  # results rows: two per size (out of place, in place), one per failed run
            "new": new,
            "fingerprint": self.topology.fingerprint if self.topology else None,
            "fabric": self.topology.fabric if self.topology else None,
            "sections": [_section_summary(result) for result in self.results if result.records],
            "failed": [_section_summary(result) for result in self.results if result.status == "failed"],
            "skipped": self.skipped,
        }


def _figures(record: ResultRecord) -> tuple:
    return (record.op, record.bytes, record.count, record.dtype, record.in_place,
            record.time_us, record.algbw_gbs, record.busbw_gbs)


def read_log_file(
    path: Path, *, op: str | None = None, node: str | None = None, topology_file: Path | None = None,
    how: HowItRan = HowItRan(), ranks: int | None = None,
) -> LogImport:
    """Read and check an nccl-tests log (and the topology it ran on); UserError for anything wrong."""
    if op is not None and op not in KNOWN_OPS:
        raise UserError(f"--op {op!r}: not a collective nccl-tests measures; choose one of {', '.join(sorted(KNOWN_OPS))}")
    if ranks is not None and not 1 <= ranks <= MOST_RANKS:
        raise UserError(f"--ranks {ranks}: give the run's rank count, 1 to {MOST_RANKS:,}")
    text = _read_text(path)
    sections = parse_log(text)
    topology = None
    if topology_file is not None:
        node = node or next((_rank0_host(s) for s in sections if _rank0_host(s)), None)
        if node is None:
            raise UserError("the log names no host: give --node with --topology-file, so the wiring is stored for a node")
        from wirewise.topology import read_topology

        topology = read_topology(topology_file)
    logged_at = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    results = _read_sections(sections, path.name, op, node, topology, logged_at, how, ranks)
    imported = LogImport(path, node or next((r.node for r in results if r.node), None), topology, results)
    _check_gpus_fit(imported.records, topology, topology_file)
    imported.skipped = [f"{path.name} {why}" for section in sections for why in section.skipped]
    imported.skipped += [f"{path.name}: {r.not_stored}" for r in results if r.not_stored]
    return imported


def _read_text(path: Path) -> str:
    if not path.exists():
        raise UserError(f"{str(path)!r}: no such file")
    try:
        return read_bounded(path, MAX_LOG_BYTES).decode(errors="replace")
    except OSError as exc:
        raise UserError(f"{str(path)!r}: cannot read it ({exc.strerror})") from None


def _check_gpus_fit(records: list[ResultRecord], topology: Topology | None, topology_file: Path | None) -> None:
    """A log that used GPU 7 cannot have run on a node whose topology has 4 GPUs."""
    if topology is None:
        return
    highest = max((g for r in records for g in r.gpus), default=-1)
    if highest >= topology.gpus:
        raise UserError(f"the log uses GPU {highest} but {topology_file} describes {topology.gpus} GPU(s): wrong --topology-file?")


def _section_summary(result: SectionResult) -> dict[str, Any]:
    rows = [r for r in result.records if r.bytes is not None]
    peak = max(rows, key=lambda r: r.busbw_gbs) if rows else None
    first = result.records[0] if result.records else None
    section = result.section
    return {
        "op": result.op,
        "line": section.first_line,
        "status": result.status,
        "error": result.error,
        "rows": len(rows),
        "sizes": sum(1 for row in section.rows if row.size) if rows else 0,  # log rows stored
        "zero_size_rows": section.zero_size_rows,
        "ranks": result.ranks.count,
        "ranks_exact": result.ranks.exact,
        "ranks_from": result.ranks.source,
        "node": result.node,
        "hosts": _hosts(section),
        "nccl_tests": section.version,
        "peak_busbw_gbs": peak.busbw_gbs if peak else None,
        "peak_bytes": peak.bytes if peak else None,
        "largest_bytes": max((r.bytes for r in rows), default=None),
        "avg_busbw_gbs": section.average_busbw,
        "transport": first.params["transport"] if first else None,
        "cuda_graph": first.params["cuda_graph"] if first else None,
        "env": first.env if first else {},
    }
