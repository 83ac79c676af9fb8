"""The verdict of pair tests: which nodes and which links are slow, from collectives measured
between pairs of nodes at one size. Pure: measures in, verdict out, so `fleet pairs`, the
scheduler of its rounds, placement across nodes and a drain rule all judge alike.

    judge(nodes, measures, tolerance, scope) -> Verdict

The reference is the fleet's median for that size, taken over nodes: each node's best pair,
then the median of those. A slow node drags down every pair it is in; with each node's best,
one slow node does not pull the figure of the healthy nodes it was paired with (on 3 nodes,
a slow one is in two of the three pairs, and the median of the pairs themselves would be its
own figure). A pair is slow below `(1 - tolerance) x` the reference, bad when slow or failed.

A node in a good pair is known good. A node that is not, and was tested against a known-good
node, is bad: its pairs are all bad, one of them with a healthy partner. A bad pair of two
known-good nodes is a bad link (each end is fine with others). A bad pair with no known-good
member cannot be told apart yet: its nodes are suspects (quick mode then tests each against
a known-good node: wirewise.orchestrator.fleet.schedule).

Pairs of different fabric scopes are different cases (wirewise.case.scope_of: two nodes inside
one NVLink domain reach each other over NVLink, two in different domains or in none over the
network), so `scope` (a pair -> its scope; None: one scope) splits the tests, and each scope is
judged on its own: its own reference, threshold and spread, so a healthy pair across domains is
never slow against the NVLink figure of the pairs inside one. A node is bad where its scope's
tests find it bad; it is known good when it is good in every scope it was judged in. A scope of
one test is its own reference, as a fleet of two nodes is.

The tolerance is the health rules' (pair-below-fleet in orchestrator/health/rules.yaml, 0.2:
80% of the fleet's figure, looser than DGX Cloud's 95% of baseline for acceptance and
SuperBench's example rule (a 5% drop), since CPU pair tests and busy networks spread more),
or `fleet pairs --tolerance`; every caller passes it, so the rules are its one place. The
spread of the healthy pairs is reported beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import median
from typing import Any

Pair = tuple[str, str]
Scope = Callable[[Pair], str | None]  # a pair -> its fabric scope (wirewise.case.scope_of)


@dataclass(frozen=True)
class Measure:
    """One pair test: its two nodes, the busbw measured (None: it failed), why it failed, and
    whether it ran at all (False: it ended cancelled or missing without a result of its own,
    before it started or stopped by whoever waited for it: a test that never ran says nothing
    of the nodes)."""

    nodes: Pair
    busbw_gbs: float | None
    error: str | None = None
    ran: bool = True

    @property
    def key(self) -> frozenset[str]:
        return frozenset(self.nodes)


@dataclass
class Verdict:
    reference_gbs: float | None  # the fleet's median for the size (over nodes, each node's best pair); None: several scopes
    threshold_gbs: float | None  # below it a pair is slow; None: several scopes (each has its own)
    spread: float | None  # (max - min) / median of the healthy pairs' busbw, a relative range
    tolerance: float
    tests: int
    known_good: list[str] = field(default_factory=list)
    bad_nodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # node -> evidence
    bad_pairs: list[dict[str, Any]] = field(default_factory=list)  # a slow link, or a bad pair not yet told apart
    suspects: list[str] = field(default_factory=list)  # in a bad pair, not tested against a known-good node
    untested: list[str] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)  # every test with its judgement
    scopes: dict[str, dict[str, Any]] = field(default_factory=dict)  # scope -> its reference, threshold, spread, tests

    @property
    def flagged(self) -> bool:
        return bool(self.bad_nodes or self.bad_pairs or self.suspects)

    def to_json(self) -> dict[str, Any]:
        return {
            "healthy": not self.flagged, "tests": self.tests,
            "bad_nodes": sorted(self.bad_nodes), "bad_pairs": [p["nodes"] for p in self.bad_pairs],
            "suspects": self.suspects, "untested": self.untested, "known_good": self.known_good,
            "reference_gbs": self.reference_gbs, "threshold_gbs": self.threshold_gbs, "spread": self.spread,
            "tolerance": self.tolerance, "scopes": self.scopes,
            "evidence": {"nodes": self.bad_nodes, "pairs": self.bad_pairs},
            "pairs": self.pairs,
        }


def judge(nodes: list[str], measures: list[Measure], tolerance: float, scope: Scope | None = None) -> Verdict:
    """The verdict on `nodes` from the pair tests so far (a pair tested twice: its latest), each
    fabric scope judged on its own (`scope`: a pair's; None: all one scope)."""
    latest: dict[frozenset[str], Measure] = {}
    for measure in measures:
        latest[measure.key] = measure
    of_scope: dict[str | None, list[Measure]] = {}
    for m in latest.values():
        of_scope.setdefault(scope(m.nodes) if scope else None, []).append(m)
    verdicts = {name: _judge_scope(nodes, tests, tolerance, len(measures), name) for name, tests in of_scope.items()}
    verdict = (_merged(nodes, verdicts, tolerance, len(measures)) if len(verdicts) > 1
               else next(iter(verdicts.values()), None) or _judge_scope(nodes, [], tolerance, len(measures), None))
    for node, evidence in verdict.bad_nodes.items():  # what a repeat pairs it with: a good node of its scope
        evidence["partners"] = [n for n in verdict.known_good if n != node
                                and (scope is None or scope((node, n)) == evidence.get("scope"))]
    return verdict


def _merged(nodes: list[str], verdicts: dict[str | None, Verdict], tolerance: float, tests: int) -> Verdict:
    """One verdict of several scopes': a node bad in any is bad, good only where good in every
    scope it was judged in; each scope's figures under `scopes`."""
    merged = Verdict(None, None, None, tolerance, tests)
    for verdict in verdicts.values():
        merged.scopes.update(verdict.scopes)
        merged.pairs += verdict.pairs
        merged.bad_pairs += verdict.bad_pairs
        for node, evidence in verdict.bad_nodes.items():
            merged.bad_nodes.setdefault(node, evidence)
    unsure = {n for v in verdicts.values() for n in v.suspects} - set(merged.bad_nodes)
    good = {n for v in verdicts.values() for n in v.known_good} - set(merged.bad_nodes) - unsure
    tested = {n for m in merged.pairs for n in m["nodes"]}
    for node, evidence in merged.bad_nodes.items():  # every test of the node, each with its scope
        evidence["pairs"] = [{"with": _other_of(p["nodes"], node), "busbw_gbs": p["busbw_gbs"], "scope": p.get("scope"),
                              **({"error": p["error"]} if p.get("error") else {})}
                             for p in merged.pairs if node in p["nodes"]]
    merged.known_good = [n for n in nodes if n in good]
    merged.suspects = [n for n in nodes if n in unsure]
    merged.untested = [n for n in nodes if n not in tested]
    return merged


def _judge_scope(nodes: list[str], tests: list[Measure], tolerance: float, count: int, scope: str | None) -> Verdict:
    """The verdict of one scope's tests (each pair's latest)."""
    reference = _reference(tests)
    threshold = reference * (1 - tolerance) if reference is not None else None

    def bad(m: Measure) -> bool:
        return m.busbw_gbs is None or (threshold is not None and m.busbw_gbs < threshold)

    healthy = [m.busbw_gbs for m in tests if not bad(m)]
    spread = (max(healthy) - min(healthy)) / median(healthy) if len(healthy) > 1 and median(healthy) > 0 else None
    verdict = Verdict(reference, threshold, spread, tolerance, count)
    named = {"scope": scope} if scope is not None else {}
    if scope is not None:
        verdict.scopes[scope] = {"reference_gbs": reference, "threshold_gbs": threshold, "spread": spread,
                                 "tests": len(tests)}
    good = {n for m in tests if not bad(m) for n in m.nodes}
    verdict.known_good = [n for n in nodes if n in good]
    of_node: dict[str, list[Measure]] = {}
    for m in tests:
        for n in m.nodes:
            of_node.setdefault(n, []).append(m)
    verdict.untested = [n for n in nodes if n not in of_node]
    for m in tests:
        verdict.pairs.append({"nodes": list(m.nodes), "busbw_gbs": m.busbw_gbs, "status": _status(m, bad(m)), **named,
                              **({"error": m.error} if m.error else {})})
    for node in nodes:
        if node in good or node not in of_node:
            continue
        against_good = [m for m in of_node[node] if _other(m, node) in good]
        if against_good:
            verdict.bad_nodes[node] = {**_evidence(node, of_node[node], verdict), **named}
        else:
            verdict.suspects.append(node)
    for m in tests:
        if bad(m) and not any(n in verdict.bad_nodes for n in m.nodes):
            localized = all(n in good for n in m.nodes)
            verdict.bad_pairs.append({
                "nodes": list(m.nodes), "busbw_gbs": m.busbw_gbs, "reference_gbs": reference, **named,
                "ratio": _ratio(m.busbw_gbs, reference), **({"error": m.error} if m.error else {}),
                "why": ("a slow link: each node is healthy with others" if localized
                        else "not told apart yet: no node of it was tested against a healthy one"),
            })
    return verdict


def _reference(tests: list[Measure]) -> float | None:
    best: dict[str, float] = {}
    for m in tests:
        if m.busbw_gbs is not None:
            for n in m.nodes:
                best[n] = max(best.get(n, 0.0), m.busbw_gbs)
    return median(best.values()) if best else None


def _other(m: Measure, node: str) -> str:
    return _other_of(m.nodes, node)


def _other_of(pair, node: str) -> str:
    return pair[1] if pair[0] == node else pair[0]


def _status(m: Measure, bad: bool) -> str:
    if m.busbw_gbs is None:
        return "failed"
    return "slow" if bad else "ok"


def _ratio(busbw: float | None, reference: float | None) -> float | None:
    return round(busbw / reference, 4) if busbw is not None and reference else None


def _evidence(node: str, tests: list[Measure], verdict: Verdict) -> dict[str, Any]:
    figures = [m.busbw_gbs for m in tests if m.busbw_gbs is not None]
    best = max(figures) if figures else None
    return {
        "busbw_gbs": best, "reference_gbs": verdict.reference_gbs, "ratio": _ratio(best, verdict.reference_gbs),
        "spread": verdict.spread, "threshold_gbs": verdict.threshold_gbs,
        "pairs": [{"with": _other(m, node), "busbw_gbs": m.busbw_gbs, **({"error": m.error} if m.error else {})}
                  for m in tests],
    }
