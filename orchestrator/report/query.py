"""Read results back: filters checked and resolved, one query, one fact per stored row.

Every command of the report stage (results, compare, report, doctor) reads through `facts`,
so a filter means the same everywhere. Filters that are columns go into SQL (indexed, see
db/versions/0004); the placement class, derived from the GPUs and the node's wiring where a
campaign did not record it, is filtered after the query.

Runs on CPU ranks (gloo; their records name no GPU, gpu_count 0) measure the host, not the
fabric their rows are fingerprinted with: they stay out unless `include_cpu` asks for them.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import String, func, select, type_coerce

from wirewise.errors import UserError
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.models import CampaignRow, NodeRow, NodeTopologyRow, ResultRow, TopologyRow

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


# What one fact holds: the columns read, then the derived fields (gpus: GPUs or, for CPU
# ranks, ranks; device: gpu or cpu; placement; transport; peak_mem_bytes: the largest rank's).
_COLUMNS = (
    ResultRow.id, ResultRow.workload, ResultRow.source, ResultRow.status, ResultRow.campaign, ResultRow.node,
    ResultRow.fingerprint, ResultRow.fabric, _raw(ResultRow.gpus).label("gpu_list"), ResultRow.gpu_count,
    ResultRow.world_size, _raw(ResultRow.started_at).label("started_at"), ResultRow.task_id,
    ResultRow.op, ResultRow.bytes, ResultRow.dtype, ResultRow.in_place,
    ResultRow.time_us, ResultRow.algbw_gbs, ResultRow.busbw_gbs,
    ResultRow.model, ResultRow.strategy, ResultRow.tokens_per_s, ResultRow.step_time_s, ResultRow.samples_per_s,
    _raw(ResultRow.peak_mem_bytes).label("peak_mem_bytes"), ResultRow.mfu,
    ResultRow.params["transport"].as_string().label("transport"),
    ResultRow.params["placement"].as_string().label("recorded_placement"),
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


def parse_filters(**options: Any) -> Filters:
    """Filters from command-line text: sizes ('1G'), dates ('2026-11-30', '7d') and choices checked."""
    from wirewise.workloads.collective import parse_size

    for name, choices in (("workload", WORKLOADS), ("source", SOURCES), ("status", STATUSES)):
        if options.get(name) is not None and options[name] not in choices:
            raise UserError(f"--{name} {options[name]!r}: choose one of {', '.join(choices)}")
    if options.get("bytes") is not None:
        try:
            options["bytes"] = parse_size(options["bytes"])
        except ValueError as exc:
            raise UserError(f"--bytes {options['bytes']!r}: {exc}") from None
    if options.get("since") is not None:
        options["since"] = parse_since(options["since"])
    options["campaigns"] = tuple(options.get("campaigns") or ())
    return Filters(**options)


_AGE = re.compile(r"^(\d+)([dhm])$")


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """'2026-11-30', '2026-11-30T12:00[+01:00]' or an age ('7d', '12h', '30m'), as UTC."""
    text = text.strip()
    age = _AGE.match(text)
    if age:
        unit = {"d": "days", "h": "hours", "m": "minutes"}[age.group(2)]
        return (now or datetime.now(timezone.utc)) - timedelta(**{unit: int(age.group(1))})
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise UserError(f"--since {text!r}: give a date (2026-11-30), a time (2026-11-30T12:00) or an age (7d, 12h, 30m)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc)


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
    with store.session() as session:
        for column in (TopologyRow.fingerprint, ResultRow.fingerprint):
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
    with store.session() as session:
        planned = set(session.scalars(select(CampaignRow.name).where(CampaignRow.name.in_(wanted))))
        seen = set(session.scalars(select(ResultRow.campaign).where(ResultRow.campaign.in_(wanted)).distinct()))
    return planned | seen


# -- the query -----------------------------------------------------------------------
def facts(store: Store, filters: Filters) -> list[dict[str, Any]]:
    """Every stored row that matches, as a dict of what reports use (see _COLUMNS)."""
    query = select(*_COLUMNS).where(*_conditions(filters)).order_by(ResultRow.id)
    with store.session() as session:
        result = session.connection().execute(query)  # Core rows: no ORM layer per row
        keys = list(result.keys())
        rows = result.all()
    groups = GroupLookup(store)
    found = [_fact(dict(zip(keys, row)), groups) for row in rows]
    if filters.placement is not None:
        found = [f for f in found if f["placement"] == filters.placement]
    return found


def _conditions(f: Filters) -> list:
    equal = {
        ResultRow.fabric: f.fabric, ResultRow.fingerprint: f.fingerprint, ResultRow.node: f.node,
        ResultRow.workload: f.workload, ResultRow.op: f.op, ResultRow.bytes: f.bytes, ResultRow.model: f.model,
        ResultRow.strategy: f.strategy, ResultRow.source: f.source, ResultRow.status: f.status,
    }
    conditions = [column == value for column, value in equal.items() if value is not None]
    if f.gpus is not None:
        conditions.append(_ranks_column() == f.gpus)
    if f.placement is not None:  # where a campaign recorded it; derived ones are checked after
        recorded = ResultRow.params["placement"].as_string()
        conditions.append((recorded == f.placement) | recorded.is_(None))
    if f.transport is not None:
        conditions.append(func.coalesce(ResultRow.params["transport"].as_string(), "default") == f.transport)
    if f.since is not None:
        conditions.append(ResultRow.started_at >= f.since)
    if f.campaigns:
        conditions.append(ResultRow.campaign.in_(f.campaigns))
    if not f.include_cpu:
        conditions.append(ResultRow.gpu_count > 0)
    return conditions


def _ranks_column():
    """GPUs used, or ranks for CPU runs (which use no GPU)."""
    return func.coalesce(func.nullif(ResultRow.gpu_count, 0), ResultRow.world_size, 0)


def _fact(fact: dict[str, Any], groups: GroupLookup) -> dict[str, Any]:
    gpu_list = fact.pop("gpu_list")
    fact["device"] = "gpu" if fact["gpu_count"] else "cpu"
    fact["gpus"] = fact["gpu_count"] or fact["world_size"] or 0
    fact["transport"] = fact["transport"] or "default"
    recorded = fact.pop("recorded_placement")
    fact["placement"] = recorded or groups.placement(fact["node"], fact["fingerprint"], fact["gpu_count"], gpu_list)
    peaks = _json(fact["peak_mem_bytes"])
    fact["peak_mem_bytes"] = max(peaks) if peaks else None
    return fact


@dataclass
class GroupLookup:
    """NVLink groups per (node, fingerprint), in the node's own GPU numbering, read once."""

    store: Store
    _groups: dict[tuple[str | None, str], list[list[int]] | None] = field(default_factory=dict)
    _loaded: bool = False

    def placement(self, node: str | None, fingerprint: str | None, gpu_count: int, gpu_list) -> str | None:
        """'packed': every GPU in one NVLink group; 'spread': across groups; None when it cannot
        be told (one GPU or none, no wiring stored, a wiring without disjoint groups).
        `gpu_list` is the stored JSON of the GPUs used (decoded only here)."""
        if gpu_count < 2 or fingerprint is None:
            return None
        gpus = _json(gpu_list)
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
        with self.store.session() as session:
            seen = session.execute(
                select(NodeRow.name, TopologyRow, NodeTopologyRow.details)
                .join(NodeTopologyRow, NodeTopologyRow.node_id == NodeRow.id)
                .join(TopologyRow, TopologyRow.id == NodeTopologyRow.topology_id)
            ).all()
            for node, topology, details in seen:
                self._groups[(node, topology.fingerprint)] = node_groups(details, topology)
                self._groups.setdefault((None, topology.fingerprint), topology.parsed.get("groups"))
