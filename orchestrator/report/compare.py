"""Two sets of results side by side: `wirewise compare A B`.

A side is a campaign, a node, a fingerprint or a fabric (`campaign:NAME`, `node:NAME`,
`fingerprint:PREFIX`, `fabric:PREFIX`, or a bare name when only one kind has it). Each side
is aggregated per case (as ReFrame's --performance-compare does): a collective case is op,
size, GPUs, placement, transport, in place and source; a training case is model, strategy,
GPUs, placement, transport and source. For every case both sides have, the medians of the
main metric (busbw, tokens/s) give the ratio A/B and pdiff = (A - B) / B; the difference is
inside the noise when the two ranges of repeats overlap, and not judged when a side has a
single run. Cases on one side only are listed, and so are cases with failed runs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import select

from wirewise.errors import UserError
from wirewise.orchestrator.report.query import (
    Filters, campaign_names, facts, fingerprints_starting, resolve, unique_prefix,
)
from wirewise.orchestrator.report.stats import Stats, stats_of
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.models import ResultRow

KINDS = ("campaign", "node", "fingerprint", "fabric")
CASE_FIELDS = {
    "collective": ("op", "bytes", "gpus", "placement", "transport", "in_place", "source"),
    "train": ("model", "strategy", "gpus", "placement", "transport", "source"),
}
MAIN_METRIC = {"collective": "busbw_gbs", "train": "tokens_per_s"}


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
        with store.session() as session:
            return session.scalar(select(ResultRow.node).where(ResultRow.node == value).limit(1))
    from wirewise.topology.classify import FABRICS

    known = FABRICS if kind == "fabric" else fingerprints_starting(store, value)
    if not value or not any(k.startswith(value) for k in known):
        return None
    return unique_prefix(kind, value, known)


def compare(store: Store, a: Side, b: Side, base: Filters) -> dict[str, Any]:
    """The comparison as one JSON-ready dict (the same the table shows)."""
    sides = [_cases(facts(store, resolve(store, side.filters(base)))) for side in (a, b)]
    common = [key for key in sides[0] if key in sides[1]]
    return {
        "a": a.label,
        "b": b.label,
        "cases": [_case_row(key, sides[0][key], sides[1][key]) for key in sorted(common, key=_key_order)],
        "only_a": [_case_fields(key) for key in sorted(set(sides[0]) - set(sides[1]), key=_key_order)],
        "only_b": [_case_fields(key) for key in sorted(set(sides[1]) - set(sides[0]), key=_key_order)],
    }


def _cases(found: list[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    cases: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for fact in found:
        workload = fact["workload"]
        cases[(workload, tuple(fact[name] for name in CASE_FIELDS[workload]))].append(fact)
    return cases


def _case_fields(key: tuple) -> dict[str, Any]:
    workload, values = key
    return {"workload": workload, **dict(zip(CASE_FIELDS[workload], values))}


def _key_order(key: tuple) -> tuple:
    workload, values = key
    return (workload, *((v is None, v if isinstance(v, int | float) else str(v)) for v in values))


def _case_row(key: tuple, a_facts: list[dict[str, Any]], b_facts: list[dict[str, Any]]) -> dict[str, Any]:
    metric = MAIN_METRIC[key[0]]
    a, b = (_side_stats(found, metric) for found in (a_facts, b_facts))
    row = {**_case_fields(key), "metric": metric, "a": _stats_json(a), "b": _stats_json(b)}
    row["a_not_ok"] = _not_ok(a_facts)
    row["b_not_ok"] = _not_ok(b_facts)
    row.update(_verdict(a, b))
    return row


def _side_stats(found: list[dict[str, Any]], metric: str) -> Stats | None:
    return stats_of([f[metric] for f in found if f["status"] == "ok"])


def _not_ok(found: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for fact in found:
        if fact["status"] != "ok":
            counts[fact["status"]] += 1
    return dict(counts)


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
