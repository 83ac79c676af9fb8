"""Two sets of results side by side: `wirewise compare A B`.

A side is a campaign, a node, a fingerprint or a fabric (`campaign:NAME`, `node:NAME`,
`fingerprint:PREFIX`, `fabric:PREFIX`, or a bare name when only one kind has it). Each side
is aggregated per case (as ReFrame's --performance-compare does): a collective case is op,
size, GPUs, placement, transport, in place and source; a training case is model, strategy,
GPUs, placement, transport and source. For every case both sides have, the medians of the
main metric (busbw; tokens/s, or samples/s for a model without tokens such as an image
model) give the ratio A/B and pdiff = (A - B) / B; the difference is
inside the noise when the two ranges of repeats overlap, and not judged when a side has a
single run. Cases on one side only are listed, and so are cases with failed runs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.report.aggregate import aggregate
from wirewise.orchestrator.report.query import resolve, unique_prefix
from wirewise.orchestrator.report.stats import Stats
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import Filters, campaign_names, fingerprints_starting, has_results_on

KINDS = ("campaign", "node", "fingerprint", "fabric")
CASE_FIELDS = {
    "collective": ("op", "bytes", "gpus", "placement", "transport", "in_place", "source"),
    "train": ("model", "strategy", "gpus", "placement", "transport", "source"),
}
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
    sides = [_cases(aggregate(store, resolve(store, side.filters(base)), CASE_FIELDS)) for side in (a, b)]
    common = [key for key in sides[0] if key in sides[1]]
    return {
        "a": a.label,
        "b": b.label,
        "cases": [_case_row(key, sides[0][key], sides[1][key]) for key in sorted(common, key=_key_order)],
        "only_a": [_case_fields(key) for key in sorted(set(sides[0]) - set(sides[1]), key=_key_order)],
        "only_b": [_case_fields(key) for key in sorted(set(sides[1]) - set(sides[0]), key=_key_order)],
    }


def _cases(rows: list[dict[str, Any]]) -> dict[tuple, dict[str, dict[str, Any]]]:
    """(workload, case values) -> {status: aggregated row}."""
    cases: dict[tuple, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        workload = row["workload"]
        cases[(workload, tuple(row[name] for name in CASE_FIELDS[workload]))][row["status"]] = row
    return cases


def _case_fields(key: tuple) -> dict[str, Any]:
    workload, values = key
    return {"workload": workload, **dict(zip(CASE_FIELDS[workload], values))}


def _key_order(key: tuple) -> tuple:
    workload, values = key
    return (workload, *((v is None, v if isinstance(v, int | float) else str(v)) for v in values))


def _case_row(key: tuple, a_rows: dict[str, dict[str, Any]], b_rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    metrics = MAIN_METRICS[key[0]]
    metric = next((m for m in metrics if _side_stats(a_rows, m) and _side_stats(b_rows, m)), metrics[0])
    a, b = (_side_stats(rows, metric) for rows in (a_rows, b_rows))
    row = {**_case_fields(key), "metric": metric, "a": _stats_json(a), "b": _stats_json(b)}
    row["a_not_ok"] = _not_ok(a_rows)
    row["b_not_ok"] = _not_ok(b_rows)
    row.update(_verdict(a, b))
    return row


def _side_stats(rows: dict[str, dict[str, Any]], metric: str) -> Stats | None:
    """The stats of the runs that worked, as the aggregate gave them; None when none did."""
    ok = rows.get("ok", {})
    if f"{metric}_median" not in ok:
        return None
    return Stats(*(ok[f"{metric}_{name}"] for name in ("median", "min", "max", "count")))


def _not_ok(rows: dict[str, dict[str, Any]]) -> dict[str, int]:
    return {status: row["count"] for status, row in rows.items() if status != "ok"}


def _stats_json(stats: Stats | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    return {"median": stats.median, "min": stats.min, "max": stats.max, "count": stats.count, "spread": stats.spread}


def _verdict(a: Stats | None, b: Stats | None) -> dict[str, Any]:
    """ratio A/B, pdiff (A - B) / B, and whether the difference is inside the repeats' noise
    (None: a side has one run, or no successful run, so the noise is unknown)."""
    if a is None or b is None or not b.median:
        return {"ratio": None, "pdiff": None, "within_noise": None}
    ratio = a.median / b.median
    within = None if min(a.count, b.count) < 2 else a.overlaps(b)
    return {"ratio": ratio, "pdiff": ratio - 1, "within_noise": within}
