"""The results table: storing records, and every query that reads them back.

`Filters` is what a report asks for; `_where` turns it into SQL once for every read, so a
filter means the same in results, compare, report and doctor. Every filter and group field is
a stored column (the case's fields are derived once, when a record is stored: wirewise.case,
store/cases.py), indexed where a selective filter needs it (db/versions/0004, 0010).

Runs on CPU ranks (gloo; the case's device is cpu) measure the host, not the fabric their rows
are fingerprinted with: they stay out unless `include_cpu` asks for them, and the grouped reads
count what they left out. An imported log that did not say how many GPUs ran has ranks NULL,
matched by no `--gpus N`.

A missing metric is None on every read, on both databases: SQLite stores a NaN as NULL, and
PostgreSQL's NaN is read as NULL (Dialect.number); aggregates gather present values only
(Dialect.exact_text leaves NULL out, where SQLite's printf alone would write '0.0').
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from functools import cache
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from wirewise.case import ALL_CASE_FIELDS, CASE_FIELDS
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.read import UPPERMOST, Dialect, Params, Reader

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

WORKLOADS = ("collective", "train")
SOURCES = ("wirewise", "nccl-tests", "job")
STATUSES = ("ok", "oom", "failed", "timeout", "cancelled")
# How the columns that are not plain numbers or text come back from SQLite (schema.RESULTS has
# the types; tests/store checks these against it).
JSON_COLUMNS = frozenset({"params", "nodes", "node_fingerprints", "gpus", "versions", "env", "peak_mem_bytes",
                          "model_state_bytes", "extra"})
FLAG_COLUMNS = frozenset({"in_place", "cuda_graph", "compile"})
NUMBER_COLUMNS = frozenset({"time_us", "algbw_gbs", "busbw_gbs", "step_time_s", "samples_per_s", "tokens_per_s", "mfu"})


@dataclass(frozen=True)
class Filters:
    """Which results to read. Filters from the command line are checked and their prefixes
    made whole first (wirewise.orchestrator.results.filters: parse_filters, resolve)."""

    fabric: str | None = None
    fingerprint: str | None = None
    node: str | None = None
    workload: str | None = None
    op: str | None = None
    bytes: int | None = None
    model: str | None = None
    strategy: str | None = None
    gpus: int | None = None
    placement: str | None = None  # asked (a campaign's policy, a pair test's label)
    geometry: str | None = None  # got (wirewise.case.geometry_of)
    scope: str | None = None  # the fabric between the nodes (wirewise.case.scope_of)
    transport: str | None = None
    source: str | None = None
    status: str | None = None
    since: datetime | None = None
    campaigns: tuple[str, ...] = ()
    include_cpu: bool = False
    case_key: str | None = None  # one case (wirewise.case.case_key), as a judgement of what was just measured asks
    newest: int | None = None  # only the newest that many (by start), read on the (fingerprint, case, start) index

    def asked(self) -> dict[str, Any]:
        """The filters given, for JSON output."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items() if v not in (None, (), False)}

    def workloads(self) -> tuple[str, ...]:
        """The workloads whose rows the filters can let through (an op or a size only collectives
        have; a model or a strategy only training runs)."""
        if self.workload is not None:
            return (self.workload,)
        if self.op is not None or self.bytes is not None:
            return ("collective",)
        if self.model is not None or self.strategy is not None:
            return ("train",)
        return WORKLOADS


# -- SQL of the fields, written once for filters, rows and groups -----------------------------
# The case's fields are columns, derived once when a record is stored (wirewise.case,
# store/cases.py): a filter or a group reads them as they are. What a run's ranks and its device
# are is the case's rule (wirewise.case.ranks_of, device_of), not the SQL's.
NODE_LIST = "CAST(nodes AS VARCHAR)"  # a task's nodes as JSON text: PostgreSQL can neither group nor compare json

# What results can be grouped by: where and by what it ran, every case field, the placement asked.
GROUP_FIELDS = tuple(dict.fromkeys(("source", "campaign", "node", "nodes", "fingerprint", "fabric", *ALL_CASE_FIELDS,
                                    "placement", "task_id")))
FLAG_FIELDS = frozenset(name for name in GROUP_FIELDS if name in FLAG_COLUMNS)


def _field_sql(name: str) -> str:
    """A group field (or status) as SQL: its column; a task's nodes as JSON text."""
    return NODE_LIST if name == "nodes" else name


def _where(f: Filters, p: Params) -> list[str]:
    """The filters as SQL conditions on the stored columns, their values bound through `p`;
    CPU-rank runs are left out unless `f.include_cpu` (`grouped` counts them instead)."""
    d = p.dialect
    equal = {
        "fabric": f.fabric, "fingerprint": f.fingerprint, "node": f.node, "workload": f.workload, "op": f.op,
        "bytes": f.bytes, "model": f.model, "strategy": f.strategy, "source": f.source, "status": f.status,
        "placement": f.placement, "geometry": f.geometry, "scope": f.scope, "transport": f.transport, "ranks": f.gpus,
        "case_key": f.case_key,
    }
    found = [f"{column} = {p(value)}" for column, value in equal.items() if value is not None]
    if f.since is not None:
        found.append(f"started_at >= {p(d.moment(f.since))}")
    if f.campaigns:
        found.append(p.among("campaign", f.campaigns))
    if not f.include_cpu:
        found.append("device = 'gpu'")
    return found


def _and(conditions: list[str]) -> str:
    return " AND ".join(conditions) or "1 = 1"


# -- one row per result ----------------------------------------------------------------------
# What a row holds: the columns read, the GPU count or the CPU ranks' (gpus: ranks), the
# placement where recorded, and the case (its key and fields). A workload's metric columns are
# read only when the filters let its rows through: on a wide match, every column read costs (a
# collective query over 1M rows reads a third less).
_COMMON = ("id", "workload", "source", "status", "campaign", "node", "fingerprint", "fabric", "gpu_count",
           "world_size", "gpus", "started_at", "task_id", "recorded_placement", "case_key", "transport_carried",
           *(name for name in CASE_FIELDS["collective"] if name in CASE_FIELDS["train"]))
_WORKLOAD_COLUMNS = {
    workload: (*(name for name in CASE_FIELDS[workload] if name not in _COMMON), *metrics)
    for workload, metrics in (("collective", ("time_us", "algbw_gbs", "busbw_gbs")),
                              ("train", ("tokens_per_s", "step_time_s", "samples_per_s", "peak_mem_bytes", "mfu")))
}
ROW_FIELDS = _COMMON + tuple(name for columns in _WORKLOAD_COLUMNS.values() for name in columns)


def _column_sql(name: str, d: Dialect) -> str:
    derived = {"gpus": "ranks", "recorded_placement": "placement"}
    if name in derived:
        return f"{derived[name]} AS {name}"
    if name in NUMBER_COLUMNS:
        return f"{d.number(name)} AS {name}"
    if name == "peak_mem_bytes":
        return f"CAST({name} AS VARCHAR) AS {name}"  # JSON text on both databases, decoded below
    return name


def select_rows(store: Store, filters: Filters) -> list[dict[str, Any]]:
    """Every stored result that matches, in id order, as a dict of ROW_FIELDS (None where its
    workload has none); peak_mem_bytes is the list of each rank's peak, started_at a datetime
    with its zone (Dialect.when)."""
    names = [*_COMMON, *(name for workload in filters.workloads() for name in _WORKLOAD_COLUMNS[workload])]
    with store.read() as db:
        p = db.params()
        # No ORDER BY in SQL: SQLite would then pick the index that spares it a sort (ix_results_op
        # for a fabric and an op) over the selective one, and read four times the rows.
        sql = f"SELECT {', '.join(_column_sql(name, db.dialect) for name in names)} FROM results WHERE {_and(_where(filters, p))}"
        if filters.newest is not None:
            sql += f" ORDER BY started_at DESC, id DESC LIMIT {p(filters.newest)}"
        rows = db.rows(sql, p)
        when = db.dialect.when
    return as_rows(names, rows, when)


def as_rows(names: list[str], rows: list[tuple], when, ordered: bool = True) -> list[dict[str, Any]]:
    """Rows of the columns `names` (as _column_sql reads them) as select_rows' dicts, in id
    order unless `ordered` is False (then as they came)."""
    empty = dict.fromkeys(ROW_FIELDS)
    found = []
    for row in rows:
        values = dict(empty)
        values.update(zip(names, row))
        if values["peak_mem_bytes"] is not None:
            values["peak_mem_bytes"] = json.loads(values["peak_mem_bytes"])
        for name in FLAG_FIELDS:
            if values.get(name) is not None:
                values[name] = bool(values[name])
        values["started_at"] = when(values["started_at"])
        found.append(values)
    return sorted(found, key=itemgetter("id")) if ordered else found


# -- one row per group -----------------------------------------------------------------------
@dataclass(frozen=True)
class Groups:
    """What `grouped` found: the groups, and how many results the filters matched but left out
    because CPU ranks ran them (without include_cpu)."""

    groups: list[dict[str, Any]]
    cpu_left_out: int


def grouped(store: Store, filters: Filters, workload: str, fields: tuple[str, ...], metrics: tuple[str, ...]) -> Groups:
    """GROUP BY over the `workload` results that match: per group, its `fields`, "status",
    "count", and each metric's present values (a list of numbers; for peak_mem_bytes, each
    run's list of per-rank peaks).

    Sorting the rows into groups is most of a wide query's time (34,000 rows of the benchmark:
    the sort of nine keys doubles the time of the scan), so the sort gets as few keys as can
    vary: a field the filters fix is no key (its value is the filter's), and where the fields
    hold the whole case, its one stored key (case_key) stands for all of them. CPU-rank runs
    are grouped apart by device and counted, not returned, unless include_cpu: the count costs
    no second scan."""
    constant = _fixed(filters)
    fields = (*fields, "status")
    keys = [name for name in fields if name not in constant]
    count_cpu = not filters.include_cpu and filters.gpus != 0
    if count_cpu and "device" not in keys:
        keys.append("device")
    with store.read() as db:
        found = _grouped(db, replace(filters, include_cpu=True) if count_cpu else filters, workload, keys, metrics)
    kept, cpu = [], 0
    for group in found:
        if count_cpu and group["device"] == "cpu":
            cpu += group["count"]
        else:
            kept.append(group)
    for group in kept:
        group.update({name: value for name, value in constant.items() if name in fields})
        if count_cpu and "device" not in fields:
            del group["device"]
        for name in FLAG_FIELDS & set(group):
            if group[name] is not None:
                group[name] = bool(group[name])
        if "nodes" in group:  # a tuple, so that groups of the same nodes merge (JSON text differs in spacing)
            group["nodes"] = tuple(json.loads(group["nodes"]))
        for metric in metrics:
            group[metric] = _values(metric, group[metric])
    return Groups(kept, cpu)


def _fixed(f: Filters) -> dict[str, Any]:
    """The group fields whose value the filters fix (an equality on the field's own column)."""
    fixed = {"fabric": f.fabric, "fingerprint": f.fingerprint, "node": f.node, "op": f.op, "bytes": f.bytes,
             "model": f.model, "strategy": f.strategy, "source": f.source, "status": f.status, "ranks": f.gpus,
             "placement": f.placement, "geometry": f.geometry, "scope": f.scope, "transport": f.transport,
             "campaign": f.campaigns[0] if len(f.campaigns) == 1 else None}
    return {name: value for name, value in fixed.items() if value is not None}


def _grouped(db: Reader, filters: Filters, workload: str, fields: list[str], metrics: tuple[str, ...]) -> list[dict]:
    """One GROUP BY of `fields`; the fields of the whole case by its key."""
    d, p = db.dialect, db.params()
    case = [name for name in CASE_FIELDS[workload] if name in fields]
    by_key = len(case) == len(CASE_FIELDS[workload])
    keys = {name: _field_sql(name) for name in fields if not (by_key and name in case)}
    selected = [f"{sql} AS {name}" for name, sql in keys.items()]
    if by_key:  # one value per key: any row's
        selected += [f"{_any_value(name)} AS {name}" for name in case]
        keys["case_key"] = "case_key"
    selected += ["count(*) AS count", *(f"{_gathered(metric, d)} AS {metric}" for metric in metrics)]
    conditions = [*_where(filters, p), f"workload = {p(workload)}"]
    # GROUP BY the expressions, not their labels. With every field fixed there is one group, or
    # none: HAVING drops the row of an empty match.
    group = f"GROUP BY {', '.join(keys.values())}" if keys else "HAVING count(*) > 0"
    rows = db.rows(f"SELECT {', '.join(selected)} FROM results WHERE {_and(conditions)} {group}", p)
    names = [*(name for name in keys if name != "case_key"), *(case if by_key else ()), "count", *metrics]
    return [dict(zip(names, row)) for row in rows]


def case_values(store: Store, filters: Filters, workload: str, metric: str) -> list[dict[str, Any]]:
    """Per wiring and case of the `workload` results that match and hold `metric`: the
    fingerprint, the case's fields, the metric's values (a list), the distinct nodes and the
    source. One GROUP BY in the database (a baseline per case: baseline export), so what comes
    back is each case's values alone, never a row's other columns: 10 million results are
    about 200 MB of values, not 10 million rows in Python."""
    fields = CASE_FIELDS[workload]
    with store.read() as db:
        d, p = db.dialect, db.params()
        conditions = [*_where(filters, p), f"workload = {p(workload)}", "fingerprint IS NOT NULL",
                      f"{d.number(metric)} IS NOT NULL"]
        rows = db.rows(f"SELECT fingerprint, {', '.join(f'{_any_value(name)} AS {name}' for name in fields)}, "
                       f"count(DISTINCT node), {_gathered(metric, d)} FROM results WHERE {_and(conditions)} "
                       "GROUP BY fingerprint, case_key", p)
    found = []
    for fingerprint, *case, nodes, values in rows:
        row = {"fingerprint": fingerprint, "workload": workload, **dict(zip(fields, case)), "nodes": nodes,
               metric: _values(metric, values)}
        for name in FLAG_FIELDS & set(fields):
            if row[name] is not None:
                row[name] = bool(row[name])
        found.append(row)
    return found


def _any_value(name: str) -> str:
    """The value of a column that is the same on every row of a group (PostgreSQL has no min of
    a boolean: a flag goes through 1 and 0)."""
    if name in FLAG_COLUMNS:
        return f"max(CASE WHEN {name} THEN 1 WHEN NOT {name} THEN 0 END)"
    return f"min({name})"


def _gathered(metric: str, d: Dialect) -> str:
    """A group's present values of `metric`, joined as text: numbers by ',', and the per-rank
    peak memory lists (JSON) by ';'."""
    if metric == "peak_mem_bytes":
        return d.gather("CAST(peak_mem_bytes AS VARCHAR)", ";")
    return d.gather(d.exact_text(metric), ",")


def _values(metric: str, text: str | None) -> list:
    if not text:
        return []
    if metric == "peak_mem_bytes":
        return [ranks for ranks in map(json.loads, text.split(";")) if ranks]
    return [float(value) for value in text.split(",")]


# -- names -----------------------------------------------------------------------------------
def result_wirings(store: Store, filters: Filters) -> set[tuple[str | None, str]]:
    """The (node, fingerprint) pairs of the results that match, for the wiring they ran on (a
    placement filter counts the rows that recorded none, as the SQL of every read does)."""
    with store.read() as db:
        p = db.params()
        sql = f"SELECT DISTINCT node, fingerprint FROM results WHERE {_and([*_where(filters, p), 'fingerprint IS NOT NULL'])}"
        return {(node, fingerprint) for node, fingerprint in db.rows(sql, p)}


def fingerprints_starting(store: Store, prefix: str, most: int = 8) -> set[str]:
    """Up to `most` stored fingerprints (of wirings or of results) that start with `prefix`: on
    each table, index seeks from one distinct value to the next (a DISTINCT would walk every
    row of the wiring)."""
    found: set[str] = set()
    upper = prefix + UPPERMOST
    with store.read() as db:
        for table in ("topologies", "results"):
            after = None
            while len(found) < most:
                p = db.params()
                floor = f"fingerprint > {p(after)}" if after is not None else f"fingerprint >= {p(prefix)}"
                after = db.scalar(f"SELECT min(fingerprint) FROM {table} WHERE {floor} AND fingerprint < {p(upper)}", p)
                if after is None:
                    break
                found.add(after)
    return found


def campaign_names(store: Store, wanted: Iterable[str]) -> set[str]:
    """Which of `wanted` name a campaign (planned, or only seen on results)."""
    wanted = list(wanted)
    if not wanted:
        return set()
    with store.read() as db:
        p = db.params()
        planned = db.column(f"SELECT name FROM campaigns WHERE {p.among('name', wanted)}", p)
        p = db.params()
        seen = db.column(f"SELECT DISTINCT campaign FROM results WHERE {p.among('campaign', wanted)}", p)
    return set(planned) | set(seen)


def stored_cases(store: Store, record_ids: list[str]) -> list[tuple[str, str]]:
    """(fingerprint, case_key) of the stored results of these records, each once."""
    if not record_ids:
        return []
    with store.read() as db:
        p = db.params()
        return sorted(db.rows(f"SELECT DISTINCT fingerprint, case_key FROM results WHERE {p.among('record_id', record_ids)} "
                              "AND fingerprint IS NOT NULL", p))


def has_results_on(store: Store, node: str) -> bool:
    with store.read() as db:
        p = db.params()
        return db.scalar(f"SELECT id FROM results WHERE node = {p(node)} LIMIT 1", p) is not None


def too_long(row: dict) -> str | None:
    """What in a result row is wider than its text column: PostgreSQL refuses a longer value
    (SQLite would keep it), so both refuse it, in words."""
    for name, width in _text_widths():
        value = row.get(name)
        if isinstance(value, str) and len(value) > width:
            return f"{name} of {len(value)} characters, longer than the {width} the store keeps"
    return None


@cache
def _text_widths() -> list[tuple[str, int]]:
    """(column, width) of the results table's bounded text columns."""
    from wirewise.orchestrator.store.schema import RESULTS

    return [(column.name, column.type.length) for column in RESULTS.columns if getattr(column.type, "length", None)]


def ok_results(store: Store, columns: tuple[str, ...], present: tuple[str, ...] = (), **equal: Any) -> list[tuple]:
    """The `columns` of every ok result whose columns `equal` the values given (a tuple: any of
    its values) and whose `present` columns hold a value (not NULL, not NaN); JSON columns
    decoded."""
    return _result_columns(store, columns, ["status = 'ok'"], present, equal)


def results_with(store: Store, columns: tuple[str, ...], **equal: Any) -> list[tuple]:
    """The `columns` of every result, whatever its status, whose columns `equal` the values
    given (a tuple: any of its values); JSON columns decoded."""
    return _result_columns(store, columns, [], (), equal)


def _result_columns(store: Store, columns: tuple[str, ...], conditions: list[str], present: tuple[str, ...],
                    equal: dict[str, Any]) -> list[tuple]:
    with store.read() as db:
        d, p = db.dialect, db.params()
        conditions = [*conditions, *(
            p.among(name, value) if isinstance(value, tuple) else f"{name} = {p(value)}"
            for name, value in equal.items()
        )]
        conditions += [f"{d.number(name) if name in NUMBER_COLUMNS else name} IS NOT NULL" for name in present]
        rows = db.rows(f"SELECT {', '.join(columns)} FROM results WHERE {_and(conditions)}", p)
    decode = [(d.json if name in JSON_COLUMNS else d.flag if name in FLAG_COLUMNS else None) for name in columns]
    return [tuple(value if f is None else f(value) for f, value in zip(decode, row)) for row in rows]


# -- writes ----------------------------------------------------------------------------------
def insert_results(session: Session, rows: list[dict]) -> int:
    """INSERT ... ON CONFLICT (record_id) DO NOTHING, in the dialect's own syntax; returns how
    many rows were new (counted through RETURNING: PostgreSQL reports rowcount -1 for a
    multi-row insert)."""
    if not rows:
        return 0
    from wirewise.orchestrator.store.schema import RESULTS

    if session.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    # executemany with the statement compiled once (SQLAlchemy's insertmanyvalues batches it
    # and keeps RETURNING): a VALUES list of the rows themselves was compiled anew for every
    # call, 500 rows x 41 columns of bind parameters (an nccl-tests log's 7,720 rows: 27 s of 44)
    stmt = insert(RESULTS).on_conflict_do_nothing(index_elements=["record_id"]).returning(RESULTS.c.record_id)
    return len(session.execute(stmt, rows).all())


# -- what a report says was measured -----------------------------------------------------------
@dataclass(frozen=True)
class Span:
    """What the matching results cover: per source how many; the nodes, campaigns and the first
    and last start; and the memory caps (params.memory_limit_gb) of training runs per (model,
    strategy, ranks, status), so an OOM under a cap is not read as one on the whole card."""

    sources: dict[str, int]
    nodes: list[str]
    campaigns: list[str]
    first: datetime | None
    last: datetime | None
    memory_caps: dict[tuple, float]


def span_of(store: Store, filters: Filters) -> Span:
    """Three small GROUP BYs over the results that match (one scan each, no row per result)."""
    with store.read() as db:
        d, p = db.dialect, db.params()
        where = _and(_where(filters, p))
        sources = db.rows(f"SELECT source, count(*), min(started_at), max(started_at) FROM results WHERE {where} GROUP BY source", p)
        places = db.rows(f"SELECT node, campaign FROM results WHERE {where} GROUP BY node, campaign", p)
        cap = d.json_text("params", "memory_limit_gb")
        caps = db.rows(f"SELECT model, strategy, ranks, status, {cap} FROM results WHERE {where} AND workload = 'train' "
                       f"AND {cap} IS NOT NULL GROUP BY model, strategy, ranks, status, {cap}", p)
        when = d.when
    starts = [when(row[2]) for row in sources if row[2] is not None]
    ends = [when(row[3]) for row in sources if row[3] is not None]
    memory_caps: dict[tuple, float] = {}
    for model, strategy, ranks, status, limit in caps:
        memory_caps[(model, strategy, ranks, status)] = min(float(limit), memory_caps.get((model, strategy, ranks, status), float("inf")))
    return Span(
        sources={source: count for source, count, _first, _last in sources},
        nodes=sorted({node for node, _campaign in places if node}),
        campaigns=sorted({campaign for _node, campaign in places if campaign}),
        first=min(starts, default=None), last=max(ends, default=None), memory_caps=memory_caps,
    )
