"""The verdict of pair tests: which nodes and which links are slow, from collectives measured
between pairs of nodes at one size. Pure: measures in, verdict out, so `fleet pairs`, the
scheduler of its rounds, placement across nodes and a drain rule all judge alike.

    judge(nodes, measures, tolerance) -> Verdict

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

The tolerance is the health rules' (pair-below-fleet in orchestrator/health/rules.yaml, 0.2:
80% of the fleet's figure, looser than DGX Cloud's 95% of baseline for acceptance and
SuperBench's example rule (a 5% drop), since CPU pair tests and busy networks spread more),
or `fleet pairs --tolerance`; every caller passes it, so the rules are its one place. The
spread of the healthy pairs is reported beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Any

Pair = tuple[str, str]


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
    reference_gbs: float | None  # the fleet's median for the size (over nodes, each node's best pair)
    threshold_gbs: float | None  # below it a pair is slow
    spread: float | None  # (max - min) / median of the healthy pairs' busbw
    tolerance: float
    tests: int
    known_good: list[str] = field(default_factory=list)
    bad_nodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # node -> evidence
    bad_pairs: list[dict[str, Any]] = field(default_factory=list)  # a slow link, or a bad pair not yet told apart
    suspects: list[str] = field(default_factory=list)  # in a bad pair, not tested against a known-good node
    untested: list[str] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)  # every test with its judgement

    @property
    def flagged(self) -> bool:
        return bool(self.bad_nodes or self.bad_pairs or self.suspects)

    def to_json(self) -> dict[str, Any]:
        return {
            "healthy": not self.flagged, "tests": self.tests,
            "bad_nodes": sorted(self.bad_nodes), "bad_pairs": [p["nodes"] for p in self.bad_pairs],
            "suspects": self.suspects, "untested": self.untested, "known_good": self.known_good,
            "reference_gbs": self.reference_gbs, "threshold_gbs": self.threshold_gbs, "spread": self.spread,
            "tolerance": self.tolerance,
            "evidence": {"nodes": self.bad_nodes, "pairs": self.bad_pairs},
            "pairs": self.pairs,
        }


def judge(nodes: list[str], measures: list[Measure], tolerance: float) -> Verdict:
    """The verdict on `nodes` from the pair tests so far (a pair tested twice: its latest)."""
    latest: dict[frozenset[str], Measure] = {}
    for measure in measures:
        latest[measure.key] = measure
    tests = list(latest.values())
    reference = _reference(tests)
    threshold = reference * (1 - tolerance) if reference is not None else None

    def bad(m: Measure) -> bool:
        return m.busbw_gbs is None or (threshold is not None and m.busbw_gbs < threshold)

    healthy = [m.busbw_gbs for m in tests if not bad(m)]
    spread = (max(healthy) - min(healthy)) / median(healthy) if len(healthy) > 1 and median(healthy) > 0 else None
    verdict = Verdict(reference, threshold, spread, tolerance, len(measures))
    good = {n for m in tests if not bad(m) for n in m.nodes}
    verdict.known_good = [n for n in nodes if n in good]
    of_node: dict[str, list[Measure]] = {}
    for m in tests:
        for n in m.nodes:
            of_node.setdefault(n, []).append(m)
    verdict.untested = [n for n in nodes if n not in of_node]
    for m in tests:
        verdict.pairs.append({"nodes": list(m.nodes), "busbw_gbs": m.busbw_gbs, "status": _status(m, bad(m)),
                              **({"error": m.error} if m.error else {})})
    for node in nodes:
        if node in good or node not in of_node:
            continue
        against_good = [m for m in of_node[node] if _other(m, node) in good]
        if against_good:
            verdict.bad_nodes[node] = _evidence(node, of_node[node], verdict)
        else:
            verdict.suspects.append(node)
    for m in tests:
        if bad(m) and not any(n in verdict.bad_nodes for n in m.nodes):
            localized = all(n in good for n in m.nodes)
            verdict.bad_pairs.append({
                "nodes": list(m.nodes), "busbw_gbs": m.busbw_gbs, "reference_gbs": reference,
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
    return m.nodes[1] if m.nodes[0] == node else m.nodes[0]


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
