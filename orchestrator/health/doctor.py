"""`wirewise doctor`: the rules (wirewise.orchestrator.health.rules: the shipped defaults, or
`--rules FILE` laid over them) on the history and, on the node doctor runs on, through NVML.

From the history (any node; wirewise.orchestrator.health.judge): busbw or tokens/s below the
fingerprint's baseline, a node slower than its same-fingerprint peers in its latest campaign,
a task that failed where its peers passed. Live, on this node (wirewise.orchestrator.health.live):
inactive NVLinks, PCIe below its maximum, a wiring that no longer matches the stored one.

Each node judged is recorded as a check with its findings (the node's verdict, which `fleet
status` shows and `fleet drain` acts on): a finding found again is updated, one its rule no
longer finds is cleared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.health.judge import judge_history
from wirewise.orchestrator.health.live import live_findings
from wirewise.orchestrator.health.rules import Rules, default_rules
from wirewise.orchestrator.report.query import facts
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import Filters


def doctor(store: Store, node: str | None = None, include_cpu: bool = False,
           live: Callable[[], Any] | None = None, live_node: str | None = None,
           rules: Rules | None = None, record: bool = True, source: str = "doctor") -> dict[str, Any]:
    """Findings for `node` (every node with results when None). `live` probes this machine's
    topology (named `live_node`); it runs only when that is the node being checked."""
    from wirewise.orchestrator.health.baseline import imported
    from wirewise.orchestrator.store.health import record_check, result_runs

    rules = rules or default_rules()
    history = history_of(store, node, include_cpu or rules.include_cpu)
    nodes = _nodes(store, node, live_node if live else None, history)
    fingerprints = {f["fingerprint"] for f in history if f["fingerprint"]}
    judgement = judge_history(nodes, history, rules, imported(store, fingerprints), runs=lambda ids: result_runs(store, ids))
    if live is not None and live_node in nodes:
        found, judged = live_findings(live_node, live, stored_wiring(store, live_node), rules, judgement.notes)
        judgement.findings += found
        judgement.judged[live_node] |= judged
    if record:
        for name in nodes:
            record_check(store, name, source, judgement.judged[name], [f for f in judgement.findings if f.node == name])
    return {"healthy": not judgement.findings, "nodes": nodes, "findings": [f.to_json() for f in judgement.findings],
            "notes": judgement.notes, "rules": rules.source}


def _nodes(store: Store, node: str | None, live_node: str | None, history: list[dict[str, Any]]) -> list[str]:
    from wirewise.orchestrator.store.topology import node_names

    with_results = {f["node"] for f in history if f["node"]}
    if node is None:
        return sorted(with_results | ({live_node} if live_node else set()))
    known = node == live_node or node in with_results or node in node_names(store)
    if not known:
        raise UserError(f"--node {node!r}: no results or wiring stored for that node (wirewise topo list shows the nodes)")
    return [node]


def history_of(store: Store, node: str | None, include_cpu: bool) -> list[dict[str, Any]]:
    """The results the rules read: for one node, every result of the wirings it ran on (not the
    whole database); for every node, all of them."""
    base = Filters(include_cpu=include_cpu)
    if node is None:
        return facts(store, base)
    wirings = {f["fingerprint"] for f in facts(store, replace(base, node=node)) if f["fingerprint"]}
    return [f for fingerprint in sorted(wirings) for f in facts(store, replace(base, fingerprint=fingerprint))]


def stored_wiring(store: Store, node: str) -> tuple[str, str] | None:
    """(fingerprint, fabric) of the wiring last stored for the node; None when none is."""
    from wirewise.orchestrator.store.topology import node_wirings

    seen = node_wirings(store, nodes=[node])  # the most recently seen first
    return (seen[0].fingerprint, seen[0].fabric) if seen else None
