"""`doctor` over every node: judge.py's rules, read from the database a case at a time.

Reading every result as a row held the fleet's history in memory (issue 33: 4.9 GiB for
1,000,000 results; out of a 6 GiB heap at 2,500,000) and scanned it per node. Here each rule
reads what it compares, in SQL order (wirewise.orchestrator.store.judging):

- busbw- and tokens-below-baseline: each judged case once (its results' node, id and metric,
  each node's newest first), its values sorted once; every node of the case takes its latest
  `repeats` results out of them as an order statistic (judge.Without), not a copy.
- slower-than-peers: each campaign that is some node's latest, each of its cases once: every
  node's median there, sorted once; each node against the others'.
- task-failed: the failed tasks of those campaigns, and the nodes that passed each case.
- transport-off-nvlink: each node's newest carried run of each case (a window), a slice of
  nodes at a time.

Memory holds one finding group's cases (a collective's sizes of one case otherwise) and each
node's judged sizes of it, never every result; the findings, notes and judged rules come out as
judge_history gives them over the same results (tests/health/test_doctor_every_node.py holds
both to each node's `doctor --node`).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import replace
from itertools import groupby
from operator import itemgetter
from typing import Any

from wirewise.orchestrator.health.baseline import METRIC, Baseline
from wirewise.orchestrator.health.judge import (
    FAILED, HISTORY_RULES, Fallen, InOneDomain, Judgement, Runs, Without, _group, against_baseline, against_peers,
    baseline_findings, baseline_rule, failed_findings, few_peers_note, large_enough, peer_findings, thin_note,
    transport_off_nvlink, with_measurement,
)
from wirewise.orchestrator.health.rules import Rules
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import Filters

NODES_AT_ONCE = 1000  # the nodes whose newest carried runs one read holds (transport-off-nvlink)


def judge_every_node(store: Store, nodes: list[str], filters: Filters, rules: Rules, imported: dict[tuple, Baseline],
                     runs: Runs | None = None, in_one_domain: InOneDomain | None = None) -> Judgement:
    """Every enabled history rule on each of `nodes`, over the results `filters` match."""
    out = _Collected(nodes)
    for workload in METRIC:
        name = "busbw-below-baseline" if workload == "collective" else "tokens-below-baseline"
        if rules.rules.enabled(name):
            _below_baseline(store, filters, workload, rules, imported, out)
    peers, failed = rules.rules.enabled("slower-than-peers"), rules.rules.enabled("task-failed")
    if peers or failed:
        from wirewise.orchestrator.store.judging import latest_campaigns

        nodes_of: dict[str, set[str]] = defaultdict(set)
        for node, campaign in latest_campaigns(store, filters).items():
            if node in out.place:
                nodes_of[campaign].add(node)
        for campaign, its_nodes in sorted(nodes_of.items()):
            if peers:
                _slower_than_peers(store, filters, campaign, its_nodes, rules, out)
            if failed:
                _task_failed(store, filters, campaign, its_nodes, rules, out)
    if rules.rules.enabled("transport-off-nvlink"):
        _transport_off_nvlink(store, filters, nodes, in_one_domain, out)
    judgement = out.judgement()
    if runs is not None:
        judgement.findings = [with_measurement(f, runs, rules) for f in judgement.findings]
    return judgement


class _Collected:
    """Findings, notes and judged rules as they are found, put in judge_history's order at the
    end: by node, by rule, then as each rule orders a node's own."""

    def __init__(self, nodes: list[str]) -> None:
        self.place = {node: i for i, node in enumerate(nodes)}
        self.findings: list[tuple[tuple, Any]] = []
        self.notes: list[tuple[tuple, str]] = []
        self.judged: dict[str, set[str]] = defaultdict(set)

    def found(self, node: str, rule: str, findings: list, order: Any = "") -> None:
        self.findings += [((self.place[node], HISTORY_RULES.index(rule), order, i), f) for i, f in enumerate(findings)]

    def note(self, node: str, rule: str, text: str) -> None:
        self.notes.append(((self.place[node], HISTORY_RULES.index(rule)), text))

    def judgement(self) -> Judgement:
        out = Judgement()
        out.findings = [f for _, f in sorted(self.findings, key=itemgetter(0))]
        out.notes = [n for _, n in sorted(self.notes, key=itemgetter(0))]
        out.judged.update(self.judged)
        return out


def _by_group(cases: list[dict[str, Any]], workload: str, rule) -> dict[tuple, list[dict[str, Any]]]:
    """The judged cases (in their first result's order) by finding group, less those the rule
    does not judge."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for case in cases:
        if large_enough(workload, case["case"], rule):
            groups[_group(case["fingerprint"], workload, case["case"])].append(case)
    return groups


def _below_baseline(store: Store, filters: Filters, workload: str, rules: Rules, imported: dict[tuple, Baseline],
                    out: _Collected) -> None:
    from wirewise.orchestrator.store.judging import case_rows, judged_cases

    rule, metric = baseline_rule(rules, workload), METRIC[workload]
    name = "busbw-below-baseline" if workload == "collective" else "tokens-below-baseline"
    thin: Counter = Counter()
    for group, cases in _by_group(judged_cases(store, filters, workload, metric), workload, rule).items():
        fallen: dict[str, list[Fallen]] = defaultdict(list)
        for case in cases:
            key = (case["fingerprint"], workload, case["case_key"])
            rows = case_rows(store, filters, workload, metric, case["fingerprint"], case["case_key"])
            ordered = sorted(row[2] for row in rows)
            per_node = [(node, list(mine)) for node, mine in groupby(rows, itemgetter(0))]
            for node, mine in per_node:
                if node not in out.place:
                    continue
                latest = mine[:rules.repeats]
                values = [row[2] for row in latest]
                judged = against_baseline(key, case["case"], [row[1] for row in latest], values, Without(ordered, values),
                                          len(per_node) - (len(mine) == len(latest)), rule, imported, rules.min_results)
                if judged is None:
                    thin[node] += 1
                else:
                    fallen[node].append(judged)
        for node, sizes in fallen.items():
            out.judged[node].add(name)
            out.found(node, name, baseline_findings(node, workload, {group: sizes}, rule), str(group))
    for node, count in thin.items():
        out.note(node, name, thin_note(node, count, workload, rules))


def _slower_than_peers(store: Store, filters: Filters, campaign: str, nodes: set[str], rules: Rules,
                       out: _Collected) -> None:
    from wirewise.orchestrator.store.judging import case_rows, judged_cases

    rule, within = rules.rules.slower_than_peers, replace(filters, campaigns=(campaign,))
    few: Counter = Counter()
    for workload, metric in METRIC.items():
        for group, cases in _by_group(judged_cases(store, within, workload, metric), workload, rule).items():
            fallen: dict[str, list[Fallen]] = defaultdict(list)
            for case in cases:
                rows = case_rows(store, within, workload, metric, case["fingerprint"], case["case_key"])
                per_node = {node: list(mine) for node, mine in groupby(rows, itemgetter(0))}
                medians = {node: statistics.median(row[2] for row in mine) for node, mine in per_node.items()}
                ordered = sorted(medians.values())
                for node in nodes & medians.keys():
                    judged = against_peers(workload, case["case"], rule, Without(ordered, [medians[node]]), medians[node],
                                           [row[1] for row in per_node[node]])
                    if judged is None:
                        few[node] += 1
                    else:
                        fallen[node].append(judged)
            for node, sizes in fallen.items():
                out.judged[node].add("slower-than-peers")
                out.found(node, "slower-than-peers", peer_findings(node, campaign, {group: sizes}, rule), str(group))
    for node, count in few.items():
        out.note(node, "slower-than-peers", few_peers_note(node, count, campaign, rule))


def _task_failed(store: Store, filters: Filters, campaign: str, nodes: set[str], rules: Rules, out: _Collected) -> None:
    from wirewise.orchestrator.store.judging import passed_nodes
    from wirewise.orchestrator.store.results import select_rows

    tasks = sorted((row for status in FAILED for row in select_rows(store, replace(filters, campaigns=(campaign,), status=status))
                    if row["node"] in nodes), key=itemgetter("node", "id"))
    known: dict[tuple, set[str]] = {}

    def passed(what: dict[str, Any]) -> set[str]:
        key = (what["fingerprint"], what["workload"], *sorted(what["equal"].items()))
        if key not in known:
            known[key] = passed_nodes(store, filters, campaign, what["fingerprint"], what["workload"], what["equal"])
        return known[key]

    for node in nodes:
        out.judged[node].add("task-failed")  # judge_history: a node with a campaign had its tasks judged
    for node, failed in groupby(tasks, itemgetter("node")):
        out.found(node, "task-failed", failed_findings(node, campaign, list(failed), passed, rules))


def _transport_off_nvlink(store: Store, filters: Filters, nodes: list[str], in_one_domain: InOneDomain | None,
                          out: _Collected) -> None:
    from wirewise.orchestrator.store.judging import newest_carried

    for start in range(0, len(nodes), NODES_AT_ONCE):
        carried = newest_carried(store, filters, nodes[start:start + NODES_AT_ONCE])
        multi = [f["id"] for f in carried if (f["node_count"] or 1) > 1]
        spans = in_one_domain(multi) if in_one_domain and multi else {}
        for node, mine in groupby(carried, itemgetter("node")):
            found, judged = transport_off_nvlink(node, list(mine), lambda ids: {i: spans.get(i, False) for i in ids})
            if judged:
                out.judged[node].add("transport-off-nvlink")
            out.found(node, "transport-off-nvlink", found)


__all__ = ["judge_every_node"]
