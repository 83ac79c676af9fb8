"""Running a finding's measurement again, through the executor, and judging it as the finding
was judged: what confirms a finding before `fleet drain` drains for it, and what `fleet
retest` runs on a drained node.

A finding on the history (busbw or tokens/s below the baseline or the peers, a failed task)
is re-measured as a small campaign on the node (wirewise.orchestrator.campaign, the Slurm
executor): the same op, sizes, GPUs, transport and run parameters as the results it rests
on, `repeats` times (the rules' repeats); its results are stored like any campaign's. The
repeat falls when its median is below the finding's own floor at enough of its sizes (the
floor the finding was judged by, so a re-test is judged as the finding was). A live finding
(NVML) is read again by a job on the node (LiveCheck). A pair test's finding is repeated by
the same pair test of the node against a node known good in its run (PairCheck of
wirewise.orchestrator.fleet.pairs; wirewise.orchestrator.fleet.pair_findings judges it). A re-test runs
inside the node's maintenance reservation.

Each node's verdict: `failing` (the fault showed again), `passing` (it did not), or
`not-measured` (the run did not happen in time, never started, was cancelled before it ended,
or the measurement cannot be repeated): nothing is drained, cleared or resumed on that. Only a
repeat that ran and failed again fails: one that ended cancelled without a result (its
known-good partners busy with users' jobs until the deadline) says nothing of the node.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wirewise.orchestrator.executor import SLURM
from wirewise.orchestrator.health.findings import LIVE_RULES
from wirewise.orchestrator.health.rules import Rules
from wirewise.runs import utc_stamp

FAILING, PASSING, NOT_MEASURED = "failing", "passing", "not-measured"
CANCELLED = "cancelled"  # a result of a repeat stopped before it ended (its deadline passed): it judges nothing
POLL_S = 1.0
# A live re-check's job time: past submitit's USR2 warning (90 s before the end) and the 60 s
# early Slurm may send it (sbatch(1), --signal): with 2 minutes, the check was killed by USR2 a
# second after it started (seen on the test cluster, `fleet drain --timeout 60`).
LIVE_MIN_TIME_MIN = 4
COLLECTIVE_KEYS = ("min_bytes", "max_bytes", "step_factor", "iters", "warmup", "dtype", "check", "cuda_graph")
TRAIN_KEYS = ("seq_len", "steps", "warmup_steps", "engine", "precision", "compile", "lr", "data", "memory_limit_gb")


@dataclass
class Verdict:
    finding_id: int
    outcome: str  # failing | passing | not-measured
    evidence: str


@dataclass
class NodeRun:
    """One node's measurements: a campaign for the history findings, a job for the live ones."""

    node: str
    findings: list[dict[str, Any]]  # finding rows (wirewise.orchestrator.store.health.findings)
    purpose: str  # confirm | retest
    reservation: str | None = None
    campaign: str | None = None
    live_job: str | None = None
    live_file: Path | None = None
    pair_check: Any = None  # the PairCheck repeating its pair test's finding
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def measured_by(self) -> str | None:
        """The campaign that repeated its measurements (the pair test's where that is all it ran)."""
        return self.campaign or (self.pair_check.name if self.pair_check else None)

    @property
    def outcome(self) -> str:
        outcomes = {v.outcome for v in self.verdicts}
        if FAILING in outcomes:
            return FAILING
        if not self.verdicts or NOT_MEASURED in outcomes:
            return NOT_MEASURED
        return PASSING


def run_all(store, rules: Rules, runs: list[NodeRun], partition: str | None, timeout_s: float,
            rules_file: str | None = None) -> list[NodeRun]:
    """Submit every node's measurements at once, wait for them (at most timeout_s), judge."""
    stamp = utc_stamp()
    try:
        for run in runs:
            _submit(store, rules, run, partition, timeout_s, stamp, rules_file)
        _submit_pairs(store, runs, partition, stamp)
        _wait(store, runs, time.monotonic() + timeout_s)
    except BaseException:  # stopped (wirewise.orchestrator.health.stops) or failed: nothing of it is left queued
        _cancel(store, runs)
        raise
    from wirewise.orchestrator.store.health import add_check

    for run in runs:
        run.verdicts = _judge(store, run)
        judged = {f["rule"] for f, v in zip(run.findings, run.verdicts) if v.outcome != NOT_MEASURED}
        if judged:
            failing = sum(v.outcome == FAILING for v in run.verdicts)
            add_check(store, run.node, run.purpose, judged, failing == 0, failing)
    return runs


# -- submitting -------------------------------------------------------------------------------
def _submit(store, rules: Rules, run: NodeRun, partition: str | None, timeout_s: float, stamp: str,
            rules_file: str | None) -> None:
    measured = [f for f in run.findings if f["rule"] not in LIVE_RULES and f["measurement"]
                and f["measurement"].get("params") is not None and repeat_refused(f) is None]
    live = [f for f in run.findings if f["rule"] in LIVE_RULES]
    name = f"wirewise-{run.purpose}-{run.node}-{stamp}"[:64]
    if measured:
        spec = campaign_spec(name, run, measured, rules, partition, timeout_s)
        _submit_campaign(store, run, spec)
    if live:
        _submit_live(store, run, name, partition, timeout_s, rules_file)


def _submit_pairs(store, runs: list[NodeRun], partition: str | None, stamp: str) -> None:
    """Each node's pair finding as one pair test against a known-good partner that takes work
    and is not being judged itself; no partner: the finding is not measured."""
    from wirewise.orchestrator.fleet.pairs import PairCheck
    from wirewise.orchestrator.fleet.pair_findings import is_pair, pair_test, partner_for
    from wirewise.orchestrator.slurm.nodes import slurm_nodes

    wanted = [(run, next(f for f in run.findings if is_pair(f))) for run in runs if any(is_pair(f) for f in run.findings)]
    if not wanted:
        return
    usable = {name for name, state in slurm_nodes(partition).items() if state.available}
    busy = {run.node for run in runs}
    for run, finding in wanted:
        partner = partner_for(finding, busy, usable)
        if partner is not None:
            name = f"wirewise-{run.purpose}-{run.node}-{stamp}"[:58] + "-pairs"
            run.pair_check = PairCheck(store, [(run.node, partner)], pair_test(finding), name, partition, run.reservation)


def campaign_spec(name: str, run: NodeRun, measured: list[dict[str, Any]], rules: Rules, partition: str | None,
                  timeout_s: float) -> dict[str, Any]:
    """The campaign that repeats the findings' measurements on the node (one workload each)."""
    from wirewise.runs import RunsRoot

    workloads = [_workload(f["measurement"], rules) for f in measured]
    cpu = any("cpu" in (f["measurement"].get("device"), f["measurement"]["case"].get("device")) for f in measured)
    minutes = max(5, int(timeout_s // 60) + 2)
    target: dict[str, Any] = {
        "executor": SLURM, "nodelist": run.node, "time": str(minutes), "timeout_s": max(30.0, timeout_s - 30),
        "folder": str(RunsRoot.configured().fleet_check(name).resolve()), "tasks_per_element": 64,
    }
    for key, value in (("partition", partition), ("reservation", run.reservation), ("backend", "gloo" if cpu else None)):
        if value:
            target[key] = value
    return {"name": name, "workloads": workloads, "target": target}


def repeat_refused(finding: dict[str, Any]) -> str | None:
    """Why the repeat of a history finding cannot be the case that flagged it (then it is not
    measured: nothing drains on a repeat of another case), or None. A repeat is a wirewise
    campaign on the one node: a case another tool measured (an imported nccl-tests log, a job's
    own record) or one that ran over several nodes is not one it can run again."""
    case = (finding.get("measurement") or {}).get("case") or {}
    if case.get("source", "wirewise") != "wirewise":
        return (f"its case was measured by {case['source']}, not wirewise: a repeat would be another case "
                f"(re-run {case['source']} on the node, then `wirewise doctor`)")
    if (case.get("node_count") or 1) > 1:
        return f"its case ran over {case['node_count']} nodes: a repeat on the node alone would be another case"
    return None


def _workload(measurement: dict[str, Any], rules: Rules) -> dict[str, Any]:
    """The flagged case again: its op or model and strategy, its sizes, GPUs, transport and every
    setting of its case (dtype, CUDA graph; precision, compile, engine, micro-batch, sequence
    length), the run's own parameters (iterations, warm-up) for the rest. A finding stored
    before cases held every field falls back on the run's parameters."""
    case, params = measurement["case"], measurement.get("params") or {}
    gpus = measurement.get("gpus") or []
    axes: dict[str, Any] = {"gpus": [len(gpus) or case.get("ranks") or case.get("gpus") or 2],
                            "placement": [sorted(gpus) if gpus else (case.get("geometry") or case.get("placement") or "packed")],
                            "transport": [case.get("transport") or params.get("transport") or "default"],
                            "repeats": measurement.get("repeats") or rules.repeats}
    if measurement["workload"] == "collective":
        sizes = measurement.get("sizes") or [params.get("min_bytes", 1 << 20)]
        sweep = {k: params[k] for k in COLLECTIVE_KEYS if k in params}
        op = case.get("op") or (params.get("ops") or ["all_reduce"])[0]
        sweep.update(ops=[op], min_bytes=min(sizes), max_bytes=max(sizes), step_factor=2)
        sweep.update({k: case[k] for k in ("dtype", "cuda_graph") if case.get(k) is not None})
        return {"collectives": sweep, "axes": axes}
    train = {k: params[k] for k in TRAIN_KEYS if k in params and params[k] is not None}
    train.update({k: case[k] for k in ("precision", "compile", "engine", "seq_len") if case.get(k) is not None})
    train.update(models=[case.get("model") or params["model"]], strategies=[case.get("strategy") or params["strategy"]],
                 batch_size=case.get("micro_batch") or params.get("micro_batch") or 1)
    return {"train": train, "axes": axes}


def _submit_campaign(store, run: NodeRun, doc: dict[str, Any]) -> None:
    from wirewise.orchestrator.campaign.lifecycle import submit_spec
    from wirewise.orchestrator.campaign.plan import plan_campaign
    from wirewise.orchestrator.campaign.spec import parse_spec
    from wirewise.orchestrator.store.topology import load_topology

    spec = parse_spec(doc, f"the {run.purpose} of {run.node}")
    plan = plan_campaign(spec, load_topology(store, node=run.node))
    submit_spec(store, spec, plan, SLURM)
    run.campaign = spec.name


def _submit_live(store, run: NodeRun, name: str, partition: str | None, timeout_s: float, rules_file: str | None) -> None:
    from wirewise.orchestrator.executor import executor_named
    from wirewise.orchestrator.executor.core import JobRequest
    from wirewise.runs import RunsRoot

    folder = RunsRoot.configured().live_check(name).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    run.live_file = folder / "live.json"
    request = JobRequest(folder=folder, name=f"{name}-live"[:128], time_min=max(LIVE_MIN_TIME_MIN, int(timeout_s // 60) + 1),
                         partition=partition, nodelist=run.node, reservation=run.reservation)
    submitted = executor_named(SLURM).submit(request, LiveCheck(store.url, run.node, rules_file, str(run.live_file)), [()])
    run.live_job = submitted.elements[0]


class LiveCheck:
    """What a live re-check runs on the node: the live rules, their finding keys to a file."""

    def __init__(self, db: str, node: str, rules_file: str | None, out: str) -> None:
        self.db, self.node, self.rules_file, self.out = db, node, rules_file, out

    def __call__(self) -> list[str]:
        from wirewise.atomic import write_json_atomic
        from wirewise.orchestrator.health.live import live_findings
        from wirewise.orchestrator.health.rules import load_rules
        from wirewise.orchestrator.health.doctor import stored_wiring
        from wirewise.orchestrator.store import Store
        from wirewise.topology.probe import probe_node

        notes: list[str] = []
        found, judged = live_findings(self.node, probe_node, stored_wiring(Store(self.db), self.node),
                                      load_rules(self.rules_file), notes)
        doc = {"keys": [f.key for f in found], "evidence": {f.key: f.evidence for f in found},
               "judged": sorted(judged), "notes": notes}
        write_json_atomic(Path(self.out), doc)
        return doc["keys"]


# -- waiting ------------------------------------------------------------------------------------
def _wait(store, runs: list[NodeRun], deadline: float) -> None:
    from wirewise.orchestrator.campaign.lifecycle import cancel_campaign
    from wirewise.orchestrator.campaign.track import campaign_status, collect_campaign
    from wirewise.orchestrator.executor import executor_named
    from wirewise.orchestrator.executor.core import PENDING, RUNNING
    from wirewise.orchestrator.health.stops import pause

    slurm = executor_named(SLURM)
    while True:
        names = [r.campaign for r in runs if r.campaign] + [r.pair_check.name for r in runs if r.pair_check]
        campaigns = [name for name in names if not campaign_status(store, name).done]
        jobs = [r.live_job for r in runs if r.live_job]
        live_going = [j for j, s in (slurm.states(jobs).items() if jobs else []) if s in (PENDING, RUNNING)]
        if not campaigns and not live_going:
            break
        if time.monotonic() >= deadline:
            for name in campaigns:
                cancel_campaign(store, name)
            if live_going:
                slurm.cancel(live_going)
            break
        pause(POLL_S)  # where a stop of `fleet drain` or `retest` is raised (wirewise.orchestrator.health.stops)
    for run in runs:
        for name in (run.campaign, run.pair_check.name if run.pair_check else None):
            if name:
                collect_campaign(store, name)


def _cancel(store, runs: list[NodeRun]) -> None:
    """Every measurement submitted for `runs` cancelled, each on its own (one that fails to
    cancel does not keep the others queued)."""
    from wirewise.orchestrator.campaign.lifecycle import cancel_campaign
    from wirewise.orchestrator.executor import executor_named

    for run in runs:
        for cancel in ((lambda: cancel_campaign(store, run.campaign)) if run.campaign else None,
                       run.pair_check.campaign.cancel if run.pair_check else None,
                       (lambda: executor_named(SLURM).cancel([run.live_job])) if run.live_job else None):
            if cancel is not None:
                try:
                    cancel()
                except Exception:  # noqa: BLE001 - the cleanup goes on; the stop or error is what is raised
                    pass


# -- judging ------------------------------------------------------------------------------------
def _judge(store, run: NodeRun) -> list[Verdict]:
    from wirewise.orchestrator.results.rows import result_rows
    from wirewise.orchestrator.store.results import Filters

    new = result_rows(store, Filters(campaigns=(run.campaign,), include_cpu=True)) if run.campaign else []
    live = json.loads(run.live_file.read_text()) if run.live_file and run.live_file.exists() else None
    from wirewise.orchestrator.fleet.pair_findings import is_pair

    verdicts = []
    for finding in run.findings:
        if is_pair(finding):
            verdicts.append(_pair_verdict(finding, run.pair_check))
        elif finding["rule"] in LIVE_RULES:
            verdicts.append(_live_verdict(finding, live))
        elif not (finding["measurement"] and finding["measurement"].get("params") is not None):
            verdicts.append(Verdict(finding["id"], NOT_MEASURED, "no measurement to repeat (the results it rests on are gone)"))
        elif refused := repeat_refused(finding):
            verdicts.append(Verdict(finding["id"], NOT_MEASURED, f"not repeated: {refused}"))
        elif finding["rule"] == "task-failed":
            verdicts.append(_task_verdict(finding, [f for f in new if f["node"] == run.node]))
        elif finding["rule"] == "transport-off-nvlink":
            verdicts.append(_transport_verdict(store, finding, [f for f in new if f["node"] == run.node]))
        else:
            verdicts.append(_measured_verdict(finding, [f for f in new if f["node"] == run.node]))
    return verdicts


def _pair_verdict(finding: dict[str, Any], check) -> Verdict:
    from wirewise.orchestrator.fleet.pair_findings import repeat_verdict

    if check is None:
        return Verdict(finding["id"], NOT_MEASURED, "no known-good partner takes work now to test it against")
    [measure] = check.measures()
    if not measure.ran:  # the partners busy with users' jobs, say: a repeat that never ran is no failed one
        return Verdict(finding["id"], NOT_MEASURED, f"the repeat did not run: {measure.error}")
    failing, evidence = repeat_verdict(finding, measure)
    return Verdict(finding["id"], FAILING if failing else PASSING, evidence)


def _live_verdict(finding: dict[str, Any], live: dict[str, Any] | None) -> Verdict:
    if live is None or finding["rule"] not in live["judged"]:
        return Verdict(finding["id"], NOT_MEASURED, "the live re-check did not run" if live is None
                       else f"the live re-check could not judge {finding['rule']}: {'; '.join(live['notes'])}")
    if finding["key"] in live["keys"]:
        return Verdict(finding["id"], FAILING, f"read again: {live['evidence'][finding['key']]}")
    return Verdict(finding["id"], PASSING, f"read again: {finding['rule']} not found")


def _transport_verdict(store, finding: dict[str, Any], new: list[dict[str, Any]]) -> Verdict:
    """The repeat fails where its NCCL connections left NVLink again; a repeat whose INFO lines
    were not read (no transport carried) says nothing."""
    from wirewise.orchestrator.health.judge import off_nvlink_of
    from wirewise.orchestrator.store.health import results_in_one_domain

    read = [f for f in new if f["status"] == "ok" and f["transport_carried"]]
    if not read:
        return Verdict(finding["id"], NOT_MEASURED, "the repeat stored no result whose NCCL transport was read")
    spans = results_in_one_domain(store, [f["id"] for f in read])
    off = sorted({name for f in read for name in off_nvlink_of(f, spans.get(f["id"], False))})
    if off:
        return Verdict(finding["id"], FAILING, f"the repeat went via {', '.join(off)} again ({read[-1]['transport_carried']})")
    return Verdict(finding["id"], PASSING, f"the repeat stayed on NVLink ({read[-1]['transport_carried']})")


def _task_verdict(finding: dict[str, Any], new: list[dict[str, Any]]) -> Verdict:
    ran = [f for f in new if f["status"] != CANCELLED]
    if not ran:
        return Verdict(finding["id"], NOT_MEASURED, "the repeat stored no result" if not new else "the repeat was cancelled before it ended")
    bad = [f for f in ran if f["status"] != "ok"]
    if bad:
        return Verdict(finding["id"], FAILING, f"the repeat {bad[0]['status']} again")
    return Verdict(finding["id"], PASSING, f"the repeat passed ({len(new)} result(s) ok)")


def _measured_verdict(finding: dict[str, Any], new: list[dict[str, Any]]) -> Verdict:
    """The repeat's median per size against the finding's floors."""
    from wirewise.case import CASE_FIELDS
    from wirewise.orchestrator.health.judge import _size_label

    reference = finding["reference"]
    metric, workload = reference["metric"], reference["workload"]
    case = finding["measurement"]["case"]
    new = [f for f in new if f["status"] != CANCELLED]
    if any(f["status"] != "ok" for f in new) and not any(f["status"] == "ok" for f in new):
        failed = next(f for f in new if f["status"] != "ok")
        return Verdict(finding["id"], FAILING, f"the repeat {failed['status']}")
    by_label: dict[str, list[float]] = {}
    for row in new:
        if row["status"] != "ok" or row["workload"] != workload or row[metric] is None:
            continue
        if any(name in CASE_FIELDS[workload] and row.get(name) != value for name, value in case.items()):
            continue  # another case than the one that flagged the node: it confirms nothing
        if workload == "collective":
            label = _size_label(row)
        else:
            label = f"{row['model']} {row['strategy']}"
        by_label.setdefault(label, []).append(row[metric])
    judged = {label: (statistics.median(by_label[label]), ref) for label, ref in reference["sizes"].items() if label in by_label}
    if not judged:
        return Verdict(finding["id"], NOT_MEASURED, "the repeat measured none of the finding's sizes")
    fell = {label: (value, ref) for label, (value, ref) in judged.items() if value < ref["floor"]}
    unit = "GB/s" if workload == "collective" else "tokens/s"
    said = "; ".join(f"{label}: {value:.4g} {unit} (floor {ref['floor']:.4g})" for label, (value, ref) in sorted(judged.items()))
    if fell and len(fell) >= reference.get("min_share", 1.0) * len(judged):
        return Verdict(finding["id"], FAILING, f"repeat: {len(fell)} of {len(judged)} size(s) below the floor again: {said}")
    return Verdict(finding["id"], PASSING, f"repeat: {len(judged) - len(fell)} of {len(judged)} size(s) at or above the floor: {said}")
