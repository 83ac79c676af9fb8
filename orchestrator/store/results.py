"""The results table: storing records, and every query that reads them back.

`Filters` is what a report asks for; `_where` turns it into SQL once for every read, so a
filter means the same in results, compare, report and doctor. Filters that are columns go
into SQL (indexed, see db/versions/0004); the placement class, derived from the GPUs and the
node's wiring where a campaign did not record it, is the report's to check after the query.

Runs on CPU ranks (gloo; their records name no GPU, gpu_count 0) measure the host, not the
fabric their rows are fingerprinted with: they stay out unless `include_cpu` asks for them.
An imported log that did not say how many GPUs ran has gpu_count NULL: a GPU run whose
`gpus` is None (unknown), matched by no `--gpus N`.

A missing metric is None on every read, on both databases: SQLite stores a NaN as NULL, and
PostgreSQL's NaN is read as NULL (Dialect.number); aggregates gather present values only
(Dialect.exact_text leaves NULL out, where SQLite's printf alone would write '0.0').
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from operator import itemgetter
from typing import TYPE_CHECKING, Any

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
    made whole first (wirewise.orchestrator.report.query: parse_filters, resolve)."""

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


# -- SQL of the derived fields, written once for filters, rows and groups ---------------------
# Every read derives a run's GPUs and what ran it here, in SQL, and nowhere else: results'
# groups and filters, and the rows the report's facts are made of (result_rows).
# GPUs, or ranks for CPU runs (gpu_count 0); where the GPU count went unsaid (gpu_count NULL),
# the rank count (one rank per GPU), NULL where that is unsaid too (an imported log without ranks)
RANKS = "CASE WHEN gpu_count IS NULL THEN world_size ELSE coalesce(nullif(gpu_count, 0), world_size, 0) END"
GPU_LIST = "CAST(gpus AS VARCHAR)"  # the GPUs as JSON text: PostgreSQL can neither group nor compare json
NODE_LIST = "CAST(nodes AS VARCHAR)"  # a task's nodes as JSON text, for the same reason


def _transport(d: Dialect) -> str:
    return f"coalesce({d.json_text('params', 'transport')}, 'default')"


def _recorded_placement(d: Dialect) -> str:
    """The placement a campaign recorded; NULL where the report derives it."""
    return d.json_text("params", "placement")


# What ran it: 'cpu' for CPU ranks (gpu_count 0), else 'gpu', an unknown count (NULL) too (a
# report's key, not a --group-by field)
DEVICE = "CASE WHEN gpu_count = 0 THEN 'cpu' ELSE 'gpu' END"
GROUP_FIELDS = ("source", "campaign", "node", "node_count", "nodes", "fingerprint", "fabric", "op", "dtype", "in_place",
                "bytes", "model", "strategy", "gpus", "placement", "transport", "task_id")


def _field_sql(d: Dialect) -> dict[str, str]:
    """Each field results can be grouped by, and status (always part of a group), as SQL
    (placement: where recorded); the others are the columns of their name."""
    derived = {"gpus": RANKS, "nodes": NODE_LIST, "placement": _recorded_placement(d), "transport": _transport(d)}
    return {**{name: derived.get(name, name) for name in (*GROUP_FIELDS, "status")}, "device": DEVICE}
# What a run that did not record its placement is placed by: the node's wiring and its GPUs.
_UNRECORDED = {"node": "node", "fingerprint": "fingerprint", "gpu_count": "gpu_count", "gpu_list": GPU_LIST}


def _where(f: Filters, p: Params) -> list[str]:
    """The filters as SQL conditions, their values bound through `p` (the derived placement is
    the report's to check)."""
    d = p.dialect
    equal = {
        "fabric": f.fabric, "fingerprint": f.fingerprint, "node": f.node, "workload": f.workload, "op": f.op,
        "bytes": f.bytes, "model": f.model, "strategy": f.strategy, "source": f.source, "status": f.status,
    }
    found = [f"{column} = {p(value)}" for column, value in equal.items() if value is not None]
    if f.gpus is not None:
        found.append(f"{RANKS} = {p(f.gpus)}")
    if f.placement is not None:  # where a campaign recorded it; derived ones are checked after
        placement = _recorded_placement(d)
        found.append(f"({placement} = {p(f.placement)} OR {placement} IS NULL)")
    if f.transport is not None:
        found.append(f"{_transport(d)} = {p(f.transport)}")
    if f.since is not None:
        found.append(f"started_at >= {p(d.moment(f.since))}")
    if f.campaigns:
        found.append(f"campaign IN ({p.each(f.campaigns)})")
    if not f.include_cpu:  # an unknown GPU count (NULL) is still a GPU run
        found.append("(gpu_count > 0 OR gpu_count IS NULL)")
    return found


def _and(conditions: list[str]) -> str:
    return " AND ".join(conditions) or "1 = 1"


# -- one row per result ----------------------------------------------------------------------
# What a row holds: the columns read, the GPUs as JSON text (gpu_list), their count or the CPU
# ranks' (gpus: RANKS), what ran it (device: DEVICE) and the placement where recorded. A
# workload's metric columns are read only when the filters let its rows through: on a wide
# match, every column read costs (a collective query over 1M rows reads a third less).
_COMMON = ("id", "workload", "source", "status", "campaign", "node", "fingerprint", "fabric", "gpu_list", "gpu_count",
           "world_size", "gpus", "device", "started_at", "task_id", "transport", "recorded_placement")
_WORKLOAD_COLUMNS = {
    "collective": ("op", "bytes", "dtype", "in_place", "time_us", "algbw_gbs", "busbw_gbs"),
    "train": ("model", "strategy", "tokens_per_s", "step_time_s", "samples_per_s", "peak_mem_bytes", "mfu"),
}
ROW_FIELDS = _COMMON + tuple(name for columns in _WORKLOAD_COLUMNS.values() for name in columns)


def _column_sql(name: str, d: Dialect) -> str:
    derived = {"gpu_list": GPU_LIST, "gpus": RANKS, "device": DEVICE, "transport": _transport(d),
               "recorded_placement": _recorded_placement(d)}
    if name in derived:
        return f"{derived[name]} AS {name}"
    if name in NUMBER_COLUMNS:
        return f"{d.number(name)} AS {name}"
    if name == "peak_mem_bytes":
        return f"CAST({name} AS VARCHAR) AS {name}"  # JSON text on both databases, decoded below
    return name


def result_rows(store: Store, filters: Filters) -> list[dict[str, Any]]:
    """Every stored result that matches, in id order, as a dict of ROW_FIELDS (None where its
    workload has none); peak_mem_bytes is the list of each rank's peak, started_at a datetime
    with its zone (Dialect.when)."""
    names = [*_COMMON, *(name for workload in filters.workloads() for name in _WORKLOAD_COLUMNS[workload])]
    with store.read() as db:
        p = db.params()
        # No ORDER BY in SQL: SQLite would then pick the index that spares it a sort (ix_results_op
        # for a fabric and an op) over the selective one, and read four times the rows.
        sql = f"SELECT {', '.join(_column_sql(name, db.dialect) for name in names)} FROM results WHERE {_and(_where(filters, p))}"
        rows = db.rows(sql, p)
        when = db.dialect.when
    empty = dict.fromkeys(ROW_FIELDS)
    found = []
    for row in rows:
        values = dict(empty)
        values.update(zip(names, row))
        if values["peak_mem_bytes"] is not None:
            values["peak_mem_bytes"] = json.loads(values["peak_mem_bytes"])
        if values["in_place"] is not None:
            values["in_place"] = bool(values["in_place"])
        values["started_at"] = when(values["started_at"])
        found.append(values)
    return sorted(found, key=itemgetter("id"))


# -- one row per group -----------------------------------------------------------------------
def grouped(store: Store, filters: Filters, workload: str, fields: tuple[str, ...], metrics: tuple[str, ...],
            unrecorded: bool) -> list[dict[str, Any]]:
    """GROUP BY over the `workload` results that match: per group, its `fields`, "status",
    "count", and each metric's present values (a list of numbers; for peak_mem_bytes, each
    run's list of per-rank peaks). With `unrecorded`, "placement" is the recorded one and the
    groups without it split further by what derives it (unrecorded_node, unrecorded_fingerprint,
    unrecorded_gpu_count, unrecorded_gpu_list; None where recorded).

    Sorting the rows into groups is most of a wide query's time (34,000 rows of the benchmark:
    the sort of nine keys doubles the time of the scan), so the sort gets as few keys as can
    vary: a field the filters fix is no key (its value is the filter's), and the keys that
    derive the placement are added only in a second query, over the rows that recorded none."""
    constant = _fixed(filters)
    fields = (*fields, *(("placement",) if unrecorded and "placement" not in fields else ()), "status")
    keys = [name for name in fields if name not in constant]
    with store.read() as db:
        found = _grouped(db, filters, workload, keys, metrics, split=False)
        if unrecorded and any(group["placement"] is None for group in found):
            found = [group for group in found if group["placement"] is not None]
            found += _grouped(db, filters, workload, keys, metrics, split=True)
    for group in found:
        group.update({name: value for name, value in constant.items() if name in fields})
        for name in _UNRECORDED:
            group.setdefault(f"unrecorded_{name}", None)
        if group.get("in_place") is not None:
            group["in_place"] = bool(group["in_place"])
        if "nodes" in group:  # a tuple, so that groups of the same nodes merge (JSON text differs in spacing)
            group["nodes"] = tuple(json.loads(group["nodes"]))
        for metric in metrics:
            group[metric] = _values(metric, group[metric])
    return found


def _fixed(f: Filters) -> dict[str, Any]:
    """The group fields whose value the filters fix (an equality on the field's own SQL)."""
    fixed = {"fabric": f.fabric, "fingerprint": f.fingerprint, "node": f.node, "op": f.op, "bytes": f.bytes,
             "model": f.model, "strategy": f.strategy, "source": f.source, "status": f.status, "gpus": f.gpus,
             "transport": f.transport, "campaign": f.campaigns[0] if len(f.campaigns) == 1 else None}
    return {name: value for name, value in fixed.items() if value is not None}


def _grouped(db: Reader, filters: Filters, workload: str, fields: list[str], metrics: tuple[str, ...], split: bool) -> list[dict]:
    """One GROUP BY of `fields` (and, with `split`, of what derives the placement, over the rows
    that recorded none)."""
    d, p = db.dialect, db.params()
    field_sql = _field_sql(d)
    keys = {name: field_sql[name] for name in fields}
    conditions = [*_where(filters, p), f"workload = {p(workload)}"]
    if split:
        conditions.append(f"{_recorded_placement(d)} IS NULL")
        keys.update({f"unrecorded_{name}": column for name, column in _UNRECORDED.items()})
    selected = [f"{sql} AS {name}" for name, sql in keys.items()] + ["count(*) AS count"]
    selected += [f"{_gathered(metric, d)} AS {metric}" for metric in metrics]
    # GROUP BY the expressions, not their labels: PostgreSQL reads "gpus" as the column. With
    # every field fixed there is one group, or none: HAVING drops the row of an empty match.
    group = f"GROUP BY {', '.join(keys.values())}" if keys else "HAVING count(*) > 0"
    rows = db.rows(f"SELECT {', '.join(selected)} FROM results WHERE {_and(conditions)} {group}", p)
    names = [*keys, "count", *metrics]
    return [dict(zip(names, row)) for row in rows]


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
        planned = db.column(f"SELECT name FROM campaigns WHERE name IN ({p.each(wanted)})", p)
        p = db.params()
        seen = db.column(f"SELECT DISTINCT campaign FROM results WHERE campaign IN ({p.each(wanted)})", p)
    return set(planned) | set(seen)


def has_results_on(store: Store, node: str) -> bool:
    with store.read() as db:
        p = db.params()
        return db.scalar(f"SELECT id FROM results WHERE node = {p(node)} LIMIT 1", p) is not None


def stored_figures(store: Store, source: str, ops: set[str], sizes: set[int]) -> set[tuple]:
    """(op, bytes, count, dtype, in_place, time_us, algbw_gbs, busbw_gbs) of the stored rows of
    `source` with those ops and sizes: what an excerpt of an nccl-tests log that names no run
    can be matched by (wirewise.orchestrator.record.nccl_tests)."""
    with store.read() as db:
        p = db.params()
        rows = db.rows(
            "SELECT op, bytes, count, dtype, in_place, time_us, algbw_gbs, busbw_gbs FROM results "
            f"WHERE source = {p(source)} AND op IN ({p.each(ops) or 'NULL'}) AND bytes IN ({p.each(sizes) or 'NULL'})", p,
        )
        flag = db.dialect.flag
    return {(op, size, count, dtype, flag(in_place), *figures) for op, size, count, dtype, in_place, *figures in rows}


def too_long(row: dict) -> str | None:
    """What in a result row is wider than its text column: PostgreSQL refuses a longer value
    (SQLite would keep it), so both refuse it, in words."""
    from wirewise.orchestrator.store.schema import RESULTS

    for column in RESULTS.columns:
        width, value = getattr(column.type, "length", None), row.get(column.name)
        if width and isinstance(value, str) and len(value) > width:
            return f"{column.name} of {len(value)} characters, longer than the {width} the store keeps"
    return None


def ok_results(store: Store, columns: tuple[str, ...], present: tuple[str, ...] = (), **equal: Any) -> list[tuple]:
    """The `columns` of every ok result whose columns `equal` the values given (a tuple: any of
    its values) and whose `present` columns hold a value (not NULL, not NaN); JSON columns
    decoded."""
    with store.read() as db:
        d, p = db.dialect, db.params()
        conditions = ["status = 'ok'", *(
            f"{name} IN ({p.each(value) or 'NULL'})" if isinstance(value, tuple) else f"{name} = {p(value)}"
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
    stmt = insert(RESULTS).values(rows).on_conflict_do_nothing(index_elements=["record_id"])
    return len(session.execute(stmt.returning(RESULTS.c.record_id)).all())
