"""`wirewise doctor`: the rules (wirewise.orchestrator.health.rules: the shipped defaults, or
`--rules FILE` laid over them) on the history and, on the node doctor runs on, through NVML.

From the history (any node; wirewise.orchestrator.health.judge, read a case at a time from
the database over every node: wirewise.orchestrator.health.every_node): busbw or tokens/s below the
fingerprint's baseline, a node slower than its same-fingerprint peers in its latest campaign,
a task that failed where its peers passed, NCCL traffic that left the NVLink its wiring
promises. Live, on this node (wirewise.orchestrator.health.live):
inactive NVLinks, PCIe below its maximum, a wiring that no longer matches the stored one.

Each node judged is recorded as a check with its findings (the node's verdict, which `fleet
status` shows and `fleet drain` acts on): a finding found again is updated, one its rule no
longer finds is cleared.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.health.findings import LIVE_RULES
from wirewise.orchestrator.health.judge import HISTORY_RULES, judge_history
from wirewise.orchestrator.health.live import live_findings
from wirewise.orchestrator.health.rules import Rules, load_rules
from wirewise.orchestrator.results.rows import result_rows
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import Filters


def doctor(store: Store, node: str | None = None, include_cpu: bool = False,
           live: Callable[[], Any] | None = None, live_node: str | None = None,
           rules: Rules | None = None, record: bool = True, source: str = "doctor") -> dict[str, Any]:
    """Findings for `node` (every node with results when None). `live` probes this machine's
    topology (named `live_node`); it runs only when that is the node being checked. `rules`:
    the site's (the setting rules, load_rules) when not given."""
    from wirewise.orchestrator.health.baseline import imported
    from wirewise.orchestrator.store.health import record_checks, result_runs, results_in_one_domain

    rules = rules if rules is not None else load_rules(None)
    base = Filters(include_cpu=include_cpu or rules.include_cpu)
    runs, in_one_domain = (lambda ids: result_runs(store, ids)), (lambda ids: results_in_one_domain(store, ids))
    ignored: list[str] = []
    if node is None:  # every node: read a case at a time, never the whole history (health/every_node.py)
        from wirewise.orchestrator.health.every_node import judge_every_node
        from wirewise.orchestrator.store.judging import result_fingerprints, result_nodes

        with_results = set(result_nodes(store, base))
        nodes = _nodes(store, node, live_node if live else None, with_results)
        baselines = imported(store, result_fingerprints(store, base), ignored)
        judgement = judge_every_node(store, nodes, base, rules, baselines, runs, in_one_domain)
    else:
        history = history_of(store, node, base)
        with_results = _with_results(history)
        nodes = _nodes(store, node, live_node if live else None, with_results)
        baselines = imported(store, {f["fingerprint"] for f in history if f["fingerprint"]}, ignored)
        judgement = judge_history(nodes, history, rules, baselines, runs=runs, in_one_domain=in_one_domain)
    judgement.notes[:0] = ignored
    if live is not None and live_node in nodes:
        found, judged = live_findings(live_node, live, stored_wiring(store, live_node), rules, judgement.notes)
        judgement.findings += found
        judgement.judged[live_node] |= judged
    if node is None and live_node in nodes and not judgement.judged[live_node] and live_node not in with_results:
        nodes = [n for n in nodes if n != live_node]  # this machine, asked about only in passing: nothing to say of it
    found_on: dict[str, list] = defaultdict(list)
    for finding in judgement.findings:
        found_on[finding.node].append(finding)
    verdicts = {name: verdict_of(found_on[name], judgement.judged[name]) for name in nodes}
    checks = []
    for name, said in verdicts.items():
        if said == NOT_JUDGED:
            judgement.notes.append(f"{name}: no rule could compare anything of it: not judged (not the same as healthy)")
        else:  # a node no rule judged keeps the verdict it had
            checks.append((name, judgement.judged[name], found_on[name]))
    if record:
        record_checks(store, source, checks)
    asked = [r for r in HISTORY_RULES if rules.rules.enabled(r)]
    live_asked = [r for r in LIVE_RULES if rules.rules.enabled(r)] if live is not None else []
    return {"healthy": healthy_of(verdicts), "verdicts": verdicts, "nodes": nodes,
            "rules_asked": {name: asked + (live_asked if name == live_node else []) for name in nodes},
            "judged": {name: sorted(judgement.judged[name]) for name in nodes},
            "findings": [f.to_json() for f in judgement.findings], "notes": judgement.notes, "rules": rules.source}


HEALTHY, FLAGGED, NOT_JUDGED = "healthy", "flagged", "not judged"


def verdict_of(findings: list, judged: set[str]) -> str:
    """A node's verdict from its findings and the rules that judged it: flagged (a rule fired),
    healthy (rules compared it and none fired) or not judged (no rule could compare anything of
    it: no baseline, no peers, no live reading)."""
    if findings:
        return FLAGGED
    return HEALTHY if judged else NOT_JUDGED


def healthy_of(verdicts: dict[str, str]) -> bool | None:
    """False when a node is flagged; None when none is but one was not judged; else True."""
    if FLAGGED in verdicts.values():
        return False
    return None if NOT_JUDGED in verdicts.values() else True


def _with_results(history: list[dict[str, Any]]) -> set[str]:
    return {f["node"] for f in history if f["node"]}


def _nodes(store: Store, node: str | None, live_node: str | None, with_results: set[str]) -> list[str]:
    from wirewise.orchestrator.store.topology import node_names

    if node is None:
        return sorted(with_results | ({live_node} if live_node else set()))
    known = node == live_node or node in with_results or node in node_names(store)
    if not known:
        raise UserError(f"--node {node!r}: no results or wiring stored for that node (wirewise topo list shows the nodes)")
    return [node]


def history_of(store: Store, node: str, base: Filters) -> list[dict[str, Any]]:
    """The results the rules read for one node: every result of the wirings it ran on (not the
    whole database)."""
    wirings = {f["fingerprint"] for f in result_rows(store, replace(base, node=node)) if f["fingerprint"]}
    return [f for fingerprint in sorted(wirings) for f in result_rows(store, replace(base, fingerprint=fingerprint))]


def stored_wiring(store: Store, node: str) -> tuple[str, str] | None:
    """(fingerprint, fabric) of the wiring last stored for the node; None when none is."""
    from wirewise.orchestrator.store.topology import node_wirings

    seen = node_wirings(store, nodes=[node])  # the most recently seen first
    return (seen[0].fingerprint, seen[0].fabric) if seen else None
