"""Baselines: what a node type (a fingerprint) is expected to measure, per case.

A case is the one definition of the contract (wirewise.case, docs/results.md "The case"):
every setting that decides a figure (for collectives source, op, dtype, reduction and root,
size, in place or not, CUDA graph or eager, transport, device, ranks, nodes and ranks per node,
geometry; for training source, model, strategy, precision, engine, compile, micro-batch,
sequence length and the same shape), so a bf16 sweep, a PCIe run, a 2-node run or an imported
nccl-tests log is never part of another case's baseline. A baseline is a fingerprint and a
case: the median of every ok result of the case on that wiring and its scaled MAD (`scaled_mad`:
1.4826 x the median absolute deviation, in the metric's unit: a normal distribution's standard
deviation, robust to the odd outlier), over repeats and nodes, with how many results and nodes it rests on and from which
source.

`wirewise baseline export` writes them to a file, `baseline import` stores a file's baselines,
so a node type's expected figures travel to a cluster that has no history of it yet. Judging
prefers the history (once it rests on `min_results` results) over an imported baseline.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

from wirewise.case import CASE_FIELDS, with_scope
from wirewise.case import case_key as contract_case_key

MAD_TO_SIGMA = 1.4826  # a normal distribution's sigma from its median absolute deviation
FORMAT = "wirewise-baselines"
# 4: the case holds `scope`; 3: `scaled_mad` (2 named it `spread`, a relative range elsewhere); 2: wirewise.case's case
VERSION = 4
READS = (2, 3, 4)  # version 1's cases lacked precision, nodes, CUDA graph, source ...: not one case of today's
RENAMED = {2: {"spread": "scaled_mad"}}  # an older version's entry keys, as this version names them
METRIC = {"collective": "busbw_gbs", "train": "tokens_per_s"}  # what is judged, per workload
# The newest results of a case on a wiring that a bounded baseline rests on (the prolog's, and
# what `db prune --keep-baselines` keeps): a median of this many stands within 3% of one
# result's standard deviation of the whole history's (a median's standard error is
# 1.2533 sigma / sqrt(n): 2.8% at 2,000), and reading them is one index range (db/versions/0012).
BASELINE_RESULTS = 2_000


def case_of(row: dict[str, Any]) -> dict[str, Any]:
    """A result row's case (result rows hold the stored case fields)."""
    return {name: row[name] for name in CASE_FIELDS[row["workload"]]}


def case_key(workload: str, case: dict[str, Any]) -> tuple:
    """(workload, the contract's key of the case): what a baseline and a result row are matched by."""
    return (workload, contract_case_key(workload, case))


@dataclass
class Baseline:
    fingerprint: str
    workload: str
    case: dict[str, Any]
    metric: str
    median: float
    scaled_mad: float  # 1.4826 x MAD in the metric's unit: one result's robust standard deviation, over repeats and nodes
    results: int
    nodes: int
    sources: dict[str, int] = field(default_factory=dict)
    origin: str = "history"  # or the file it was imported from

    @property
    def key(self) -> tuple:
        return (self.fingerprint, *case_key(self.workload, self.case))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def scaled_mad(values: list[float], median: float | None = None) -> float:
    """1.4826 x the median absolute deviation of `values` (from `median`, default theirs): a
    normal distribution's standard deviation, in the values' unit."""
    median = statistics.median(values) if median is None else median
    return MAD_TO_SIGMA * statistics.median(abs(v - median) for v in values)


def summarize(fingerprint: str, workload: str, case: dict[str, Any], members: list[dict[str, Any]],
              origin: str = "history") -> Baseline:
    """The baseline of a case from its results (result rows with the case's metric)."""
    metric = METRIC[workload]
    values = [m[metric] for m in members]
    median = statistics.median(values)
    sources: dict[str, int] = defaultdict(int)
    for m in members:
        sources[m["source"]] += 1
    return Baseline(fingerprint, workload, case, metric, median, scaled_mad(values, median), len(values),
                    len({m["node"] for m in members}), dict(sorted(sources.items())), origin)


def group_by_case(rows: Iterable[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    """ok results with a fingerprint and their metric, by (fingerprint, workload, case...)."""
    cases: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["status"] != "ok" or not row["fingerprint"] or row["workload"] not in METRIC:
            continue
        if row[METRIC[row["workload"]]] is None:
            continue
        cases[(row["fingerprint"], row["workload"], row["case_key"])].append(row)
    return cases


def stored_baselines(store, filters) -> list[Baseline]:
    """Every case's baseline from the history that `filters` match, aggregated in the database
    (store.results.case_values: each case's values, not its rows): summarize's figures, at a
    cost that grows with the rows read, never with their Python objects (issue 33)."""
    from wirewise.orchestrator.store.results import case_values

    found = []
    for workload in filters.workloads():
        metric = METRIC[workload]
        for row in case_values(store, filters, workload, metric):
            values = row[metric]
            median = statistics.median(values)
            found.append(Baseline(row["fingerprint"], workload, {name: row[name] for name in CASE_FIELDS[workload]}, metric,
                                  median, scaled_mad(values, median), len(values), row["nodes"], {row["source"]: len(values)}))
    return found


def imported(store, fingerprints: set[str] | None = None, notes: list[str] | None = None) -> dict[tuple, Baseline]:
    """The imported baselines by case (of these fingerprints); the newest import of a case wins.
    A row stored before imports were checked (entry_problem) is left out, saying so in `notes`:
    one bad row must not stop export, doctor or a node's health check for good."""
    from wirewise.orchestrator.store.health import imported_baselines

    found, unusable = {}, []
    for row in reversed(imported_baselines(store, fingerprints)):
        problem = entry_problem({k: v for k, v in row.items() if k != "origin"})
        if problem:
            unusable.append(f"{row['origin']} ({problem})")
            continue
        baseline = Baseline(**row)
        found[baseline.key] = baseline
    if unusable and notes is not None:
        notes.append(f"ignored {len(unusable)} stored baseline(s) imported before wirewise checked them, "
                     f"which are not valid: {unusable[0]}")
    return found


def export_document(baselines: list[Baseline], wirings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The file `baseline export` writes: the wirings they belong to, then the baselines."""
    from wirewise.clock import utcnow

    return {
        "format": FORMAT, "version": VERSION,
        "exported_at": utcnow().isoformat(timespec="seconds"),
        "wirings": {fp: wirings.get(fp, {}) for fp in sorted({b.fingerprint for b in baselines})},
        "baselines": [{k: v for k, v in b.to_json().items() if k != "origin"} for b in baselines],
    }


MAX_COUNT = 2**31 - 1  # results, nodes, a source's count: the store's INTEGER columns (PostgreSQL's are 32-bit)


@cache
def _models() -> tuple[Any, dict[str, Any]]:
    """(a baseline entry, {workload: its case}) as pydantic models: every value of its type and
    range, so a file's baseline is either stored whole and usable or refused (an int case field
    given as a list, a NaN median, a count past the store's column). A case field's type is the
    contract's (wirewise.case.FIELDS, else the record's own field)."""
    from typing import Annotated, Literal

    from pydantic import BaseModel, ConfigDict, Field, StrictInt, create_model

    Count = Annotated[StrictInt, Field(ge=1, le=MAX_COUNT)]
    Figure = Annotated[float, Field(allow_inf_nan=False)]

    class Entry(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)  # a figure given as text is no figure
        fingerprint: str = Field(pattern=r"^[0-9a-f]{64}$")
        workload: Literal["collective", "train"]
        case: dict[str, Any]
        metric: str
        median: Figure = Field(gt=0)
        scaled_mad: Figure = Field(ge=0)
        results: Count
        nodes: Count
        sources: dict[Annotated[str, Field(max_length=16)], Annotated[StrictInt, Field(ge=0, le=MAX_COUNT)]] = {}

    strict = ConfigDict(extra="forbid", strict=True)
    cases = {workload: create_model(f"{workload}_case", __config__=strict,
                                    **{name: (_case_type(name), ...) for name in fields})
             for workload, fields in CASE_FIELDS.items()}
    return Entry, cases


def _case_type(name: str) -> Any:
    """A case field's type for a file's value: text within its column, a whole number within
    the store's integers, a flag; None where the case has no value."""
    import typing
    from typing import Annotated

    from pydantic import Field, StrictBool, StrictInt

    from wirewise import case
    from wirewise.limits import MAX_INT
    from wirewise.record import ResultRecord

    if name in case.FIELDS:
        kind, width = case.FIELDS[name].kind, case.FIELDS[name].width
    else:
        given = ResultRecord.model_fields.get(name)
        args = typing.get_args(given.annotation) if given is not None else (int,)  # gpus: the rank count
        kind, width = ("flag" if bool in args else "int" if int in args else "text"), 255
    return {"text": Annotated[str, Field(max_length=width or 255)], "flag": StrictBool,
            "int": Annotated[StrictInt, Field(ge=-MAX_INT, le=MAX_INT)]}[kind] | None


def entry_problem(raw: Any) -> str | None:
    """What makes one baseline (a file's entry, or a stored row less its origin) unusable, as
    'field: what'; None for a sound one. The one check for both: a file's entries before they
    are stored, and rows stored before wirewise checked them (left out of export and doctor)."""
    from pydantic import ValidationError

    from wirewise.errors import first_problem

    entry_model, case_models = _models()
    try:
        entry = entry_model.model_validate(raw)
    except ValidationError as exc:
        return first_problem(exc)
    try:
        case_models[entry.workload].model_validate(entry.case)
    except ValidationError as exc:
        return first_problem(exc, "case", unknown=f"not a {entry.workload} case field "
                             f"(they are {', '.join(CASE_FIELDS[entry.workload])})")
    if entry.metric != METRIC[entry.workload]:
        return f"metric: a {entry.workload} baseline's metric is {METRIC[entry.workload]}"
    return None


def read_document(doc: Any, source: str) -> list[Baseline]:
    """A `baseline export` file's baselines, every one checked before any is used; UserError
    names the file and the entry."""
    from wirewise.errors import UserError

    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise UserError(f"{source}: not a wirewise baselines file (written by `wirewise baseline export`)")
    version = doc.get("version")
    if version not in READS:
        raise UserError(f"{source}: baselines file version {version!r}; this wirewise reads versions "
                        f"{', '.join(map(str, READS))}")
    entries = doc.get("baselines")
    if not isinstance(entries, list):
        raise UserError(f"{source}: baselines: not a list of baselines")
    entries = [as_current(raw, version) for raw in entries]
    for index, raw in enumerate(entries):
        problem = entry_problem(raw)
        if problem:
            raise UserError(f"{source}: baselines[{index}].{problem}; nothing imported")
    return [Baseline(**{"sources": {}, **raw}, origin=source) for raw in entries]


def as_current(raw: Any, version: int) -> Any:
    """A file's entry of an older `version` with its keys as this version names them. An entry
    that also holds the new name keeps the old key, which the check then refuses as unknown:
    one figure, never two that disagree."""
    renamed = RENAMED.get(version, {})
    if not isinstance(raw, dict):
        return raw
    current = {}
    for key, value in raw.items():
        new = renamed.get(key, key)
        current[key if new in raw and new != key else new] = value
    if version < 4 and isinstance(current.get("case"), dict):
        current["case"] = with_scope(current["case"])
    return current


# -- the flows `wirewise baseline` runs -----------------------------------------------------------
def export_baselines(store, fingerprint: str | None = None, include_cpu: bool = False,
                     notes: list[str] | None = None) -> dict[str, Any]:
    """The `baseline export` document: every case's baseline from the history (of one
    fingerprint, a prefix resolved), and imported ones for cases the history lacks (`notes`
    says which stored ones are left out as not valid)."""
    from wirewise.orchestrator.results.filters import resolve
    from wirewise.orchestrator.store.results import Filters
    from wirewise.orchestrator.store.topology import list_topologies

    filters = resolve(store, Filters(fingerprint=fingerprint, status="ok", include_cpu=include_cpu))
    found = {b.key: b for b in stored_baselines(store, filters)}
    for key, given in imported(store, None if filters.fingerprint is None else {filters.fingerprint}, notes).items():
        found.setdefault(key, given)  # the history's own baseline of a case comes first
    wirings = {row["fingerprint"]: {"fabric": row["fabric"], "gpus": row["gpus"], "gpu_model": row["gpu_model"]}
               for row in list_topologies(store)}
    return export_document(sorted(found.values(), key=lambda b: (b.fingerprint, b.workload, str(b.case))), wirings)


def read_file(path) -> list[Baseline]:
    """A `baseline export` file's baselines, checked, named by the file's name (importing a newer
    copy of the same file replaces them)."""
    from pathlib import Path

    from wirewise.limits import MAX_RESULT_BYTES, read_json

    path = Path(path)
    doc = read_json(path, "baselines file", MAX_RESULT_BYTES, "give a file `wirewise baseline export` wrote")
    return [replace_origin(b, path.name) for b in read_document(doc, str(path))]


def replace_origin(baseline: Baseline, origin: str) -> Baseline:
    from dataclasses import replace

    return replace(baseline, origin=origin)
