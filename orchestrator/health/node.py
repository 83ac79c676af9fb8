"""What runs on a node for Slurm: `doctor --health-check` (HealthCheckProgram) and
`doctor --prolog` (Prolog).

Health check: no torch and no GPU work; NVML (the live rules) and the node's open findings in
the store, in at most `health_check.time_limit_s` (10 s; slurmd kills the program at 60 s). A
live rule that fires is read again a moment later (a second NVML read confirms it); the
node is then drained through Slurm with the finding's reason, under the guardrails, unless
`--report-only`. Open findings a repeat has already confirmed drain it too; ones not yet
confirmed are reported (`fleet drain` confirms them first). Slurm runs the program with no
arguments and a bare environment (only SLURMD_NODENAME; tried on Slurm 22.05), so a wrapper
script gives it the database and PATH (README).

Prolog: a short collective (rules.prolog: op, sizes, iterations) on the job's own GPUs
(SLURM_JOB_GPUS), checked for correctness and judged by busbw-below-baseline as one repeat, in
at most `prolog.time_limit_s` (30 s). A fault drains the node with its reason (under the
guardrails) and exits 1: Slurm then requeues the job, and keeps the reason already set
(tried on Slurm 22.05: the prolog's own `scontrol update ... Reason=` stays in `sinfo -R`).
Held by a guardrail, it exits 0 and the job runs: the guardrails never let a rule take out more
nodes than they allow. Its results are stored as history.

A watchdog ends either mode at its time limit with one line on stderr: a check that hangs
(NVML on a GPU that fell off the bus, a database that does not answer) must not hold slurmd.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from wirewise.errors import UserError
from wirewise.jobenv import JobEnv
from wirewise.orchestrator.health.findings import Finding
from wirewise.orchestrator.health.rules import Rules

CONFIRM_PAUSE_S = 0.5  # between the two NVML reads of a live finding


@dataclass
class NodeOutcome:
    node: str
    mode: str  # health-check | prolog
    findings: list[Finding] = field(default_factory=list)
    acted: list[Finding] = field(default_factory=list)  # what the drain was for
    drained: bool = False
    held: str | None = None  # the guardrail that held the drain
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    judged: bool = True  # False: no rule could read anything of the node (no NVML, no findings)

    @property
    def healthy(self) -> bool | None:
        """False when a rule fired, None when nothing was judged, else True."""
        if self.findings:
            return False
        return True if self.judged else None

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "mode": self.mode, "healthy": self.healthy, "drained": self.drained,
                "held": self.held, "reason": self.acted[0].reason if self.acted else None,
                "findings": [f.to_json() for f in self.findings], "notes": self.notes, "seconds": round(self.seconds, 3)}


def this_node(given: str | None = None) -> str:
    """The node's Slurm name: --node, else SLURMD_NODENAME (slurmd sets it for the health check
    and the prolog), else the short host name (wirewise.jobenv)."""
    from wirewise.jobenv import read_job_env

    return given or read_job_env().node_name


def watchdog(limit_s: float, what: str) -> threading.Timer:
    """Ends the process with one line and exit 1 if it runs past `limit_s`."""
    def expire() -> None:
        sys.stderr.write(f"wirewise: error: {what} did not finish within {limit_s:g} s; stopped\n")
        sys.stderr.flush()
        os._exit(1)

    timer = threading.Timer(limit_s, expire)
    timer.daemon = True
    timer.start()
    return timer


def health_check(store, rules: Rules, node: str, report_only: bool = False, probe=None) -> NodeOutcome:
    """The live rules twice (a fault must be seen on both reads), the node's open findings,
    and a drain when either calls for one."""
    from wirewise.orchestrator.health.doctor import stored_wiring
    from wirewise.orchestrator.health.live import live_findings
    from wirewise.orchestrator.store.health import findings as stored_findings, record_check
    from wirewise.topology.probe import probe_node

    started = time.monotonic()
    probe = probe or probe_node
    outcome = NodeOutcome(node, "health-check")
    wiring = stored_wiring(store, node)
    first, judged = live_findings(node, probe, wiring, rules, outcome.notes)
    if first:
        time.sleep(CONFIRM_PAUSE_S)
        again, _ = live_findings(node, probe, wiring, rules, [])
        seen_twice = {f.key for f in again}
        outcome.notes += [f"{node}: {f.check} ({f.metric}) not seen on a second read: not acted on" for f in first if f.key not in seen_twice]
        first = [f for f in first if f.key in seen_twice]
    if judged:  # a check that read nothing is no verdict: the node keeps the one it had
        record_check(store, node, "health-check", judged, first, confirmed=True)
    outcome.findings = list(first)
    open_rows = stored_findings(store, [node])
    outcome.judged = bool(judged or open_rows)
    if not outcome.judged:
        outcome.notes.append(f"{node}: no live rule could be read and no finding is open: not judged; nothing drained")
    confirmed = [row for row in open_rows if row["confirmed"] and row["rule"] not in judged]
    for row in open_rows:
        if not row["confirmed"] and row["rule"] not in judged:
            outcome.notes.append(f"{node}: open finding {row['rule']} ({row['metric']} {row['delta']}) not yet confirmed: "
                                 "`wirewise fleet drain` confirms it with a repeat before it drains")
    from wirewise.orchestrator.health.findings import from_json

    outcome.findings += [from_json({**row, "check": row["rule"]}) for row in confirmed]
    if outcome.findings and not report_only:
        drain_here(store, rules, outcome, role="slurmd health check")
    outcome.seconds = time.monotonic() - started
    return outcome


def drain_here(store, rules: Rules, outcome: NodeOutcome, role: str, detail: str | None = None) -> None:
    """Drain this node for its findings (the most severe one names the reason), under the
    guardrails; a node already drained or down is left as it is."""
    from wirewise.orchestrator.health.guard import Budget, asked_by
    from wirewise.orchestrator.slurm.nodes import slurm_nodes
    from wirewise.orchestrator.store.health import claim_drains

    states = slurm_nodes()
    state = states.get(outcome.node)
    if state is None:
        outcome.notes.append(f"{outcome.node}: Slurm does not know this node: nothing drained")
        return
    if not state.available:
        outcome.notes.append(f"{outcome.node}: already {state.unavailable} ({state.reason or 'no reason'}): left as it is")
        return
    lead = most_severe(outcome.findings)
    [claim] = claim_drains(store, [{"node": outcome.node, "reason": lead.reason, "action": outcome.mode,
                                     "evidence": {"findings": [f.to_json() for f in outcome.findings]}}],
                           Budget(rules.guardrails, states), asked_by(role))
    outcome.acted = [lead]
    if claim["outcome"] == "held":
        outcome.held = claim["detail"]
        outcome.notes.append(f"{outcome.node}: not drained: {claim['detail']}")
        return
    apply_drain(store, claim, detail)
    outcome.drained = True


def apply_drain(store, claim: dict[str, Any], detail: str | None = None, campaign: str | None = None) -> None:
    """The claimed drain, through Slurm; its audit row says how it went."""
    from wirewise.orchestrator.slurm.command import SlurmError
    from wirewise.orchestrator.slurm.states import drain
    from wirewise.orchestrator.store.health import DRAINED, set_outcome

    try:
        drain(claim["node"], claim["reason"])
    except SlurmError as exc:
        set_outcome(store, claim["id"], "failed", str(exc))
        raise
    set_outcome(store, claim["id"], DRAINED, detail, campaign)


def most_severe(found: list[Finding]) -> Finding:
    """The finding the drain reason names (Finding.severity)."""
    return min(found, key=lambda f: f.severity)


# -- prolog -------------------------------------------------------------------------------------
def job_gpus(job: JobEnv) -> list[int]:
    """The job's GPUs on this node as Slurm hands them to the prolog: SLURM_JOB_GPUS, else
    CUDA_VISIBLE_DEVICES by their physical index; none where neither names them (the check then
    says so: a prolog never fails a job, or drains its node, over its own reading)."""
    if job.slurm_gpus:
        return job.slurm_gpus
    try:
        return sorted(set(job.physical_gpus() or []))
    except UserError:
        return []


def prolog(store, rules: Rules, node: str, job: JobEnv, deadline: float) -> NodeOutcome:
    """The job's collective, judged; a drain for a fault (under the guardrails)."""
    import shutil
    import tempfile
    from pathlib import Path

    from wirewise.jobs.launch import run_task
    from wirewise.orchestrator.record.collect import ingest_patiently
    from wirewise.workloads import Ranks
    from wirewise.workloads.collective import CollectiveParams

    outcome = NodeOutcome(node, "prolog")
    started = time.monotonic()
    gpus = job_gpus(job)
    if len(gpus) < 2:
        outcome.notes.append(f"{node}: the job holds {len(gpus)} GPU(s): no collective to check")
        return outcome
    setting = rules.prolog
    params = CollectiveParams(ops=[setting.op], min_bytes=setting.min_bytes, max_bytes=setting.max_bytes,
                              iters=setting.iters, warmup=setting.warmup, check=True)
    ranks = Ranks(gpus, len(gpus), setting.backend or "nccl")  # on the job's GPUs: fingerprinted with the node's wiring
    budget_s = max(1.0, deadline - time.monotonic() - 3.0)  # 3 s to judge, store and drain
    spec = params.to_task(ranks, timeout_s=budget_s, node=node)
    folder = Path(tempfile.mkdtemp(prefix="wirewise-prolog-"))
    try:
        result = run_task(spec, folder)
        records, _ = ingest_patiently(store, result, patience_s=max(0.5, deadline - time.monotonic() - 2.0))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    outcome.findings = prolog_findings(store, rules, node, records)
    from wirewise.orchestrator.store.health import record_check

    record_check(store, node, "prolog", {"busbw-below-baseline", "task-failed"}, outcome.findings, confirmed=True)
    if outcome.findings:
        drain_here(store, rules, outcome, role=f"prolog of job {job.job_id or '?'}")
    outcome.seconds = time.monotonic() - started
    return outcome


def prolog_findings(store, rules: Rules, node: str, records: list) -> list[Finding]:
    """A run that did not end ok, wrong elements, or busbw below the baseline (one repeat)."""
    from wirewise.orchestrator.health.baseline import group_by_case
    from wirewise.orchestrator.health.judge import below_baseline
    from wirewise.orchestrator.health.doctor import history_of
    from wirewise.orchestrator.health.baseline import imported

    failed = [r for r in records if r.status != "ok"] or ([] if records else [None])
    if failed:
        what = f"{failed[0].status}: {failed[0].error}" if failed[0] is not None else "no result"
        return [Finding(node, "task-failed", f"the prolog's {rules.prolog.op} on the job's GPUs ended {what}",
                        "read the node's slurmd log for the prolog's output; run `wirewise bench collectives` on the node",
                        metric=f"{rules.prolog.op}.status", delta=failed[0].status if failed[0] else "none",
                        key="task-failed|prolog")]
    wrong = [r for r in records if r.wrong]
    if wrong:
        return [Finding(node, "task-failed",
                        f"the prolog's {rules.prolog.op} returned {wrong[0].wrong} wrong element(s) at {wrong[0].bytes} bytes",
                        "a GPU or link corrupts data: drain the node and run `dcgmi diag -r 3`",
                        metric=f"{rules.prolog.op}.check", delta=f"{wrong[0].wrong}-wrong", key="task-failed|prolog-check")]
    history = history_of(store, node, include_cpu=rules.include_cpu or records[0].gpu_count == 0)
    fingerprints = {f["fingerprint"] for f in history if f["fingerprint"]}
    judged_rules = rules.model_copy(update={"repeats": 1})
    return below_baseline(node, group_by_case(history), "collective", judged_rules, imported(store, fingerprints), [])[0]
