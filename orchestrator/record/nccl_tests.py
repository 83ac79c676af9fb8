"""Read an nccl-tests log (NVIDIA/nccl-tests `*_perf` stdout) into result records.

What a log holds, old format or new:
- an optional `# nccl-tests version X nccl-headers=C nccl-library=C` line and
  `# Collective test starting: all_reduce_perf` (older logs have neither: the op then
  comes from --op or the file name, checked against the redop column);
- `# nThread 1 nGpus 1 minBytes ... iters: 20 ...`: the run's settings;
- `#  Rank  0 Group  0 Pid 123 on HOST device  0 [BUS] NAME`: hosts, GPU indices and
  models, and the rank count;
- one row per size: size, count, type, redop, root, then time/algbw/busbw/#wrong out of
  place and again in place;
- `# Avg bus bandwidth    : X`.
Several runs concatenated in one file are read as separate sections.

Each row becomes two records (out of place, in place) with the same fields wirewise's own
sweep writes, and source "nccl-tests". How it ran is recorded as wirewise records its own
runs: `params.transport` and `env` (the transport's settings, what --env gives, and any
`NCCL INFO NCCL_X set by environment to V` lines of a log run with NCCL_DEBUG=INFO; a log
says nothing of its environment otherwise), and `params.cuda_graph` from the header's
`graph: N` (a run with -G). Rows of size 0 are not stored: they carry no
bandwidth, and a log can hold several of them (all_gather with -b below ranks x 16 B),
which would give one (op, bytes) key many values; the log's average line, which counts
them, is kept as printed under extra.avg_busbw_gbs.

A row is stored only when it is whole: as many columns as the section's header names (or,
without a header, as most of its rows have), and finite, non-negative times and bandwidths.
A log cut mid-row would otherwise shift its columns (time -1, algbw 2115); such rows are
skipped with a warning naming their line.

Record ids come from the measurement, not the file's bytes: the run's header (its ranks'
hosts, pids, devices and bus ids, the settings, the version and test) and the row's own
values. The same log with other whitespace, a truncated copy, or the log inside a longer
file all give the same ids, so importing it again adds nothing.

`read_log_file` is what `wirewise import nccl-tests` calls: the log, its node and the
topology it ran on, checked, then `LogImport.store` saves the wiring and the records.
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

from wirewise.errors import UserError
from wirewise.limits import MAX_LOG_BYTES, read_bounded
from wirewise.record import RECORDED_ENV_PREFIXES, ResultRecord, figure_problem

if TYPE_CHECKING:
    from wirewise.orchestrator.store import Store
    from wirewise.topology import Topology

# nccl-tests binary (without _perf) -> wirewise op name where they differ.
OP_FROM_TEST = {"alltoall": "all_to_all"}
REDUCING_OPS = {"all_reduce", "reduce_scatter", "reduce"}
NON_REDUCING_OPS = {"all_gather", "broadcast", "all_to_all", "sendrecv", "gather", "scatter", "hypercube", "alltoallv"}
KNOWN_OPS = REDUCING_OPS | NON_REDUCING_OPS
# Spellings of an op in file names, most specific first ("reduce_scatter" before "reduce").
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
# nccl-tests type names -> torch's, the names wirewise records.
DTYPES = {
    "float": "float32", "half": "float16", "double": "float64", "bfloat16": "bfloat16",
    "int8": "int8", "uint8": "uint8", "int32": "int32", "uint32": "uint32", "int64": "int64",
    "uint64": "uint64", "char": "int8", "int": "int32", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2",
}

_VERSION = re.compile(r"^#\s*nccl-tests version\s+(\S+)(?:.*?nccl-library=(\d+))?")
_STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_SETTINGS = re.compile(r"^#\s*nThread\s+\d+")
_DEVICE = re.compile(
    r"^#\s+Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)\s+"
    r"device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s+(?P<name>.+?)\s*$"
)
_HEADER = re.compile(r"^#\s*size\s+count\s+type\b")
# Terminal control sequences (ANSI CSI/OSC) and other control characters: never part of a
# host or GPU name, and a log may carry them (colourised srun output, or a hostile file).
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x00-\x1f\x7f-\x9f]")
_AVERAGE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_ENV_LINE = re.compile(r"NCCL INFO (NCCL_\w+) set by environment to (\S+?)\.?\s*$")
_ENV_PAIR = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_SETTING_FIELDS = {
    "nthread": r"nThread\s+(\d+)", "ngpus": r"nGpus\s+(\d+)", "min_bytes": r"minBytes\s+(\d+)",
    "max_bytes": r"maxBytes\s+(\d+)", "step_factor": r"step:\s*(\d+)\(factor\)", "step_bytes": r"step:\s*(\d+)\(bytes\)",
    "warmup": r"warmup iters:\s*(\d+)", "iters": r"(?<!warmup )(?<!agg )iters:\s*(\d+)", "agg_iters": r"agg iters:\s*(\d+)",
    "validation": r"validation:\s*(\d+)", "graph": r"graph:\s*(\d+)",
}


@dataclass
class Timing:
    time_us: float
    algbw_gbs: float
    busbw_gbs: float
    wrong: int | None  # None where the log says N/A (run without -c)


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
    pid: int
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

    test: str | None = None  # e.g. all_reduce_perf
    version: str | None = None
    nccl_version: str | None = None
    settings: dict[str, int] = field(default_factory=dict)
    devices: list[Device] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    average_busbw: float | None = None
    notes: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # NCCL INFO "set by environment" lines
    columns: int | None = None  # columns per row, from the header line
    candidates: list[tuple[int, list[str]]] = field(default_factory=list)  # (line number, tokens)
    skipped: list[str] = field(default_factory=list)  # why rows were not stored, by line

    @property
    def started(self) -> bool:
        return bool(self.candidates or self.average_busbw is not None)

    def read_rows(self) -> None:
        """Rows from the candidate lines: whole ones only (see the module's docstring)."""
        expected = self.columns or Counter(len(tokens) for _, tokens in self.candidates).most_common(1)[0][0]
        for number, tokens in self.candidates:
            if len(tokens) != expected:
                self.skipped.append(f"line {number}: {len(tokens)} columns where the run prints {expected} (cut row?)")
            elif (row := _row(tokens)) is None:
                self.skipped.append(f"line {number}: not a result row")
            elif (problem := _unmeasured(row)) is not None:
                self.skipped.append(f"line {number}: {problem}")
            else:
                self.rows.append(row)


# -- parsing ----------------------------------------------------------------
def parse_log(text: str) -> list[Section]:
    """Sections with at least one row line, in file order (rows that are not whole are in
    each section's `skipped`)."""
    sections = [Section()]

    def current(start_new: bool = False) -> Section:
        if start_new and sections[-1].started:
            sections.append(Section())
        return sections[-1]

    for number, line in enumerate(text.splitlines(), start=1):
        line = line.rstrip()
        if match := _VERSION.match(line):
            section = current(start_new=True)
            section.version = match.group(1)
            section.nccl_version = _nccl_version(match.group(2))
        elif match := _STARTING.match(line):
            current(start_new=True).test = match.group(1)
        elif _SETTINGS.match(line):
            current(start_new=True).settings = _settings(line)
        elif match := _DEVICE.match(line):
            current().devices.append(
                Device(int(match["rank"]), int(match["pid"]), _clean(match["host"]), int(match["device"]),
                       _clean(match["bus"]), _clean(match["name"]))
            )
        elif _HEADER.match(line):
            current().columns = len(line.lstrip("#").split())
        elif match := _AVERAGE.match(line):
            current().average_busbw = float(match.group(1))
        elif match := _ENV_LINE.search(line):
            current().env[match.group(1)] = match.group(2)
        elif line.startswith("#"):
            note = line.lstrip("# ").strip()
            if note and not _is_header_or_boilerplate(note):
                current().notes.append(note)
        elif _looks_like_row(tokens := line.split()):
            current().candidates.append((number, tokens))
    for section in sections:
        if section.candidates:
            section.read_rows()
    return [s for s in sections if s.candidates]


def _clean(text: str) -> str:
    return _CONTROL.sub("", text)


def _looks_like_row(tokens: list[str]) -> bool:
    """A line that starts like a result row (size, count, type): whole or not, it is one."""
    return len(tokens) >= 2 and tokens[0].isdigit() and tokens[1].isdigit() and (len(tokens) == 2 or not _is_number(tokens[2]))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _nccl_version(code: str | None) -> str | None:
    """NCCL_VERSION_CODE -> 'major.minor.patch' (2.9 and later: major*10000 + minor*100 + patch)."""
    if not code:
        return None
    value = int(code)
    if value >= 10000:
        return f"{value // 10000}.{value % 10000 // 100}.{value % 100}"
    return f"{value // 1000}.{value % 1000 // 100}.{value % 100}"


def _settings(line: str) -> dict[str, int]:
    found = {}
    for key, pattern in _SETTING_FIELDS.items():
        if match := re.search(pattern, line):
            found[key] = int(match.group(1))
    return found


def _is_header_or_boilerplate(note: str) -> bool:
    first = note.split()[0]
    return first in ("size", "(B)", "out-of-place", "Using", "Collective", "Out") or note.startswith("Rank")


def _row(tokens: list[str]) -> Row | None:
    """A result row from a line's tokens, or None when they do not parse as one."""
    if len(tokens) < 7:
        return None
    size, count, type_ = int(tokens[0]), int(tokens[1]), tokens[2]
    rest = tokens[3:]
    # Columns between type and the timings: redop and root in current logs; older ones print
    # only one of them (broadcast: root; alltoall: redop) or neither.
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
        parsed = [_timing(timings[i : i + 4]) for i in range(0, 4 * groups, 4)]
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


def _timing(fields: list[str]) -> Timing:
    time_us, algbw, busbw, wrong = fields
    return Timing(float(time_us), float(algbw), float(busbw), _wrong_count(wrong))


def _wrong_count(text: str) -> int | None:
    """#wrong; None for N/A (run without -c) and for the largest error old versions printed instead."""
    if _is_int(text):
        return int(text)
    if text != "N/A":
        float(text)  # anything else is not a result row
    return None


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


# -- which op ---------------------------------------------------------------
def op_of(section: Section, given: str | None, file_name: str) -> str:
    """The log's own op line wins; else --op; else the file name. Checked against redop."""
    from_log = _op_from_test(section.test) if section.test else None
    if given and from_log and given != from_log:
        raise UserError(f"--op {given} but the log says it ran {section.test}")
    op = from_log or given or _op_from_name(file_name)
    if op is None:
        raise UserError(
            f"{file_name}: the log does not say which collective it measured (no 'Collective test starting' line) "
            "and the file name does not either: give --op, e.g. --op all_gather"
        )
    redops = {row.redop for row in section.rows}
    if op in REDUCING_OPS and redops == {"none"}:
        raise UserError(f"{file_name}: the rows have redop 'none', which {op} never prints; give the right --op")
    if op in NON_REDUCING_OPS and redops - {"none"}:
        raise UserError(f"{file_name}: the rows have redop {sorted(redops - {'none'})}, which {op} never prints; give the right --op")
    return op


def _op_from_test(test: str) -> str:
    name = re.sub(r"_perf(_mpi)?$", "", test)
    return OP_FROM_TEST.get(name, name)


def _op_from_name(file_name: str) -> str | None:
    name = Path(file_name).name.lower().replace("-", "_")
    for op, spellings in OP_IN_NAME:
        if any(spelling in name for spelling in spellings):
            return op
    return None


# -- records ----------------------------------------------------------------
def log_records(
    text: str,
    file_name: str,
    *,
    op: str | None = None,
    node: str | None = None,
    topology: Topology | None = None,
    logged_at: datetime | None = None,
    how: HowItRan = HowItRan(),
) -> list[ResultRecord]:
    """Every stored row of the log as records (two per size: out of place and in place).

    `node` defaults to the first host of the log's Rank lines; `topology` gives the rows
    their fingerprint and fabric; `how` the transport and environment it ran with."""
    return _records(parse_log(text), file_name, op, node, topology, logged_at, how)


def _records(
    sections: list[Section], file_name: str, op: str | None, node: str | None,
    topology: Topology | None, logged_at: datetime | None, how: HowItRan,
) -> list[ResultRecord]:
    if not any(section.rows for section in sections):
        raise UserError(f"{file_name}: no nccl-tests result rows found (is this the stdout of an *_perf run?)")
    node = node or _first_host(sections)
    when = logged_at or datetime.now(timezone.utc)
    records = []
    for index, section in enumerate(sections):
        if not section.rows:
            continue
        section_op = op_of(section, op, file_name)
        run_id = _run_identity(section, section_op)
        base = _section_fields(section, index, section_op, file_name, node, run_id, when)
        base["params"]["transport"] = how.transport
        base["env"] = how.env_of(section, file_name)
        section_extra = _extra(section)
        seen_sizes: Counter[int] = Counter()
        for row in section.rows:
            seen_sizes[row.size] += 1
            if row.size == 0:
                continue
            for in_place, timing in ((False, row.out_of_place), (True, row.in_place)):
                if timing is None:
                    continue
                records.append(
                    ResultRecord(
                        **base,
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
                        wrong=timing.wrong,
                        extra={**section_extra, "redop": row.redop, "root": row.root},
                    )
                )
    return records


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


def _hosts(section: Section) -> list[str]:
    return list(dict.fromkeys(d.host for d in section.devices))


def _first_host(sections: list[Section]) -> str | None:
    """The first host the log's Rank lines name, the node its records are stored under."""
    return next((host for section in sections for host in _hosts(section)), None)


def _section_fields(
    section: Section, index: int, op: str, file_name: str, node: str | None, run_id: str, when: datetime
) -> dict:
    hosts = _hosts(section)
    on_node = [d for d in section.devices if d.host == node] or [d for d in section.devices if hosts and d.host == hosts[0]]
    versions = {"nccl-tests": section.version, "nccl": section.nccl_version}
    return dict(
        task_id=f"nccl-tests:{run_id[:12]}",
        workload="collective",
        source="nccl-tests",
        op=op,
        # cuda_graph as wirewise's own sweep records it: the header's `graph: N` is -G N
        params={"log": Path(file_name).name, "section": index, "test": section.test, **section.settings,
                "cuda_graph": bool(section.settings.get("graph"))},
        node=node,
        gpus=sorted({d.device for d in on_node}),
        gpu_count=len(section.devices),
        world_size=len(section.devices) or None,
        status="ok",
        started_at=when,
        ended_at=when,
        versions={k: v for k, v in versions.items() if v},
    )


def _extra(section: Section) -> dict[str, Any]:
    extra: dict[str, Any] = {"avg_busbw_gbs": section.average_busbw, "hosts": _hosts(section)}
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
    records: list[ResultRecord]
    skipped: list[str] = field(default_factory=list)  # rows not stored, and why

    def store(self, store: Store) -> int:
        """Save the node's wiring (when given) and the records; returns how many records were new."""
        from wirewise.orchestrator.record.ingest import store_measurement

        return store_measurement(store, self.records, self.topology, self.node)

    def summary(self, new: int) -> dict[str, Any]:
        """What was imported, one entry per section: rows, ranks, peak busbw, the logged average."""
        sections: dict[int, list[ResultRecord]] = {}
        for record in self.records:
            sections.setdefault(record.params["section"], []).append(record)
        return {
            "file": str(self.file),
            "node": self.node,
            "rows": len(self.records),
            "new": new,
            "fingerprint": self.topology.fingerprint if self.topology else None,
            "fabric": self.topology.fabric if self.topology else None,
            "sections": [_section_summary(rows) for rows in sections.values()],
            "skipped": self.skipped,
        }


def read_log_file(
    path: Path, *, op: str | None = None, node: str | None = None, topology_file: Path | None = None,
    how: HowItRan = HowItRan(),
) -> LogImport:
    """Read and check an nccl-tests log (and the topology it ran on); UserError for anything wrong."""
    if op is not None and op not in KNOWN_OPS:
        raise UserError(f"--op {op!r}: not a collective nccl-tests measures; choose one of {', '.join(sorted(KNOWN_OPS))}")
    text = _read_text(path)
    sections = parse_log(text)
    node = node or _first_host(sections)
    topology = None
    if topology_file is not None:
        if node is None:
            raise UserError("the log names no host: give --node with --topology-file, so the wiring is stored for a node")
        from wirewise.topology import read_topology

        topology = read_topology(topology_file)
    logged_at = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    records = _records(sections, path.name, op, node, topology, logged_at, how)
    _check_gpus_fit(records, topology, topology_file)
    skipped = [f"{path.name} {why}" for section in sections for why in section.skipped]
    return LogImport(path, node, topology, records, skipped)


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


def _section_summary(rows: list[ResultRecord]) -> dict[str, Any]:
    peak = max(rows, key=lambda r: r.busbw_gbs)
    return {
        "op": rows[0].op,
        "rows": len(rows),
        "ranks": rows[0].world_size,
        "peak_busbw_gbs": peak.busbw_gbs,
        "peak_bytes": peak.bytes,
        "avg_busbw_gbs": rows[0].extra.get("avg_busbw_gbs"),
        "transport": rows[0].params["transport"],
        "cuda_graph": rows[0].params["cuda_graph"],
        "env": rows[0].env,
    }
