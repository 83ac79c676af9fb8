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

Either mode drains (and the prolog exits 1) only for a fault of the node. What keeps it from
judging is not the node's: rules that do not load, a database missing (slurmd's working folder
holds none: it is never created there), unreachable, locked by another writer past a third of
the time limit, a failure of wirewise's own, its own time limit. Then it exits 0 with a note
(`wirewise: note: not judged: WHY` on stderr, the wrapper's log; `"judged": false` in --json)
and leaves nothing behind: a drain for it would take healthy nodes out, every node at once.
A watchdog ends either mode at its time limit that way: a check that hangs (NVML on a GPU that
fell off the bus, a database that does not answer) must not hold slurmd.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wirewise.errors import UserError
from wirewise.jobenv import JobEnv
from wirewise.orchestrator.health.findings import Finding
from wirewise.orchestrator.health.rules import Rules

CONFIRM_PAUSE_S = 0.5  # between the two NVML reads of a live finding
HEALTH_CHECK, PROLOG = "health-check", "prolog"


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
    not_judged: str | None = None  # why it could not judge the node at all (not the node's fault)

    @property
    def healthy(self) -> bool | None:
        """False when a rule fired, None when nothing was judged, else True."""
        if self.findings:
            return False
        return True if self.judged and not self.not_judged else None

    @property
    def exit_code(self) -> int:
        """For slurmd: 1 only from a prolog that drained the node (Slurm requeues the job)."""
        return 1 if self.mode == PROLOG and self.drained else 0

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "mode": self.mode, "judged": self.healthy is not None, "not_judged": self.not_judged,
                "healthy": self.healthy, "drained": self.drained,
                "held": self.held, "reason": self.acted[0].reason if self.acted else None,
                "findings": [f.to_json() for f in self.findings], "notes": self.notes, "seconds": round(self.seconds, 3)}


def this_node(given: str | None = None) -> str:
    """The node's Slurm name: --node, else SLURMD_NODENAME (slurmd sets it for the health check
    and the prolog), else the short host name (wirewise.jobenv)."""
    from wirewise.jobenv import read_job_env

    return given or read_job_env().node_name


class Watchdog:
    """Ends the process at `limit_s`, saying it judged nothing (`show`s the outcome so): its
    scratch folder removed, exit 0 (1 where the prolog drained the node already, so that
    Slurm requeues the job)."""

    def __init__(self, limit_s: float, outcome: NodeOutcome, show: Callable[[NodeOutcome], None]) -> None:
        self.outcome, self.show = outcome, show
        self.scratch: str | None = None
        self.timer = threading.Timer(limit_s, self._expire, args=(limit_s,))
        self.timer.daemon = True
        self.timer.start()

    def _expire(self, limit_s: float) -> None:
        import shutil

        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
        outcome = self.outcome
        said = f"doctor --{outcome.mode} did not finish within {limit_s:g} s; stopped"
        if outcome.drained:  # its answer is given: Slurm requeues the job
            outcome.notes.append(f"{outcome.node}: {said} after draining")
        else:
            outcome.not_judged = said
            outcome.notes.append(f"{outcome.node}: not judged: {said}")
        try:
            self.show(outcome)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(outcome.exit_code)

    def cancel(self) -> None:
        self.timer.cancel()


def on_node(mode: str, rules_file: str | None, node: str | None, db: str | None, show: Callable[[NodeOutcome], None],
            report_only: bool = False) -> NodeOutcome:
    """The health check or the prolog (`mode`) on this node as slurmd runs it, under its
    watchdog (which `show`s the outcome as it stops). Never raises: what keeps it from judging
    the node is the outcome's not_judged."""
    import tempfile

    from wirewise.jobenv import read_job_env
    from wirewise.orchestrator.health.rules import default_rules, load_rules

    started = time.monotonic()
    outcome = NodeOutcome(node or "this node", mode)
    rules, limit = None, _limit(default_rules(), mode)
    try:
        outcome.node = this_node(node)
        rules = load_rules(rules_file)
        limit = _limit(rules, mode)
    except Exception as exc:  # noqa: BLE001 - whatever a rules file does, the node is not at fault
        outcome.not_judged = _why(exc)
    dog = Watchdog(limit, outcome, show)
    try:
        if rules is not None:
            store = _open_store(db, limit)
            if mode == HEALTH_CHECK:
                health_check(store, rules, outcome, report_only)
            else:
                with tempfile.TemporaryDirectory(prefix="wirewise-prolog-") as scratch:
                    dog.scratch = scratch
                    prolog(store, rules, outcome, read_job_env(), started + limit, scratch)
    except Exception as exc:  # noqa: BLE001 - wirewise's own failure is not the node's (the module's docstring)
        outcome.not_judged = _why(exc)
    finally:
        dog.cancel()
    if outcome.not_judged:
        outcome.notes.append(f"{outcome.node}: not judged: {outcome.not_judged}")
    outcome.seconds = time.monotonic() - started
    return outcome


def _limit(rules: Rules, mode: str) -> float:
    return rules.health_check.time_limit_s if mode == HEALTH_CHECK else rules.prolog.time_limit_s


def _why(exc: Exception) -> str:
    """An exception as the one line of a note: a UserError says it itself; others name their type."""
    from wirewise.errors import UserError

    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return first if isinstance(exc, UserError) else f"{type(exc).__name__}: {first}"


def _open_store(db: str | None, limit_s: float):
    """The store, never created here (slurmd's working folder is no place for one: NoDatabase
    says where it looked); a statement waits for a locked database a third of the time limit at most."""
    from wirewise.orchestrator.store import Store
    from wirewise.settings import DB_WAIT

    os.environ[DB_WAIT.name] = f"{limit_s / 3:g}"
    return Store.existing(db)


def health_check(store, rules: Rules, outcome: NodeOutcome, report_only: bool = False, probe=None) -> NodeOutcome:
    """The live rules twice (a fault must be seen on both reads), the node's open findings,
    and a drain when either calls for one."""
    from wirewise.orchestrator.health.doctor import stored_wiring
    from wirewise.orchestrator.health.live import live_findings
    from wirewise.orchestrator.store.health import findings as stored_findings, record_check
    from wirewise.topology.probe import probe_node

    probe = probe or probe_node
    node = outcome.node
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
    return outcome


def drain_here(store, rules: Rules, outcome: NodeOutcome, role: str, detail: str | None = None) -> None:
    """Drain this node for its findings (the most severe one names the reason), under the
    guardrails; a node already drained or down is left as it is."""
    from wirewise.orchestrator.health.guard import Budget, asked_by
    from wirewise.orchestrator.slurm.nodes import slurm_nodes
    from wirewise.clock import utcnow
    from wirewise.orchestrator.store.health import SKIPPED, claim_drains

    seen_at = utcnow()
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
                           Budget(rules.guardrails, states), asked_by(role), _limit(rules, outcome.mode), seen_at)
    outcome.acted = [lead]
    if claim["outcome"] == SKIPPED:
        outcome.notes.append(f"{outcome.node}: not drained here: {claim['detail']}")
        return
    if claim["outcome"] == "held":
        outcome.held = claim["detail"]
        outcome.notes.append(f"{outcome.node}: not drained: {claim['detail']}")
        return
    apply_drain(store, claim, detail)
    outcome.drained = True


def apply_drain(store, claim: dict[str, Any], detail: str | None = None, campaign: str | None = None) -> None:
    """The claimed drain, through Slurm; its audit row says how it went (a stop waits for both)."""
    from wirewise.orchestrator.health.stops import stops_held
    from wirewise.orchestrator.slurm.command import SlurmError
    from wirewise.orchestrator.slurm.states import drain
    from wirewise.orchestrator.store.health import DRAINED, set_outcome

    with stops_held():
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


def prolog(store, rules: Rules, outcome: NodeOutcome, job: JobEnv, deadline: float, folder: str) -> NodeOutcome:
    """The job's collective (run in `folder`), judged; a drain for a fault (under the guardrails)."""
    from wirewise.jobs.supervise import run_task
    from wirewise.orchestrator.record.collect import ingest_patiently
    from wirewise.workloads import Ranks

    node = outcome.node
    gpus = job_gpus(job)
    if len(gpus) < 2:
        outcome.notes.append(f"{node}: the job holds {len(gpus)} GPU(s): no collective to check")
        return outcome
    setting = rules.prolog
    ranks = Ranks(gpus, len(gpus), setting.backend or "nccl")  # on the job's GPUs: fingerprinted with the node's wiring
    budget_s = max(1.0, deadline - time.monotonic() - 3.0)  # 3 s to judge, store and drain
    spec = setting.params().to_task(ranks, timeout_s=budget_s, node=node)
    result = run_task(spec, folder)
    try:
        records, _ = ingest_patiently(store, result, patience_s=max(0.5, deadline - time.monotonic() - 2.0))
    except UserError as exc:  # its results go with its scratch folder: a prolog's check is not kept for later
        raise UserError(f"its collective ran, but its results could not be stored: {str(exc).split(';')[0]}") from None
    outcome.findings = prolog_findings(store, rules, node, records)
    from wirewise.orchestrator.store.health import record_check

    record_check(store, node, "prolog", {"busbw-below-baseline", "task-failed"}, outcome.findings, confirmed=True)
    if outcome.findings:
        drain_here(store, rules, outcome, role=f"prolog of job {job.job_id or '?'}")
    return outcome


def measured_history(store, records: list, include_cpu: bool) -> list[dict]:
    """The history of just the cases the prolog measured, on its wiring: each case's newest
    BASELINE_RESULTS results (the ones just stored among them): one range of an index, whatever
    the fleet's history holds (a node's check reads its own case, not the fleet: issue 33)."""
    from wirewise.orchestrator.health.baseline import BASELINE_RESULTS
    from wirewise.orchestrator.results.rows import result_rows
    from wirewise.orchestrator.store.results import Filters, stored_cases

    history = []
    for fingerprint, key in stored_cases(store, [r.record_id for r in records]):
        history += result_rows(store, Filters(fingerprint=fingerprint, case_key=key, include_cpu=include_cpu,
                                        newest=BASELINE_RESULTS))
    return history


def prolog_findings(store, rules: Rules, node: str, records: list) -> list[Finding]:
    """A run that did not end ok, wrong elements, or busbw below the baseline (one repeat)."""
    from wirewise.orchestrator.health.judge import Cases, below_baseline
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
    history = measured_history(store, records, include_cpu=rules.include_cpu or records[0].gpu_count == 0)
    fingerprints = {f["fingerprint"] for f in history if f["fingerprint"]}
    judged_rules = rules.model_copy(update={"repeats": 1})
    return below_baseline(node, Cases(history), "collective", judged_rules, imported(store, fingerprints), [])[0]
