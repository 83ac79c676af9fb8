"""The rules over the history: which nodes measured worse than they should.

- busbw-below-baseline / tokens-below-baseline: per case, the node's latest `repeats` results
  (their median) against the baseline of its fingerprint: the other results of the case in
  the history (the node's older ones included: on a cluster with one node of a type, its own
  past is the baseline), or an imported baseline while the history rests on fewer than
  `min_results`. A case is wirewise.case's: a slower run of another case (a bf16 sweep, a
  deliberate `--transport pcie` run, a 2-node run, CUDA-graph timings) is judged against its
  own case, never against this one. A size falls when the median is more than max_drop below
  the baseline's median and more than `sigmas` standard errors (scaled_mad / sqrt(repeats)) below
  it; a collective's case less its size and form fires when at least min_share of its judged
  sizes fall.
- slower-than-peers: in the node's latest campaign, each case's median per node; the node
  against the median of its same-fingerprint peers', by more than max_drop and `sigmas` times
  the scaled MAD of the peers' medians.
- task-failed: a task of the node's latest campaign that failed or timed out where the same
  case passed on at least min_peers same-fingerprint peers.
- transport-off-nvlink: the node's newest run of each case whose wiring promises NVLink (the
  default transport on GPUs of one NVLink group, or nodes of one multi-node NVLink domain) but
  whose NCCL connections, as its INFO lines show (transport_carried), went through host memory
  or a network instead (wirewise.nccl_info.off_nvlink).

Everything here is a pure function of result rows (wirewise.orchestrator.results.rows), so
the benchmark (tests/benchmarks/bench_rules.py) runs the same code on generated histories.
`runs` tells a result's GPU indices and run parameters (for the measurement that confirms a
finding); None leaves them out.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wirewise.case import CASE_FIELDS
from wirewise.orchestrator.health.baseline import MAD_TO_SIGMA, METRIC, Baseline, case_of, group_by_case
from wirewise.orchestrator.health.findings import Finding, percent
from wirewise.orchestrator.health.rules import Rules
from wirewise.units import bytes_text

Runs = Callable[[list[int]], dict[int, dict[str, Any]]]  # result ids -> {id: {"gpus": [...], "params": {...}}}
# result ids -> whether each result's nodes all sit in one multi-node NVLink domain
InOneDomain = Callable[[list[int]], dict[int, bool]]
HISTORY_RULES = ("busbw-below-baseline", "tokens-below-baseline", "slower-than-peers", "task-failed", "transport-off-nvlink")


@dataclass
class Judgement:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # node -> the rules that compared something of it (an enabled rule with nothing to compare
    # did not judge it: a node no rule judged is "not judged", never "healthy")
    judged: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


def judge_history(nodes: list[str], history: list[dict[str, Any]], rules: Rules,
                  imported: dict[tuple, Baseline] | None = None, runs: Runs | None = None,
                  in_one_domain: InOneDomain | None = None) -> Judgement:
    """Every enabled history rule on each node (`in_one_domain` None: no run is known to span one
    multi-node NVLink domain). The history is indexed once (by node, campaign and case), so each
    node costs what it reads of its own results and its cases, not a rescan of every result
    (issue 33: 93 of 110 s on 60 nodes went to those rescans)."""
    out = Judgement()
    index = History(history)
    for node in nodes:
        for rule in HISTORY_RULES:
            if not rules.rules.enabled(rule):
                continue
            if rule == "slower-than-peers":
                found, compared = slower_than_peers(node, index, rules, out.notes)
            elif rule == "task-failed":
                found, compared = task_failed(node, index, rules)
            elif rule == "transport-off-nvlink":
                found, compared = transport_off_nvlink(node, index.of_node(node), in_one_domain)
            else:
                workload = "collective" if rule == "busbw-below-baseline" else "train"
                found, compared = below_baseline(node, index.cases, workload, rules, imported or {}, out.notes)
            out.findings += found
            if compared:
                out.judged[node].add(rule)
    if runs is not None:
        out.findings = [with_measurement(f, runs, rules) for f in out.findings]
    return out


def median_and_spread(ordered: list[float], center: float | None = None) -> tuple[float, float]:
    """(median, scaled MAD around `center`, default the median) of sorted values, as
    statistics.median and baseline.scaled_mad give them, without sorting again: the MAD is the
    middle of two sorted runs of distances (below the center, above it), picked by bisection."""
    median = _middle(len(ordered), ordered.__getitem__)
    center = median if center is None else center
    split = bisect_left(ordered, center)
    below = lambda j: center - ordered[split - 1 - j]  # noqa: E731 (abs(v - c) is exactly c - v for v < c)
    above = lambda j: ordered[split + j] - center  # noqa: E731
    pick = lambda k: _kth(below, split, above, len(ordered) - split, k)  # noqa: E731
    return median, MAD_TO_SIGMA * _middle(len(ordered), pick)


def _middle(count: int, kth: Callable[[int], float]) -> float:
    if count % 2:
        return kth(count // 2)
    return (kth(count // 2 - 1) + kth(count // 2)) / 2


def _kth(a: Callable[[int], float], a_len: int, b: Callable[[int], float], b_len: int, k: int) -> float:
    """The k-th smallest (from 0) of two sorted runs: how many to take from `a` by bisection."""
    lo, hi = max(0, k + 1 - b_len), min(k + 1, a_len)
    while lo < hi:
        taken = (lo + hi) // 2
        if a(taken) < b(k - taken):
            lo = taken + 1
        else:
            hi = taken
    return max(([a(lo - 1)] if lo > 0 else []) + ([b(k - lo)] if lo <= k else []))


class Cases:
    """group_by_case's cases, indexed for judging one node at a time: each node's results per
    case (in the cases' order) and each case's sorted metric values and results per node."""

    def __init__(self, history: list[dict[str, Any]]) -> None:
        self.groups = group_by_case(history)
        self.mine: dict[str, dict[tuple, list[dict[str, Any]]]] = defaultdict(dict)
        self.values: dict[tuple, list[float]] = {}
        self.per_node: dict[tuple, Counter] = {}
        for key, members in self.groups.items():
            metric = METRIC[key[1]]
            self.values[key] = sorted(m[metric] for m in members)
            self.per_node[key] = Counter(m["node"] for m in members)
            for m in members:
                self.mine[m["node"]].setdefault(key, []).append(m)

    def others(self, key: tuple, node: str, judged: list[dict[str, Any]]) -> tuple[Without, int]:
        """The case's sorted values less the judged results', and how many nodes the rest are from."""
        values = Without(self.values[key], [m[METRIC[key[1]]] for m in judged])
        nodes = len(self.per_node[key]) - (self.per_node[key][node] == len(judged))
        return values, nodes


class Without:
    """Sorted values less a few of them (a node's own), read in place: the k-th of what remains
    is found by stepping over the taken positions, so judging each node of a case costs its few
    values, not a copy of the case's (a copy per node made a case cost nodes x results)."""

    def __init__(self, ordered: list[float], taken: list[float]) -> None:
        self.ordered = ordered
        positions: set[int] = set()
        for value in taken:
            at = bisect_left(ordered, value)
            while at in positions:  # an equal value already taken: the next copy of it
                at += 1
            positions.add(at)
        self.taken = sorted(positions)

    def __len__(self) -> int:
        return len(self.ordered) - len(self.taken)

    def __getitem__(self, index: int) -> float:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        for at in self.taken:
            if at > index:
                break
            index += 1
        return self.ordered[index]


class History:
    """The history indexed once: by node, by campaign, by case; the per-campaign cases and each
    node's latest campaign as the rules ask for them."""

    def __init__(self, history: list[dict[str, Any]]) -> None:
        self.cases = Cases(history)
        self.by_node: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.by_campaign: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in history:
            self.by_node[row["node"]].append(row)
            self.by_campaign[row["campaign"]].append(row)
        self._campaign_cases: dict[str, dict[tuple, dict[str, list[dict[str, Any]]]]] = {}
        self._passed: dict[tuple, list[dict[str, Any]]] = {}

    def of_node(self, node: str) -> list[dict[str, Any]]:
        return self.by_node.get(node, [])

    def campaign_cases(self, campaign: str) -> dict[tuple, dict[str, list[dict[str, Any]]]]:
        """The campaign's cases, each as its results per node (both in the history's order)."""
        if campaign not in self._campaign_cases:
            cases = {}
            for key, members in group_by_case(self.by_campaign[campaign]).items():
                per_node: dict[str, list[dict[str, Any]]] = defaultdict(list)
                for m in members:
                    per_node[m["node"]].append(m)
                cases[key] = per_node
            self._campaign_cases[campaign] = cases
        return self._campaign_cases[campaign]

    def passed(self, campaign: str, fingerprint: str, workload: str) -> list[dict[str, Any]]:
        """The campaign's ok results of a wiring and workload."""
        key = (campaign, fingerprint, workload)
        if key not in self._passed:
            self._passed[key] = [f for f in self.by_campaign[campaign] if f["status"] == "ok"
                                 and f["fingerprint"] == fingerprint and f["workload"] == workload]
        return self._passed[key]


# -- against the baseline -------------------------------------------------------------------
@dataclass
class Fallen:
    """One judged size (or training case): the node's median against its reference."""

    label: str
    value: float
    median: float
    floor: float
    basis: str
    fell: bool
    result_ids: list[int]
    size: int | None = None  # a collective's bytes, as measured (the label rounds them: 1.5K)

    @property
    def drop(self) -> float:
        return self.value / self.median - 1

    def evidence(self, unit: str) -> str:
        return f"{self.label}: {self.value:.4g} {unit} vs {self.median:.4g} (floor {self.floor:.4g}, {percent(self.drop)})"


def allowed_drop(rule, scaled_mad: float, median: float, repeats: int) -> float:
    """The largest drop noise explains: max_drop, or `sigmas` standard errors of the node's median
    (the baseline's scaled MAD: one result's robust standard deviation)."""
    relative = scaled_mad / median if median else 0.0
    return min(1.0, max(rule.max_drop, rule.sigmas * relative / math.sqrt(max(repeats, 1))))


def _latest(mine: list[dict[str, Any]], repeats: int) -> list[dict[str, Any]]:
    return sorted(mine, key=lambda f: (str(f["started_at"]), f["id"]), reverse=True)[:repeats]


def below_baseline(node: str, cases: Cases, workload: str, rules: Rules,
                   imported: dict[tuple, Baseline], notes: list[str]) -> tuple[list[Finding], bool]:
    """The node's findings by the rule, and whether it compared any case of the node."""
    rule = baseline_rule(rules, workload)
    groups: dict[tuple, list[Fallen]] = defaultdict(list)
    thin = 0
    for key, members in cases.mine.get(node, {}).items():
        if key[1] != workload:
            continue
        mine = _latest(members, rules.repeats)
        case = case_of(mine[0])
        if not large_enough(workload, case, rule):
            continue
        fallen = against_baseline(key, case, [m["id"] for m in mine], [m[METRIC[workload]] for m in mine],
                                  *cases.others(key, node, mine), rule, imported, rules.min_results)
        if fallen is None:
            thin += 1
            continue
        groups[_group(key[0], workload, case)].append(fallen)
    if thin:
        notes.append(thin_note(node, thin, workload, rules))
    return baseline_findings(node, workload, groups, rule), bool(groups)


def baseline_rule(rules: Rules, workload: str):
    return rules.rules.busbw_below_baseline if workload == "collective" else rules.rules.tokens_below_baseline


def large_enough(workload: str, case: dict[str, Any], rule) -> bool:
    """Whether the rule judges the case: a collective's size at least the rule's min_bytes."""
    return workload != "collective" or case["bytes"] >= rule.min_bytes


def against_baseline(key: tuple, case: dict[str, Any], ids: list[int], values: list[float], others: Without | list[float],
                     nodes: int, rule, imported: dict[tuple, Baseline], min_results: int) -> Fallen | None:
    """One case of a node (its latest results: `ids`, `values`) against the case's other results
    (`others`, sorted, from `nodes` nodes), or an imported baseline; None when neither rests on
    min_results results."""
    workload = key[1]
    reference = _reference(key, others, nodes, imported, min_results)
    if reference is None:
        return None
    value = statistics.median(values)
    floor = reference.median * (1 - allowed_drop(rule, reference.scaled_mad, reference.median, len(values)))
    basis = f"baseline of {reference.results} results on {reference.nodes} node(s)" + (
        "" if reference.origin == "history" else f", imported from {reference.origin}")
    label = _size_label(case) if workload == "collective" else f"{case['model']} {case['strategy']}"
    return Fallen(label, value, reference.median, floor, basis, value < floor, sorted(ids), case.get("bytes"))


def thin_note(node: str, thin: int, workload: str, rules: Rules) -> str:
    return (f"{node}: {thin} {workload} case(s) have fewer than {rules.min_results} results to compare with "
            "(in the history or an imported baseline): not judged")


def baseline_findings(node: str, workload: str, groups: dict[tuple, list[Fallen]], rule) -> list[Finding]:
    """The node's findings of busbw- or tokens-below-baseline from its judged cases by group."""
    name = "busbw-below-baseline" if workload == "collective" else "tokens-below-baseline"
    return [f for group, sizes in sorted(groups.items(), key=lambda item: str(item[0]))
            if (f := _finding(node, name, workload, group, sizes, rule.min_share if workload == "collective" else 1.0))]


@dataclass
class Reference:
    """What a judged case is compared with: a baseline's median and spread, and what it rests on."""

    median: float
    scaled_mad: float
    results: int
    nodes: int
    origin: str = "history"


def _reference(key: tuple, others: Without | list[float], nodes: int, imported: dict[tuple, Baseline],
               min_results: int) -> Reference | Baseline | None:
    """The history's baseline of the case (its other results, sorted) once it rests on min_results
    results, else an imported one that does."""
    if len(others) >= min_results:
        return Reference(*median_and_spread(others), len(others), nodes)
    given = imported.get(key)
    return given if given is not None and given.results >= min_results else None


def _size_label(case: dict[str, Any]) -> str:
    return bytes_text(case["bytes"]) + (" in place" if case["in_place"] else "")


# What one finding covers: a collective's sizes, in and out of place, of one case otherwise; one
# training case. The finding's measurement keeps these fields: the repeat runs that case.
_GROUP_FIELDS = {workload: tuple(name for name in fields if name not in ("bytes", "in_place"))
                 for workload, fields in CASE_FIELDS.items()}


def _group(fingerprint: str, workload: str, case: dict[str, Any]) -> tuple:
    return (fingerprint, workload, *(case[name] for name in _GROUP_FIELDS[workload]))


def _what(workload: str, case: dict[str, Any]) -> str:
    """A finding's case in words: the op or model and strategy, where it ran, and each setting
    that is not the usual one."""
    where = _ranks(case["device"], case["ranks"])
    if (case.get("node_count") or 1) > 1:
        where = f"{case['node_count']} nodes x {case['ranks_per_node'] or '?'} {where.split(' ', 1)[1]}"
    where += f" ({case['geometry']})" if case.get("geometry") else ""
    if workload == "collective":
        said = [f"{case['op']} on {where}", f"transport {case['transport']}", str(case["dtype"])]
        said += ["CUDA graph"] if case.get("cuda_graph") else []
        said += [f"{case['redop']} reduction"] if case.get("redop") not in (None, "sum") else []
    else:
        said = [f"{case['model']} {case['strategy']} on {where}", f"transport {case['transport']}",
                f"{case['precision']}", f"micro-batch {case['micro_batch']} x {case['seq_len']}"]
        said += ["compiled"] if case.get("compile") else []
        said += [f"engine {case['engine']}"] if case.get("engine") not in (None, "native") else []
    said += [f"source {case['source']}"] if case.get("source") != "wirewise" else []
    return ", ".join(said)


def _finding(node: str, rule: str, workload: str, group: tuple, sizes: list[Fallen], min_share: float,
             peers: str = "") -> Finding | None:
    fallen = [s for s in sizes if s.fell]
    if not fallen or len(fallen) < min_share * len(sizes):
        return None
    fingerprint = group[0]
    case = dict(zip(_GROUP_FIELDS[workload], group[2:]))
    drop = statistics.median(s.drop for s in fallen)
    unit = "GB/s" if workload == "collective" else "tokens/s"
    what = _what(workload, case)
    if workload == "collective":
        metric = f"{case['op']}.busbw"
        advice = ("re-run the case on this node to confirm (`wirewise fleet drain` does, before it drains); then check "
                  "`wirewise doctor` on the node itself (NVLinks, PCIe), `nvidia-smi -q -d PERFORMANCE` for throttling, "
                  "and other jobs on the node")
    else:
        metric = f"{case['model']}.{case['strategy']}.tokens_per_s"
        advice = "re-run the training case on this node to confirm; then check the node's collectives (`wirewise doctor`)"
    judged = f"{len(fallen)} of {len(sizes)} judged size(s) fell" if workload == "collective" else ""
    bases = ", ".join(sorted({s.basis for s in fallen}))
    evidence = f"{what}, wiring {fingerprint[:12]}{peers}, against the {bases}: " + "; ".join(s.evidence(unit) for s in fallen)
    if judged:
        evidence += f" ({judged})"
    key = "|".join(str(part) for part in (rule, *group))
    reference = {"workload": workload, "metric": METRIC[workload],
                 "sizes": {s.label: {"median": s.median, "floor": s.floor, "value": s.value} for s in sizes},
                 "min_share": min_share, "result_ids": sorted({i for s in sizes for i in s.result_ids})}
    return Finding(node, rule, evidence, advice, metric=metric, delta=percent(drop), key=key, reference=reference,
                   measurement={"workload": workload, "case": case, "fingerprint": fingerprint,
                                "sizes": sorted({s.size for s in sizes}) if workload == "collective" else []})


def _ranks(device: str, count) -> str:
    return f"{count} CPU rank(s)" if device == "cpu" else f"{count} GPU(s)"


# -- against the peers ----------------------------------------------------------------------
def slower_than_peers(node: str, history: History, rules: Rules,
                      notes: list[str]) -> tuple[list[Finding], bool]:
    """The node's findings by the rule, and whether it compared any case of the node with peers."""
    rule = rules.rules.slower_than_peers
    campaign = _latest_campaign(history.of_node(node))
    if campaign is None:
        return [], False
    groups: dict[tuple, list[Fallen]] = defaultdict(list)
    few = 0
    for key, per_node in history.campaign_cases(campaign).items():
        if node not in per_node:
            continue
        workload = key[1]
        case = case_of(next(iter(per_node.values()))[0])
        if not large_enough(workload, case, rule):
            continue
        medians = {peer: statistics.median(m[METRIC[workload]] for m in ms) for peer, ms in per_node.items()}
        fallen = against_peers(workload, case, rule, Without(sorted(medians.values()), [medians[node]]), medians[node],
                               [m["id"] for m in per_node[node]])
        if fallen is None:
            few += 1
            continue
        groups[_group(key[0], workload, case)].append(fallen)
    if few:
        notes.append(few_peers_note(node, few, campaign, rule))
    return peer_findings(node, campaign, groups, rule), bool(groups)


def against_peers(workload: str, case: dict[str, Any], rule, peers: Without, value: float, ids: list[int]) -> Fallen | None:
    """One case of a node's latest campaign (the median of its results there, `value`) against
    its same-fingerprint peers' medians (`peers`, sorted); None with fewer than min_peers peers."""
    if len(peers) < rule.min_peers:
        return None
    reference, spread = median_and_spread(peers)
    floor = reference * (1 - min(1.0, max(rule.max_drop, rule.sigmas * spread / reference)))
    label = _size_label(case) if workload == "collective" else f"{case['model']} {case['strategy']}"
    return Fallen(label, value, reference, floor, f"median of {len(peers)} peers", value < floor, sorted(ids),
                  case.get("bytes"))


def few_peers_note(node: str, few: int, campaign: str, rule) -> str:
    return (f"{node}: {few} case(s) of campaign {campaign} have fewer than {rule.min_peers} same-fingerprint "
            "peers: not compared with peers")


def peer_findings(node: str, campaign: str, groups: dict[tuple, list[Fallen]], rule) -> list[Finding]:
    """The node's slower-than-peers findings from its judged cases by group."""
    return [f for group, sizes in sorted(groups.items(), key=lambda item: str(item[0]))
            if (f := _finding(node, "slower-than-peers", group[1], group, sizes, rule.min_share,
                              peers=f", campaign {campaign}"))]


def _latest_campaign(mine: list[dict[str, Any]]) -> str | None:
    """The campaign of the node's results (`mine`) that ran last."""
    latest: dict[str, str] = {}
    for f in mine:
        if f["campaign"]:
            latest[f["campaign"]] = max(latest.get(f["campaign"], ""), str(f["started_at"]))
    return max(latest, key=latest.get) if latest else None


# -- tasks that failed where their peers passed ------------------------------------------------
def task_failed(node: str, history: History, rules: Rules) -> tuple[list[Finding], bool]:
    """The node's findings by the rule, and whether it had tasks in a campaign to judge."""
    campaign = _latest_campaign(history.of_node(node))
    if campaign is None:
        return [], False
    failed = [f for f in history.of_node(node) if f["campaign"] == campaign and f["status"] in FAILED]

    def passed(what: dict[str, Any]) -> set[str]:
        return {f["node"] for f in history.passed(campaign, what["fingerprint"], what["workload"])
                if all(f[k] == v for k, v in what["equal"].items())}

    return failed_findings(node, campaign, failed, passed, rules), True


FAILED = ("failed", "timeout")


def failed_findings(node: str, campaign: str, tasks: list[dict[str, Any]], passed: Callable[[dict[str, Any]], set[str]],
                    rules: Rules) -> list[Finding]:
    """The node's task-failed findings from its failed tasks of its latest campaign (`tasks`, in
    id order); `passed(what)` names the nodes with an ok result in the campaign of what's
    fingerprint and workload whose fields equal what's `equal`."""
    rule = rules.rules.task_failed
    found = []
    seen: set[tuple] = set()
    for failed in tasks:
        # its case, less what a task that failed before measuring does not say (its size, its op)
        fields = _GROUP_FIELDS[failed["workload"]]
        what = (failed["workload"], failed["fingerprint"], *(failed[k] for k in fields))
        if what in seen:
            continue
        seen.add(what)
        peers = passed({"fingerprint": failed["fingerprint"], "workload": failed["workload"],
                        "equal": {k: failed[k] for k in fields if failed[k] is not None}}) - {node}
        if len(peers) < rule.min_peers:
            continue
        name = failed["op"] or failed["model"] or failed["workload"]
        found.append(Finding(
            node, "task-failed",
            f"{failed['workload']} {name} on {failed['gpus']} GPU(s) {failed['status']} in campaign {campaign}, "
            f"where it passed on {len(peers)} peer(s) ({', '.join(sorted(peers)[:5])})",
            "read the task's rank logs (`wirewise campaign status` names its folder); re-run it on this node",
            metric=f"{name}.status", delta=failed["status"],
            key="|".join(map(str, ("task-failed", *what))),
            reference={"workload": failed["workload"], "result_ids": [failed["id"]]},
            measurement={"workload": failed["workload"], "case": {k: failed[k] for k in fields}, "fingerprint": failed["fingerprint"],
                         "sizes": [failed["bytes"]] if failed["bytes"] else []},
        ))
    return found


# -- runs whose NCCL traffic left the NVLink their wiring promises ------------------------------
def nvlink_promised(row: dict[str, Any], spans_domain: bool) -> tuple[bool, bool]:
    """(inside a node, between nodes): where a result's wiring promises NVLink for its traffic.
    Inside: the default transport on GPUs of one NVLink group (geometry packed). Between: the
    default transport on nodes of one multi-node NVLink domain (`spans_domain`)."""
    default = row["transport"] == "default" and row["device"] == "gpu"
    return (default and row["geometry"] == "packed",
            default and (row["node_count"] or 1) > 1 and spans_domain)


def off_nvlink_of(row: dict[str, Any], spans_domain: bool) -> list[str]:
    """The transports a result's NCCL connections used off the NVLink its wiring promises."""
    from wirewise.nccl_info import off_nvlink

    return off_nvlink(row["transport_carried"], row["node_count"] or 1, *nvlink_promised(row, spans_domain))


def transport_off_nvlink(node: str, mine: list[dict[str, Any]],
                         in_one_domain: InOneDomain | None) -> tuple[list[Finding], bool]:
    """The node's findings by the rule (its newest run of each case among its results, `mine`),
    and whether it had a run to judge: one whose transport was read and whose wiring promises NVLink."""
    newest: dict[str, dict[str, Any]] = {}
    for row in mine:
        if row["status"] == "ok" and row.get("transport_carried"):
            if row["case_key"] not in newest or row["started_at"] >= newest[row["case_key"]]["started_at"]:
                newest[row["case_key"]] = row
    multi = [f["id"] for f in newest.values() if (f["node_count"] or 1) > 1]
    spans = in_one_domain(multi) if in_one_domain and multi else {}
    judged = [f for f in newest.values() if any(nvlink_promised(f, spans.get(f["id"], False)))]
    found = []
    for row in judged:
        off = off_nvlink_of(row, spans.get(row["id"], False))
        if not off:
            continue
        case = case_of(row)
        name = row["op"] or row["model"] or row["workload"]
        inside, between = nvlink_promised(row, spans.get(row["id"], False))
        promise = " and ".join(filter(None, ["its GPUs share NVLink" if inside else "", "its nodes share an NVLink domain" if between else ""]))
        found.append(Finding(
            node, "transport-off-nvlink",
            f"{row['workload']} {_what(row['workload'], case)}: {promise}, but NCCL connected them via "
            f"{', '.join(off)} (its INFO lines: {row['transport_carried']})",
            "check what turns NCCL's peer-to-peer off on this node: NCCL_P2P_DISABLE or NCCL_P2P_LEVEL in the job's "
            "environment, a container that shows each rank only its own GPU, CUDA IPC or cuMem failing (ulimit -l, "
            "/dev/shm), nvidia-fabricmanager or the IMEX service down; `wirewise fleet drain` repeats the run first",
            metric=f"{name}.transport", delta="+".join(off),
            key="|".join(map(str, ("transport-off-nvlink", row["case_key"]))),
            reference={"workload": row["workload"], "result_ids": [row["id"]]},
            measurement={"workload": row["workload"], "case": case, "fingerprint": row["fingerprint"],
                         "sizes": [row["bytes"]] if row["bytes"] else []},
        ))
    return found, bool(judged)


# -- what confirms a finding ---------------------------------------------------------------
def with_measurement(finding: Finding, runs: Runs, rules: Rules) -> Finding:
    """The finding with the run that shows it again: the judged results' GPUs and run
    parameters (iterations, warm-up, backend), its sizes, `repeats` times."""
    from dataclasses import replace

    ids = finding.reference.get("result_ids") or []
    known = runs(ids) if ids else {}
    if not known or finding.measurement is None:
        return finding
    latest = known[max(known)]
    measurement = {**finding.measurement, "gpus": latest["gpus"], "params": latest["params"],
                   "device": latest.get("device"), "repeats": rules.repeats}
    gpus = sorted({g for run in known.values() for g in run["gpus"]}) or None
    return replace(finding, measurement=measurement, gpus=gpus)


__all__ = ["Judgement", "judge_history", "allowed_drop", "Cases", "History", "Without", "median_and_spread"]
