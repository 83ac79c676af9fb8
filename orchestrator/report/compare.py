"""Two sets of results side by side: `wirewise compare A B`.

A side is a campaign, a node, a fingerprint or a fabric (`campaign:NAME`, `node:NAME`,
`fingerprint:PREFIX`, `fabric:PREFIX`, or a bare name when only one kind has it). Each side
is grouped by the case (wirewise.case.CASE_FIELDS: every setting that decides the figure, as
ReFrame's --performance-compare keys on the test and its parameters). For every case both
sides have, the medians of the main metric (busbw; tokens/s, or samples/s for a model without
tokens such as an image model) give the ratio A/B and pdiff = (A - B) / B, and the two sets of
repeats are judged by a rank-sum test at ALPHA (report.stats: a stated false-alarm rate, the
same for 2 repeats as for 200): `different` when p <= ALPHA, else no difference shown (with the
smallest p the two sides' run counts allow, when that cannot reach ALPHA). Cases on one side
only are listed, and so are cases with failed runs; what each side left out (CPU-rank runs
without --include-cpu) is counted, and a compare with no case in common says so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

from wirewise.case import CASE_FIELDS
from wirewise.errors import UserError
from wirewise.orchestrator.report.aggregate import Aggregate, Bucket, case_buckets
from wirewise.orchestrator.results.filters import resolve, unique_prefix
from wirewise.orchestrator.report.stats import ALPHA, Stats, rank_sum_p, stats_of
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import Filters, campaign_names, fingerprints_starting, has_results_on

KINDS = ("campaign", "node", "fingerprint", "fabric")
# The metric a case is compared by: the first both sides measured (an image model has no tokens/s).
MAIN_METRICS = {"collective": ("busbw_gbs",), "train": ("tokens_per_s", "samples_per_s")}


@dataclass(frozen=True)
class Side:
    kind: str
    value: str

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.value}"

    def filters(self, base: Filters) -> Filters:
        field = {"campaign": "campaigns", "node": "node", "fingerprint": "fingerprint", "fabric": "fabric"}[self.kind]
        return replace(base, **{field: (self.value,) if self.kind == "campaign" else self.value})


def parse_side(store: Store, text: str) -> Side:
    """'campaign:NAME' and friends, or a bare name that only one kind of thing has."""
    kind, sep, value = text.partition(":")
    if sep and kind in KINDS:
        return Side(kind, _resolved(store, kind, value, text))
    found = [Side(kind, match) for kind in KINDS if (match := _match(store, kind, text))]
    if len(found) == 1:
        return found[0]
    if not found:
        raise UserError(f"{text!r}: no campaign, node, fingerprint or fabric of that name")
    raise UserError(f"{text!r} is ambiguous: write {' or '.join(f'{s.kind}:{text}' for s in found)}")


def _resolved(store: Store, kind: str, value: str, text: str) -> str:
    match = _match(store, kind, value)
    if match is None:
        raise UserError(f"{text!r}: no {kind} of that name")
    return match


def _match(store: Store, kind: str, value: str) -> str | None:
    """The full name `value` stands for as a `kind`; None when it names none. An ambiguous
    fingerprint or fabric prefix is an error of its own."""
    if kind == "campaign":
        return value if campaign_names(store, [value]) else None
    if kind == "node":
        return value if has_results_on(store, value) else None
    from wirewise.topology.classify import FABRICS

    known = FABRICS if kind == "fabric" else fingerprints_starting(store, value)
    if not value or not any(k.startswith(value) for k in known):
        return None
    return unique_prefix(kind, value, known)


def compare(store: Store, a: Side, b: Side, base: Filters) -> dict[str, Any]:
    """The comparison as one JSON-ready dict (the same the table shows)."""
    sides, left_out = [], []
    for side in (a, b):
        cases, cpu = _cases(store, resolve(store, side.filters(base)))
        sides.append(cases)
        left_out.append(Aggregate([], cpu).left_out())
    common = [key for key in sides[0] if key in sides[1]]
    return {
        "a": a.label,
        "b": b.label,
        "alpha": ALPHA,
        "cases": [_case_row(key, sides[0][key], sides[1][key]) for key in sorted(common, key=_key_order)],
        "only_a": [_case_fields(key) for key in sorted(set(sides[0]) - set(sides[1]), key=_key_order)],
        "only_b": [_case_fields(key) for key in sorted(set(sides[1]) - set(sides[0]), key=_key_order)],
        "left_out_a": left_out[0],
        "left_out_b": left_out[1],
    }


def _cases(store: Store, filters: Filters) -> tuple[dict[tuple, dict[str, Bucket]], int]:
    """(workload, case values) -> {status: Bucket} of one side, and its CPU-rank results left out."""
    cases: dict[tuple, dict[str, Bucket]] = defaultdict(dict)
    cpu = 0
    for workload in filters.workloads():
        metrics = MAIN_METRICS[workload]
        buckets, left = case_buckets(store, filters, workload, CASE_FIELDS[workload], metrics)
        cpu += left
        for (values, status), bucket in buckets.items():
            cases[(workload, values)][status] = bucket
    return cases, cpu


def _case_fields(key: tuple) -> dict[str, Any]:
    workload, values = key
    return {"workload": workload, **dict(zip(CASE_FIELDS[workload], values))}


def _key_order(key: tuple) -> tuple:
    workload, values = key
    return (workload, *((v is None, v if isinstance(v, int | float) else str(v)) for v in values))


def _case_row(key: tuple, a_runs: dict[str, Bucket], b_runs: dict[str, Bucket]) -> dict[str, Any]:
    metrics = MAIN_METRICS[key[0]]
    metric = next((m for m in metrics if _values(a_runs, m) and _values(b_runs, m)), metrics[0])
    a, b = (_values(runs, metric) for runs in (a_runs, b_runs))
    row = {**_case_fields(key), "metric": metric, "a": _stats_json(stats_of(a)), "b": _stats_json(stats_of(b))}
    row["a_not_ok"] = _not_ok(a_runs)
    row["b_not_ok"] = _not_ok(b_runs)
    row.update(_verdict(a, b))
    return row


def _values(runs: dict[str, Bucket], metric: str) -> list[float]:
    """The metric's values of the runs that worked."""
    ok = runs.get("ok")
    return ok.values[metric] if ok else []


def _not_ok(runs: dict[str, Bucket]) -> dict[str, int]:
    return {status: bucket.count for status, bucket in runs.items() if status != "ok"}


def _stats_json(stats: Stats | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    return {"median": stats.median, "min": stats.min, "max": stats.max, "count": stats.count, "spread": stats.spread}


def _verdict(a: list[float], b: list[float]) -> dict[str, Any]:
    """ratio A/B of the medians, pdiff (A - B) / B, the rank-sum test's p, whether the sides
    differ at ALPHA, and the smallest p these run counts allow; `different` is None where a side
    has no successful run, or where that smallest p is above ALPHA (no difference can be shown)."""
    if not a or not b or not stats_of(b).median:
        return {"ratio": None, "pdiff": None, "p": None, "different": None, "smallest_p": None}
    ratio = stats_of(a).median / stats_of(b).median
    p = rank_sum_p(a, b)
    smallest = rank_sum_p(range(len(a)), range(len(a), len(a) + len(b)))
    different = None if smallest > ALPHA else p <= ALPHA  # None: these counts cannot show a difference
    return {"ratio": ratio, "pdiff": ratio - 1, "p": p, "different": different, "smallest_p": smallest}
