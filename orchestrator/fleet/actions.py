"""`wirewise fleet status | drain | retest | resume`: acting on the verdicts, through Slurm, with
every action in the audit trail (fleet_actions: what, why, the evidence, who asked).

- status: every node with its Slurm state and reason, its verdict (healthy, flagged: open
  findings; confirmed: a repeat showed them; unknown: never judged), the evidence, its trail.
- drain: nodes with open findings that still take jobs. A dry run says what it would do. With
  --apply each drain is first claimed under the guardrails (wirewise.orchestrator.health.guard),
  then the failing measurement is repeated on the node (wirewise.orchestrator.fleet.repeats);
  only a repeat that fails again drains it, with the reason `wirewise:<rule>:<metric>:<delta>`.
  A repeat that passes clears the findings. Beyond the guardrails nothing is drained unless
  --beyond-guardrails names how many more.
- retest: nodes wirewise drained (its reason is still on them, and the trail holds that drain):
  the findings' measurements again, inside a maintenance reservation of the node (the order that
  keeps user jobs off it is wirewise.orchestrator.slurm.states' docstring); the node is drained
  again afterwards, whatever the result: resuming it is `resume`'s.
- resume: nodes wirewise drained whose latest re-test since that drain passed.
A node drained by someone else (another reason, or a wirewise reason with no drain of
wirewise's in the trail) is never touched.

Stopped (SIGTERM, SIGINT, SIGHUP: wirewise.orchestrator.health.stops) part way, each leaves Slurm
and the trail agreeing: drain releases its claims (`interrupted`) and cancels its repeats;
retest drains each node it resumed again, deletes its reservation and records the re-test
`interrupted`; a drain or a resume and its record are never parted.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.health.findings import is_ours
from wirewise.orchestrator.health.rules import Rules
from wirewise.runs import utc_stamp

TRAIL = 20  # actions per node that status shows
RETEST_SLACK_MIN = 10  # the reservation outlasts the re-test's timeout by this much
CLAIM_SLACK_S = 600  # a drain's claim outlasts its repeats' timeout by this much (collecting, judging, draining)


def _states(partition: str | None, nodes: list[str] | None):
    from wirewise.orchestrator.slurm.nodes import partition_nodes, slurm_nodes

    states = slurm_nodes(partition)
    if partition:  # a misspelt partition is no empty fleet
        shown = {p for state in states.values() for p in state.partitions}
        missing = [p for p in partition.split(",") if p not in shown]
        if missing:
            known = sorted(partition_nodes(slurm_nodes()))
            raise UserError(f"--partition {missing[0]!r}: Slurm has no such partition with nodes (its partitions: "
                            f"{', '.join(known) or 'none'})")
    if nodes:
        unknown = [n for n in nodes if n not in states]
        if unknown:
            where = f" in partition {partition}" if partition else ""
            raise UserError(f"--node {unknown[0]!r}: Slurm has no such node{where} (`sinfo -N` lists them)")
    return states


def _verdict(check: dict | None, open_rows: list[dict]) -> str:
    if open_rows:
        return "confirmed" if any(r["confirmed"] for r in open_rows) else "flagged"
    return "healthy" if check else "unknown"


# -- status -------------------------------------------------------------------------------------
def fleet_status(store, partition: str | None = None, nodes: list[str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """(a row per node, notes). The verdicts are the store's: where Slurm cannot be asked, each
    node's Slurm state and reason are null, the nodes are those named or those the store knows,
    and a note says what Slurm was not asked."""
    from wirewise.orchestrator.slurm.command import SlurmError
    from wirewise.orchestrator.store.health import actions, findings, latest_checks

    notes = []
    try:
        states = _states(partition, nodes)
        names = sorted(nodes or states)
    except SlurmError as exc:
        states = {}
        names = sorted(nodes or _stored_nodes(store))
        unfiltered = f"; not filtered by partition {partition}, which only Slurm knows" if partition and not nodes else ""
        notes.append(f"{exc}: the nodes' Slurm state and reason are not shown, the verdicts are the stored ones{unfiltered}")
    checks = latest_checks(store, names)
    open_rows: dict[str, list[dict]] = defaultdict(list)
    for row in findings(store, names):
        open_rows[row["node"]].append(row)
    trail: dict[str, list[dict]] = defaultdict(list)
    for row in actions(store, names, last=TRAIL):
        trail[row["node"]].append(row)
    out = []
    for name in names:
        state = states.get(name)
        check = checks.get(name)
        out.append({
            "node": name, "state": state and state.state, "reason": state and state.reason, "reason_by": state and state.reason_by,
            "drained": state.drained if state else None,
            "partitions": list(state.partitions) if state else [], "verdict": _verdict(check, open_rows[name]),
            "checked_at": check["checked_at"] if check else None, "checked_by": check["source"] if check else None,
            "evidence": [f"{r['rule']}: {r['evidence']}" for r in open_rows[name]],
            "findings": [_finding_json(r) for r in open_rows[name]],
            "actions": [_action_json(a) for a in trail[name]],
        })
    return out, notes


def _stored_nodes(store) -> set[str]:
    """Every node the store knows: a wiring, a check, a finding or an action stored for it."""
    from wirewise.orchestrator.store.health import actions, findings, latest_checks
    from wirewise.orchestrator.store.topology import node_names

    return node_names(store) | set(latest_checks(store)) | {row["node"] for row in findings(store)} | {row["node"] for row in actions(store, last=1)}


def _finding_json(row: dict) -> dict[str, Any]:
    from wirewise.orchestrator.health.findings import drain_reason

    return {"id": row["id"], "rule": row["rule"], "metric": row["metric"], "delta": row["delta"],
            "reason": drain_reason(row["rule"], row["metric"], row["delta"]), "evidence": row["evidence"],
            "gpus": row["gpus"], "confirmed": row["confirmed"], "source": row["source"], "opened_at": row["opened_at"]}


def _action_json(row: dict) -> dict[str, Any]:
    return {k: row[k] for k in ("at", "action", "outcome", "reason", "detail", "asked_by", "campaign")}


# -- drain ---------------------------------------------------------------------------------------
def fleet_drain(store, rules: Rules, apply: bool = False, partition: str | None = None, nodes: list[str] | None = None,
                beyond: int = 0, timeout_s: float = 900.0, rules_file: str | None = None) -> dict[str, Any]:
    from wirewise.orchestrator.health.guard import Budget, asked_by
    from wirewise.orchestrator.health.node import most_severe
    from wirewise.clock import utcnow
    from wirewise.orchestrator.store.health import drain_budget, findings

    seen_at = utcnow()
    states = _states(partition, nodes)
    names = sorted(nodes or states)
    by_node: dict[str, list[dict]] = defaultdict(list)
    for row in findings(store, names):
        by_node[row["node"]].append(row)
    skipped = [{"node": n, "why": f"already {states[n].unavailable} ({states[n].reason or 'no reason'})"}
               for n in sorted(by_node) if not states[n].available]
    candidates = [n for n in sorted(by_node) if states[n].available]
    wanted = sorted(({"node": n, "lead": most_severe([_as_finding(r) for r in by_node[n]])} for n in candidates),
                    key=lambda w: w["lead"].severity)
    for w in wanted:
        w["reason"] = w["lead"].reason
        w["evidence"] = {"findings": [_finding_json(r) for r in by_node[w["node"]]]}
    budget = Budget(rules.guardrails, states, beyond)
    report: dict[str, Any] = {"apply": apply, "drained": [], "not_confirmed": [], "not_measured": [], "held": [],
                              "skipped": skipped, "guardrails": rules.guardrails.model_dump(), "stopped": None}
    if not apply:  # the claim's own answer, claiming nothing
        for w, why in zip(wanted, drain_budget(store, [w["node"] for w in wanted], budget)):
            item = {"node": w["node"], "reason": w["reason"], "findings": w["evidence"]["findings"],
                    "confirm_by": _confirm_by(by_node[w["node"]])}
            if why is None:
                report.setdefault("would_drain", []).append(item)
            else:
                report["held"].append({**item, "why": why})
        _stopped(report, budget)
        return report
    from wirewise.orchestrator.health.stops import STOPPED, stop_name, stops_raise
    from wirewise.orchestrator.store.health import CLAIMED, SKIPPED, claim_drains, release_claims

    with stops_raise():
        claims = claim_drains(store, wanted, budget, asked_by(), timeout_s + CLAIM_SLACK_S, seen_at)
        for claim in claims:
            if claim["outcome"] == "held":
                report["held"].append({"node": claim["node"], "reason": claim["reason"], "why": claim["detail"]})
            elif claim["outcome"] == SKIPPED:
                report["skipped"].append({"node": claim["node"], "why": claim["detail"]})
        ready = [c for c in claims if c["outcome"] == CLAIMED]
        try:
            if ready:
                _confirm_and_drain(store, rules, ready, by_node, partition, timeout_s, rules_file, budget, report)
        except STOPPED as exc:
            release_claims(store, [c["id"] for c in ready], "interrupted", f"stopped by {stop_name(exc)} before its repeat was judged")
            raise
        except Exception as exc:
            release_claims(store, [c["id"] for c in ready], "failed", f"{type(exc).__name__}: {exc}"[:500])
            raise
    _stopped(report, budget)
    return report


def _as_finding(row: dict):
    from wirewise.orchestrator.health.findings import from_json

    return from_json({**row, "check": row["rule"]})


def _confirm_by(rows: list[dict]) -> list[str]:
    """What would be repeated before the drain, in words."""
    from wirewise.orchestrator.health.findings import LIVE_RULES
    from wirewise.orchestrator.fleet.repeats import repeat_refused
    from wirewise.orchestrator.fleet.pair_findings import is_pair
    from wirewise.units import bytes_text

    said = []
    for row in rows:
        m = row["measurement"] or {}
        if is_pair(row):
            test = m["test"]
            said.append(f"{row['rule']}: {test['op']} at {bytes_text(test['size'])} against a known-good node "
                        f"({', '.join(m['partners']) or 'none known'})")
        elif row["rule"] in LIVE_RULES:
            said.append(f"{row['rule']}: NVML read again on the node")
        elif m.get("params") is None:
            said.append(f"{row['rule']}: nothing to repeat (its results are gone): not drained")
        elif refused := repeat_refused(row):
            said.append(f"{row['rule']}: not repeated: {refused}: not drained")
        else:
            from wirewise.orchestrator.health.judge import _ranks

            case = m.get("case", {})
            what = case.get("op") or f"{case.get('model')} {case.get('strategy')}"
            where = (f"GPUs {','.join(map(str, m['gpus']))}" if m.get("gpus")
                     else _ranks(case.get("device"), case.get("ranks", case.get("gpus"))))
            said.append(f"{row['rule']}: {what} on {where}, transport {case.get('transport', 'default')}, "
                        f"{m.get('repeats')} repeat(s) of its case")
    return said


def _confirm_and_drain(store, rules, claims, by_node, partition, timeout_s, rules_file, budget, report) -> None:
    from wirewise.orchestrator.fleet.repeats import FAILING, PASSING, NodeRun, run_all
    from wirewise.orchestrator.health.node import apply_drain
    from wirewise.orchestrator.store.health import clear_findings, confirm_findings, set_outcome

    runs = run_all(store, rules, [NodeRun(c["node"], by_node[c["node"]], "confirm") for c in claims], partition,
                   timeout_s, rules_file)
    for claim, run in zip(claims, runs):
        evidence = {v.finding_id: v.evidence for v in run.verdicts}
        said = "; ".join(evidence.values())
        item = {"node": claim["node"], "reason": claim["reason"], "campaign": run.measured_by, "repeat": said}
        if run.outcome == FAILING:
            failing = [v.finding_id for v in run.verdicts if v.outcome == FAILING]
            confirm_findings(store, failing, {i: f"{_evidence(by_node[claim['node']], i)}; {evidence[i]}" for i in failing})
            beyond = " (beyond the guardrails, as --beyond-guardrails asked)" if claim["node"] in budget.passed_beyond else ""
            apply_drain(store, claim, f"confirmed{beyond}: {said}", run.measured_by)
            report["drained"].append(item)
        elif run.outcome == PASSING:
            clear_findings(store, [v.finding_id for v in run.verdicts], f"confirm: the repeat passed ({run.measured_by or 'live'})")
            set_outcome(store, claim["id"], "not-confirmed", f"the repeat passed: {said}")
            report["not_confirmed"].append(item)
        else:
            set_outcome(store, claim["id"], "not-measured", said)
            report["not_measured"].append(item)


def _evidence(rows: list[dict], finding_id: int) -> str:
    return next(r["evidence"] for r in rows if r["id"] == finding_id)


def _stopped(report: dict[str, Any], budget) -> None:
    if report["held"]:
        count = len(report["held"])
        report["stopped"] = (f"{count} node(s) held by the guardrails: {report['held'][0]['why']}; to drain them as well, "
                             f"run again with --beyond-guardrails {count}")


# -- retest --------------------------------------------------------------------------------------
def _ours(store, states, names: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """(the drained nodes wirewise drained and still holds, the other drained nodes with why)."""
    from wirewise.orchestrator.store.health import last_drains

    drained = [n for n in names if states[n].drained]
    ours = last_drains(store, drained) if drained else {}
    mine, others = [], []
    for name in drained:
        reason = states[name].reason
        if not is_ours(reason):
            others.append({"node": name, "why": f"drained by someone else ({reason or 'no reason'}, set by "
                                                f"{states[name].reason_by or 'unknown'}): left alone"})
        elif name not in ours or ours[name]["reason"] != reason:
            others.append({"node": name, "why": f"its reason {reason!r} is wirewise's form, but no such drain of wirewise's "
                                                "is in the trail: left alone"})
        else:
            mine.append(name)
    return mine, others


def fleet_retest(store, rules: Rules, apply: bool = False, partition: str | None = None, nodes: list[str] | None = None,
                 timeout_s: float = 900.0, rules_file: str | None = None) -> dict[str, Any]:
    from wirewise.orchestrator.store.health import findings

    states = _states(partition, nodes)
    names = sorted(nodes or states)
    mine, skipped = _ours(store, states, names)
    by_node: dict[str, list[dict]] = defaultdict(list)
    for row in findings(store, mine):
        by_node[row["node"]].append(row)
    for name in [n for n in mine if not by_node[n]]:
        skipped.append({"node": name, "why": "no open finding to re-test (already passed: `wirewise fleet resume`)"})
    todo = [n for n in mine if by_node[n]]
    report: dict[str, Any] = {"apply": apply, "skipped": skipped, "passed": [], "failed": [], "not_measured": []}
    if not apply:
        report["would_retest"] = [{"node": n, "reason": states[n].reason, "measure": _confirm_by(by_node[n])} for n in todo]
        return report
    if todo:
        _retest(store, rules, states, todo, by_node, partition, timeout_s, rules_file, report)
    return report


def _retest(store, rules, states, todo, by_node, partition, timeout_s, rules_file, report) -> None:
    import getpass

    from wirewise.orchestrator.health.guard import asked_by
    from wirewise.orchestrator.fleet.repeats import FAILING, PASSING, NodeRun, run_all
    from wirewise.orchestrator.health.stops import STOPPED, stop_name, stops_held, stops_raise
    from wirewise.orchestrator.slurm.command import SlurmError
    from wirewise.orchestrator.slurm.states import reserve, resume
    from wirewise.orchestrator.store.health import clear_findings, confirm_findings, record_action

    who = asked_by()
    stamp = utc_stamp("digits")
    runs, reserved = [], []
    stopped = None
    with stops_raise():
        try:
            for name in todo:
                reservation = f"wirewise-retest-{name}-{stamp}"
                with stops_held():  # a node reserved and resumed is one the cleanup knows
                    try:
                        reserve(reservation, [name], int(timeout_s // 60) + RETEST_SLACK_MIN, getpass.getuser())
                    except SlurmError as exc:
                        record_action(store, name, "retest", "failed", who, states[name].reason,
                                      f"no maintenance reservation: {exc}; an operator or admin of Slurm may create one")
                        report["failed"].append({"node": name, "why": f"no maintenance reservation: {exc}"})
                        continue
                    reserved.append((name, reservation))
                    resume(name)  # reserved first: only the reservation's jobs can start on it now
                runs.append(NodeRun(name, by_node[name], "retest", reservation=reservation))
            run_all(store, rules, runs, partition, timeout_s, rules_file)
        except STOPPED as exc:
            stopped = f"stopped by {stop_name(exc)}"
            raise
        except Exception as exc:
            stopped = f"stopped by an error ({type(exc).__name__}: {str(exc)[:300]})"
            raise
        finally:
            with stops_held():
                _drain_again(store, states, reserved, who, stopped)
    for run in runs:
        evidence = {v.finding_id: v.evidence for v in run.verdicts}
        said = "; ".join(evidence.values())
        item = {"node": run.node, "reason": states[run.node].reason, "campaign": run.measured_by, "reservation": run.reservation,
                "retest": said}
        if run.outcome == PASSING:
            clear_findings(store, list(evidence), f"retest passed ({run.measured_by or 'live'})")
            report["passed"].append(item)
        elif run.outcome == FAILING:
            confirm_findings(store, [v.finding_id for v in run.verdicts if v.outcome == FAILING], {})
            report["failed"].append(item)
        else:
            report["not_measured"].append(item)
        outcome = {PASSING: "passed", FAILING: "failed"}.get(run.outcome, "not-measured")
        record_action(store, run.node, "retest", outcome, who, states[run.node].reason, said,
                      {"findings": [_finding_json(r) for r in by_node[run.node]], "verdicts": evidence}, run.measured_by)


def _drain_again(store, states, reserved: list[tuple[str, str]], who: str, stopped: str | None) -> None:
    """Each re-tested node drained again with its reason before its reservation goes; a re-test
    stopped part way recorded as `interrupted`. A node Slurm would not drain again is said
    loudly in the trail: it is in service inside its reservation."""
    from wirewise.orchestrator.slurm.command import SlurmError
    from wirewise.orchestrator.slurm.states import drain, unreserve
    from wirewise.orchestrator.store.health import record_action

    for name, reservation in reserved:
        reason = states[name].reason
        try:
            drain(name, reason)
        except SlurmError as exc:
            record_action(store, name, "retest", "failed", who, reason,
                          f"NOT drained again after its re-test ({exc}); its reservation {reservation} is kept: drain it by hand")
            continue
        try:
            unreserve(reservation)
            gone = f"reservation {reservation} deleted"
        except SlurmError as exc:
            gone = f"reservation {reservation} not deleted ({exc})"
        if stopped:
            record_action(store, name, "retest", "interrupted", who, reason,
                          f"{stopped}: drained again, {gone}; its findings stay open")


# -- resume --------------------------------------------------------------------------------------
def fleet_resume(store, apply: bool = False, partition: str | None = None, nodes: list[str] | None = None) -> dict[str, Any]:
    from wirewise.orchestrator.health.guard import asked_by
    from wirewise.orchestrator.slurm.states import resume
    from wirewise.orchestrator.store.health import actions, findings, last_drains, record_action

    states = _states(partition, nodes)
    names = sorted(nodes or states)
    mine, skipped = _ours(store, states, names)
    drains = last_drains(store, mine) if mine else {}
    retests = {a["node"]: a for a in actions(store, mine, kinds=("retest",), last=1)} if mine else {}
    still_open = {row["node"] for row in findings(store, mine)} if mine else set()
    ready = []
    for name in mine:
        retest = retests.get(name)
        if retest is None or (retest["at"], retest["id"]) <= (drains[name]["at"], drains[name]["id"]):
            skipped.append({"node": name, "why": "not re-tested since wirewise drained it (`wirewise fleet retest --apply`)"})
        elif retest["outcome"] != "passed":
            skipped.append({"node": name, "why": f"its latest re-test {retest['outcome']}: {retest['detail'] or ''}".rstrip(": ")})
        elif name in still_open:
            skipped.append({"node": name, "why": "open findings remain since its re-test passed (see `wirewise fleet status`)"})
        else:
            ready.append({"node": name, "reason": states[name].reason, "retest": retest["detail"]})
    report = {"apply": apply, "skipped": skipped, ("resumed" if apply else "would_resume"): ready}
    if apply:
        from wirewise.orchestrator.health.stops import stops_held

        who = asked_by()
        for item in ready:
            with stops_held():  # a node resumed is one the trail says was
                resume(item["node"])
                record_action(store, item["node"], "resume", "resumed", who, item["reason"], f"re-test passed: {item['retest']}")
    return report
