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
them, is kept as printed under extra.avg_busbw_gbs. Record ids derive from the log's
content and the row's place in it, so importing a log again adds nothing.

`read_log_file` is what `wirewise import nccl-tests` calls: the log, its node and the
topology it ran on, checked, then `LogImport.store` saves the wiring and the records.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wirewise.errors import UserError
from wirewise.record import RECORDED_ENV_PREFIXES, ResultRecord

if TYPE_CHECKING:
    from wirewise.orchestrator.store import Store
    from wirewise.topology import Topology

# nccl-tests binary (without _perf) -> wirewise op name where they differ.
OP_FROM_TEST = {"alltoall": "all_to_all"}
REDUCING_OPS = {"all_reduce", "reduce_scatter", "reduce"}
NON_REDUCING_OPS = {"all_gather", "broadcast", "all_to_all", "sendrecv", "gather", "scatter", "hypercube", "alltoallv"}
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
    r"^#\s+Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?P<host>\S+)\s+"
    r"device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s+(?P<name>.+?)\s*$"
)
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

    @property
    def started(self) -> bool:
        return bool(self.rows or self.average_busbw is not None)


# -- parsing ----------------------------------------------------------------
def parse_log(text: str) -> list[Section]:
    """Sections with at least one row, in file order."""
    sections = [Section()]

    def current(start_new: bool = False) -> Section:
        if start_new and sections[-1].started:
            sections.append(Section())
        return sections[-1]

    for line in text.splitlines():
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
                Device(int(match["rank"]), match["host"], int(match["device"]), match["bus"], match["name"])
            )
        elif match := _AVERAGE.match(line):
            current().average_busbw = float(match.group(1))
        elif match := _ENV_LINE.search(line):
            current().env[match.group(1)] = match.group(2)
        elif line.startswith("#"):
            note = line.lstrip("# ").strip()
            if note and not _is_header_or_boilerplate(note):
                current().notes.append(note)
        elif (row := _row(line)) is not None:
            current().rows.append(row)
    return [s for s in sections if s.rows]


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


def _row(line: str) -> Row | None:
    """A result row, or None for anything else (NCCL INFO lines, warnings, srun noise)."""
    tokens = line.split()
    if len(tokens) < 7 or not tokens[0].isdigit() or not tokens[1].isdigit():
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
    return _records(parse_log(text), text, file_name, op, node, topology, logged_at, how)


def _records(
    sections: list[Section], text: str, file_name: str, op: str | None, node: str | None,
    topology: Topology | None, logged_at: datetime | None, how: HowItRan,
) -> list[ResultRecord]:
    if not sections:
        raise UserError(f"{file_name}: no nccl-tests result rows found (is this the stdout of an *_perf run?)")
    node = node or _first_host(sections)
    digest = hashlib.sha256(text.encode()).hexdigest()
    when = logged_at or datetime.now(timezone.utc)
    records = []
    for index, section in enumerate(sections):
        base = _section_fields(section, index, op_of(section, op, file_name), file_name, node, digest, when)
        base["params"]["transport"] = how.transport
        base["env"] = how.env_of(section, file_name)
        section_extra = _extra(section)
        for row_index, row in enumerate(section.rows):
            if row.size == 0:
                continue
            for in_place, timing in ((False, row.out_of_place), (True, row.in_place)):
                if timing is None:
                    continue
                records.append(
                    ResultRecord(
                        **base,
                        record_id=f"nccl-tests:{digest[:24]}:{index}:{row_index}:{'in' if in_place else 'out'}",
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


def _hosts(section: Section) -> list[str]:
    return list(dict.fromkeys(d.host for d in section.devices))


def _first_host(sections: list[Section]) -> str | None:
    """The first host the log's Rank lines name, the node its records are stored under."""
    return next((host for section in sections for host in _hosts(section)), None)


def _section_fields(
    section: Section, index: int, op: str, file_name: str, node: str | None, digest: str, when: datetime
) -> dict:
    hosts = _hosts(section)
    on_node = [d for d in section.devices if d.host == node] or [d for d in section.devices if hosts and d.host == hosts[0]]
    versions = {"nccl-tests": section.version, "nccl": section.nccl_version}
    return dict(
        task_id=f"nccl-tests:{digest[:12]}",
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
        }


def read_log_file(
    path: Path, *, op: str | None = None, node: str | None = None, topology_file: Path | None = None,
    how: HowItRan = HowItRan(),
) -> LogImport:
    """Read and check an nccl-tests log (and the topology it ran on); UserError for anything wrong."""
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
    records = _records(sections, text, path.name, op, node, topology, logged_at, how)
    _check_gpus_fit(records, topology, topology_file)
    return LogImport(path, node, topology, records)


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise UserError(f"{str(path)!r}: no such file")
    try:
        return path.read_text(errors="replace")
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
