"""Read results back: filters checked and resolved, one query, one fact per stored row.

Every command of the report stage (results, compare, report, doctor) reads through `facts`,
so a filter means the same everywhere. Filters that are columns go into SQL (indexed, see
db/versions/0004); the placement class, derived from the GPUs and the node's wiring where a
campaign did not record it, is filtered after the query.

Runs on CPU ranks (gloo; their records name no GPU, gpu_count 0) measure the host, not the
fabric their rows are fingerprinted with: they stay out unless `include_cpu` asks for them.
An imported log that did not say how many GPUs ran has gpu_count NULL: a GPU run whose
`gpus` is None (unknown), matched by no `--gpus N`.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from operator import itemgetter
from typing import Any

from sqlalchemy import String, case, cast, func, or_, select, type_coerce
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from wirewise.errors import UserError
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.models import CampaignRow, NodeRow, NodeTopologyRow, ResultRow, TopologyRow

# The tables' Core columns: statements of columns, not ORM attributes, skip the ORM's
# compilation and mapper set-up (together 30 ms of a `wirewise results` under cProfile).
RESULTS = ResultRow.__table__.c
CAMPAIGNS = CampaignRow.__table__.c

WORKLOADS = ("collective", "train")
SOURCES = ("wirewise", "nccl-tests")
STATUSES = ("ok", "oom", "failed", "timeout", "cancelled")


def _raw(column):
    """The column as the driver returns it, without SQLAlchemy's per-row conversion (JSON text
    decoded, SQLite's datetime text parsed): most rows never need it, and on a million rows
    the conversion costs more than the query (decoded where needed by _json)."""
    return type_coerce(column, String)


def _json(value):
    """A JSON column read through _raw: text on SQLite, already decoded by PostgreSQL's driver."""
    return json.loads(value) if isinstance(value, str) else value


# The SQL of the derived fields, written once for filters, facts and aggregates.
# GPUs, or ranks for CPU runs (gpu_count 0); NULL where an imported log did not say (gpu_count NULL)
RANKS = case((RESULTS.gpu_count.is_(None), RESULTS.world_size),
             else_=func.coalesce(func.nullif(RESULTS.gpu_count, 0), RESULTS.world_size, 0))
TRANSPORT = func.coalesce(RESULTS.params["transport"].as_string(), "default")
RECORDED_PLACEMENT = RESULTS.params["placement"].as_string()  # None: derive it (GroupLookup)
GPU_LIST = cast(RESULTS.gpus, String)  # the GPUs as JSON text: PostgreSQL can neither group nor compare json

# Each field results can be grouped by, as SQL (placement: where recorded; see GroupLookup).
FIELD_SQL = {
    "source": RESULTS.source, "campaign": RESULTS.campaign, "node": RESULTS.node,
    "fingerprint": RESULTS.fingerprint, "fabric": RESULTS.fabric, "op": RESULTS.op, "dtype": RESULTS.dtype,
    "in_place": RESULTS.in_place, "bytes": RESULTS.bytes, "model": RESULTS.model,
    "strategy": RESULTS.strategy, "gpus": RANKS, "placement": RECORDED_PLACEMENT, "transport": TRANSPORT,
    "task_id": RESULTS.task_id,
}


class exact_text(FunctionElement):
    """A float column as text that reads back as the same float: SQLite's CAST keeps only 15
    digits, its printf 17 (what a double needs); PostgreSQL's text is already the shortest
    exact form. Aggregates gather metric values as text (report.aggregate)."""

    type = String()
    name = "exact_text"
    inherit_cache = True


@compiles(exact_text)
def _exact_text(element, compiler, **kw) -> str:
    return f"CAST({compiler.process(element.clauses, **kw)} AS TEXT)"


@compiles(exact_text, "sqlite")
def _exact_text_sqlite(element, compiler, **kw) -> str:
    return f"printf('%!.17g', {compiler.process(element.clauses, **kw)})"


# What one fact holds: the columns read, then the derived fields (gpus: GPUs or, for CPU
# ranks, ranks; device: gpu or cpu; placement; transport; peak_mem_bytes: the largest rank's).
# A workload's metric columns are read only when the filters let its rows through: on a wide
# match, every column read costs (a collective query over 1M rows reads a third less).
_COMMON = (
    RESULTS.id, RESULTS.workload, RESULTS.source, RESULTS.status, RESULTS.campaign, RESULTS.node,
    RESULTS.fingerprint, RESULTS.fabric, GPU_LIST.label("gpu_list"), RESULTS.gpu_count,
    RESULTS.world_size, _raw(RESULTS.started_at).label("started_at"), RESULTS.task_id,
    TRANSPORT.label("transport"), RECORDED_PLACEMENT.label("recorded_placement"),
)
_WORKLOAD_COLUMNS = {
    "collective": (
        RESULTS.op, RESULTS.bytes, RESULTS.dtype, RESULTS.in_place,
        RESULTS.time_us, RESULTS.algbw_gbs, RESULTS.busbw_gbs,
    ),
    "train": (
        RESULTS.model, RESULTS.strategy, RESULTS.tokens_per_s, RESULTS.step_time_s, RESULTS.samples_per_s,
        _raw(RESULTS.peak_mem_bytes).label("peak_mem_bytes"), RESULTS.mfu,
    ),
}
# Every fact carries every field (None where its workload has none), whichever were read.
_EMPTY_FACT = dict.fromkeys(
    [c.key for c in _COMMON if c.key not in ("gpu_list", "recorded_placement")]
    + [c.key for columns in _WORKLOAD_COLUMNS.values() for c in columns] + ["device", "gpus", "placement"]
)


@dataclass(frozen=True)
class Filters:
    """What the user asked for, checked. Use `resolve` before querying: it turns prefixes into
    full values and fails on unknown names."""

    fabric: str | None = None
    fingerprint: str | None = None
    node: str | None = None
    workload: str | None = None
    op: str | None = None
    bytes: int | None = None
    model: str | None = None
    strategy: str | None = None
    gpus: int | None = None
    placement: str | None = None
    transport: str | None = None
    source: str | None = None
    status: str | None = None
    since: datetime | None = None
    campaigns: tuple[str, ...] = ()
    include_cpu: bool = False

    def asked(self) -> dict[str, Any]:
        """The filters given, for JSON output."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items() if v not in (None, (), False)}


PLACEMENTS = ("packed", "spread", "all", "explicit", "cpu")  # as campaigns record them, or derived
TRANSPORTS = ("default", "pcie")


def parse_filters(**options: Any) -> Filters:
    """Filters from command-line text: sizes ('1G'), dates ('2026-11-30', '7d'), counts and
    choices checked, so a typo is an error and never an empty "no results match"."""
    from wirewise.limits import MAX_INT, MAX_RANKS
    from wirewise.registry import STRATEGIES
    from wirewise.units import parse_size

    for name, choices in (("workload", WORKLOADS), ("source", SOURCES), ("status", STATUSES),
                          ("placement", PLACEMENTS), ("transport", TRANSPORTS), ("strategy", tuple(STRATEGIES))):
        if options.get(name) is not None and options[name] not in choices:
            raise UserError(f"--{name} {options[name]!r}: choose one of {', '.join(choices)}")
    if options.get("op") is not None:
        check_op(options["op"])
    if options.get("bytes") is not None:
        try:
            options["bytes"] = parse_size(options["bytes"], MAX_INT)
        except ValueError as exc:
            raise UserError(f"--bytes {options['bytes']!r}: {exc}") from None
    if options.get("gpus") is not None and not 0 <= options["gpus"] <= MAX_RANKS:
        raise UserError(f"--gpus {options['gpus']}: give a GPU count from 0 to {MAX_RANKS}")
    if options.get("since") is not None:
        options["since"] = parse_since(options["since"])
    options["campaigns"] = tuple(options.get("campaigns") or ())
    return Filters(**options)


def check_op(op: str) -> None:
    """An op wirewise runs, or one nccl-tests measures (imported logs)."""
    from wirewise.registry import OPS

    if op in OPS:
        return
    from wirewise.orchestrator.record.nccl_tests import KNOWN_OPS

    if op not in KNOWN_OPS:
        raise UserError(f"--op {op!r}: choose one of {', '.join(sorted(set(OPS) | KNOWN_OPS))}")


_AGE = re.compile(r"^(\d{1,12})([dhm])$")
_MINUTES = {"d": 1440, "h": 60, "m": 1}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """'2026-11-30', '2026-11-30T12:00[+01:00]' or an age ('7d', '12h', '30m', up to
    MAX_AGE_DAYS), as UTC."""
    from wirewise.limits import MAX_AGE_DAYS

    text = text.strip()
    age = _AGE.match(text)
    if age:
        minutes = int(age.group(1)) * _MINUTES[age.group(2)]
        if minutes > MAX_AGE_DAYS * 1440:
            raise UserError(f"--since {text!r}: an age is at most {MAX_AGE_DAYS} days")
        return (now or datetime.now(timezone.utc)) - timedelta(minutes=minutes)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise UserError(f"--since {text!r}: give a date (2026-11-30), a time (2026-11-30T12:00) or an age (7d, 12h, 30m)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    try:
        return when.astimezone(timezone.utc)
    except OverflowError:
        raise UserError(f"--since {text!r}: out of range in UTC (years 1 to 9999)") from None


# -- resolving names -----------------------------------------------------------------
def resolve(store: Store, filters: Filters) -> Filters:
    """Prefixes made whole (fabric, fingerprint); unknown campaigns refused."""
    changes: dict[str, Any] = {}
    if filters.fabric is not None:
        from wirewise.topology.classify import FABRICS

        changes["fabric"] = unique_prefix("--fabric", filters.fabric, FABRICS)
    if filters.fingerprint is not None:
        changes["fingerprint"] = unique_prefix("--fingerprint", filters.fingerprint, fingerprints_starting(store, filters.fingerprint))
    missing = [name for name in filters.campaigns if name not in campaign_names(store, filters.campaigns)]
    if missing:
        raise UserError(f"--campaign {missing[0]!r}: no results or campaign of that name (wirewise results --group-by campaign lists them)")
    return Filters(**{**asdict(filters), **changes})


def unique_prefix(option: str, prefix: str, known) -> str:
    """The one known value starting with `prefix`; a clear error for none or several."""
    matches = sorted({value for value in known if value.startswith(prefix)})
    if len(matches) == 1:
        return matches[0]
    if not matches:
        choices = f" (choose among {', '.join(sorted(set(known)))})" if known else ""
        raise UserError(f"{option} {prefix!r}: nothing stored starts with that{choices}")
    raise UserError(f"{option} {prefix!r} is ambiguous: {', '.join(_short(m) for m in matches[:6])}{' ...' if len(matches) > 6 else ''}")


def _short(value: str) -> str:
    """Fingerprints (64 hex digits) shortened in messages; other names whole."""
    return value[:16] if len(value) == 64 else value


def fingerprints_starting(store: Store, prefix: str, most: int = 8) -> set[str]:
    """Up to `most` stored fingerprints that start with `prefix`: on each table, index seeks
    from one distinct value to the next (a DISTINCT would walk every row of the wiring)."""
    found: set[str] = set()
    upper = prefix + "\uffff"
    with store.read() as session:
        for column in (TopologyRow.__table__.c.fingerprint, RESULTS.fingerprint):
            after = None
            while len(found) < most:
                floor = column > after if after is not None else column >= prefix
                after = session.scalar(select(func.min(column)).where(floor, column < upper))
                if after is None:
                    break
                found.add(after)
    return found


def campaign_names(store: Store, wanted) -> set[str]:
    """Which of `wanted` name a campaign (planned, or only seen on results)."""
    if not wanted:
        return set()
    with store.read() as session:
        planned = set(session.scalars(select(CAMPAIGNS.name).where(CAMPAIGNS.name.in_(wanted))))
        seen = set(session.scalars(select(RESULTS.campaign).where(RESULTS.campaign.in_(wanted)).distinct()))
    return planned | seen


# -- the query -----------------------------------------------------------------------
def facts(store: Store, filters: Filters) -> list[dict[str, Any]]:
    """Every stored row that matches, as a dict of what reports use (see _EMPTY_FACT)."""
    columns = [*_COMMON, *(c for workload in workloads(filters) for c in _WORKLOAD_COLUMNS[workload])]
    # No ORDER BY in SQL: SQLite would then pick the index that spares it a sort (ix_results_op
    # for a fabric and an op) over the selective one, and read four times the rows.
    query = select(*columns).where(*conditions(filters))
    with store.read() as session:
        result = session.connection().execute(query)  # Core rows: no ORM layer per row
        keys = list(result.keys())
        rows = result.all()
    groups = GroupLookup(store)
    found = [_fact(zip(keys, row), groups) for row in rows]
    if filters.placement is not None:
        found = [f for f in found if f["placement"] == filters.placement]
    return sorted(found, key=itemgetter("id"))


def workloads(f: Filters) -> tuple[str, ...]:
    """The workloads whose rows the filters can let through (an op or a size only collectives
    have; a model or a strategy only training runs)."""
    if f.workload is not None:
        return (f.workload,)
    if f.op is not None or f.bytes is not None:
        return ("collective",)
    if f.model is not None or f.strategy is not None:
        return ("train",)
    return WORKLOADS


def conditions(f: Filters) -> list:
    """The filters as SQL conditions (the derived placement is checked after the query)."""
    equal = {
        RESULTS.fabric: f.fabric, RESULTS.fingerprint: f.fingerprint, RESULTS.node: f.node,
        RESULTS.workload: f.workload, RESULTS.op: f.op, RESULTS.bytes: f.bytes, RESULTS.model: f.model,
        RESULTS.strategy: f.strategy, RESULTS.source: f.source, RESULTS.status: f.status,
    }
    conditions = [column == value for column, value in equal.items() if value is not None]
    if f.gpus is not None:
        conditions.append(RANKS == f.gpus)
    if f.placement is not None:  # where a campaign recorded it; derived ones are checked after
        conditions.append((RECORDED_PLACEMENT == f.placement) | RECORDED_PLACEMENT.is_(None))
    if f.transport is not None:
        conditions.append(TRANSPORT == f.transport)
    if f.since is not None:
        conditions.append(RESULTS.started_at >= f.since)
    if f.campaigns:
        conditions.append(RESULTS.campaign.in_(f.campaigns))
    if not f.include_cpu:  # an unknown GPU count (NULL) is still a GPU run
        conditions.append(or_(RESULTS.gpu_count > 0, RESULTS.gpu_count.is_(None)))
    return conditions


def _fact(row, groups: GroupLookup) -> dict[str, Any]:
    """One row's (column, value) pairs as a fact."""
    fact = dict(_EMPTY_FACT)
    fact.update(row)
    gpu_list = fact.pop("gpu_list")
    fact["device"] = "cpu" if fact["gpu_count"] == 0 else "gpu"
    fact["gpus"] = None if fact["gpu_count"] is None else fact["gpu_count"] or fact["world_size"] or 0
    fact["placement"] = groups.placement(
        fact.pop("recorded_placement"), fact["node"], fact["fingerprint"], fact["gpu_count"], gpu_list,
    )
    peaks = _json(fact["peak_mem_bytes"])
    fact["peak_mem_bytes"] = max(peaks) if peaks else None
    return fact


@dataclass
class GroupLookup:
    """NVLink groups per (node, fingerprint), in the node's own GPU numbering, read once."""

    store: Store
    _groups: dict[tuple[str | None, str], list[list[int]] | None] = field(default_factory=dict)
    _placements: dict[tuple, str | None] = field(default_factory=dict)
    _loaded: bool = False

    def placement(self, recorded: str | None, node: str | None, fingerprint: str | None, gpu_count: int | None,
                  gpu_list: str | None) -> str | None:
        """The placement a run recorded; else 'packed' (every GPU in one NVLink group) or
        'spread' (across groups) from the node's wiring; None when it cannot be told (one GPU
        or none, no wiring stored, a wiring without disjoint groups). `gpu_list` is the GPUs
        used as JSON text (GPU_LIST), decoded only here."""
        if recorded is not None:
            return recorded
        if not gpu_count or gpu_count < 2 or fingerprint is None:
            return None
        key = (node, fingerprint, gpu_list)
        if key not in self._placements:  # a history repeats few GPU sets: decode and test each once
            self._placements[key] = self._classify(node, fingerprint, json.loads(gpu_list))
        return self._placements[key]

    def _classify(self, node: str | None, fingerprint: str, gpus: list[int]) -> str | None:
        groups = self.groups(node, fingerprint)
        if not groups:
            return None
        return "packed" if any(set(gpus) <= set(group) for group in groups) else "spread"

    def groups(self, node: str | None, fingerprint: str) -> list[list[int]] | None:
        if not self._loaded:
            self._load()
        return self._groups.get((node, fingerprint), self._groups.get((None, fingerprint)))

    def _load(self) -> None:
        from wirewise.orchestrator.store.topology import node_groups

        self._loaded = True
        with self.store.read() as session:
            seen = session.execute(
                select(NodeRow.name, TopologyRow, NodeTopologyRow.details)
                .join(NodeTopologyRow, NodeTopologyRow.node_id == NodeRow.id)
                .join(TopologyRow, TopologyRow.id == NodeTopologyRow.topology_id)
            ).all()
            for node, topology, details in seen:
                self._groups[(node, topology.fingerprint)] = node_groups(details, topology)
                self._groups.setdefault((None, topology.fingerprint), topology.parsed.get("groups"))
