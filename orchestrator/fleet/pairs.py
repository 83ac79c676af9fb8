"""`wirewise fleet pairs`: a collective between pairs of nodes, in rounds, until the slow node
or link is named; every test stored as a task of one campaign.

Each test is a two-node campaign task pinned to its pair (one rank or one GPU set per node;
gloo ranks where the nodes have no GPUs), submitted as a job of its own through the executor;
a round's tests run at once (they share no node). Between rounds the results are collected
into the store and read back from it (wirewise.orchestrator.store.pair_results.pair_results), the
scheduler (schedule.py) picks the next round from them, and the verdict (verdict.py) is the
same function placement and drain rules use. A pair's fabric scope (inside one NVLink domain,
or over the network: wirewise.case.scope_of) is read from the nodes' stored wirings once, at
the start; each scope is judged on its own. The campaign is an ordinary one: `campaign
status`, `collect`, `resume` and `cancel` work on it, and its folder holds verdict.json.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.executor import SLURM
from wirewise.orchestrator.executor.core import Node, Scope
from wirewise.orchestrator.fleet.schedule import MODES, next_round
from wirewise.orchestrator.fleet.verdict import Measure, Pair, Verdict, judge
from wirewise.runs import utc_stamp

POLL_S = 1.0
OnRound = Callable[[int, list[Pair], list[Measure]], None]  # (round, its pairs, their measures)


@dataclass(frozen=True)
class PairTest:
    """What every pair test measures and how long it may take."""

    op: str = "all_reduce"
    size: int = 64 << 20
    iters: int = 10
    warmup: int = 3
    backend: str | None = None  # None: nccl where every node has GPUs, else gloo
    gpus: int | None = None  # per node; None: every GPU of the node (nccl), one CPU rank (gloo)
    timeout_s: float = 300.0  # per test, enforced by its supervisors
    time: str = "00:30:00"  # the Slurm time limit of each test's job


def run_pair_tests(store, scope: Scope, mode: str, test: PairTest, tolerance: float, name: str | None = None,
                   executor: str = SLURM, on_round: OnRound | None = None) -> dict[str, Any]:
    """Test the scope's nodes in pairs, slow below (1 - tolerance) x the fleet's figure (the
    rules' pair-below-fleet tolerance: wirewise.orchestrator.fleet.pair_findings passes it); the
    verdict, as data (`fleet pairs --json`)."""
    from wirewise.orchestrator.executor import executor_named

    if mode not in MODES:
        raise UserError(f"--mode {mode!r}: choose one of {', '.join(MODES)}")
    if not 0 < tolerance < 1:
        raise UserError(f"--tolerance {tolerance:g}: give a fraction between 0 and 1 (0.2: flag below 80% of the fleet's figure)")
    nodes = executor_named(executor).nodes(scope)
    if nodes is None:
        raise UserError(f"pair tests pin jobs to nodes: executor {executor} has no nodes to name (use {SLURM})")
    usable = [n for n in nodes if not n.unavailable]
    left_out = {n.name: f"{n.unavailable} (Slurm)" for n in nodes if n.unavailable}
    if len(usable) < 2:
        listed = ", ".join(f"{n.name} ({n.unavailable or 'up'})" for n in nodes[:6])
        raise UserError(f"pair tests need at least 2 nodes that take work; {scope.describe()} has {len(usable)}: {listed}")
    from wirewise.orchestrator.store.pair_results import pair_scopes

    campaign = _PairCampaign.start(store, scope, usable, test, name or _default_name(), executor)
    names = [n.name for n in usable]
    fabric = pair_scopes(store)
    measures: list[Measure] = []
    rounds = 0
    try:
        while pairs := next_round(names, measures, mode, tolerance, fabric):
            rounds += 1
            found = campaign.run_round(pairs)
            measures += found
            if on_round is not None:
                on_round(rounds, pairs, found)
    except KeyboardInterrupt:
        campaign.cancel()
        raise
    verdict = judge(names, measures, tolerance, fabric)
    report = {"campaign": campaign.name, "mode": mode, "op": test.op, "bytes": test.size, "backend": campaign.backend,
              "ranks_per_node": campaign.ranks, "nodes": names, "rounds": rounds,
              "left_out": [{"node": n, "reason": r} for n, r in left_out.items()], **verdict.to_json()}
    campaign.write_verdict(report)
    return report


class PairCheck:
    """Pair tests of chosen pairs, submitted at once without waiting: what repeats a pair
    test's finding on a node against a known-good one (wirewise.orchestrator.fleet.repeats:
    before a drain, and as the re-test of a drained node inside its reservation). An ordinary
    campaign: whoever submits it waits for it (campaign_status(...).done), then reads
    `measures()`."""

    def __init__(self, store, pairs: list[Pair], test: PairTest, name: str, partition: str | None = None,
                 reservation: str | None = None, executor: str = SLURM) -> None:
        from wirewise.orchestrator.executor import executor_named

        names = sorted({n for pair in pairs for n in pair})
        scope = Scope(partition=partition, nodelist=",".join(names))
        nodes = executor_named(executor).nodes(scope) or []
        self.pairs = pairs
        self.campaign = _PairCampaign.start(store, scope, nodes, test, name, executor, reservation)
        self.name = self.campaign.name
        self.tasks = self.campaign.submit(pairs)

    def measures(self) -> list[Measure]:
        from wirewise.orchestrator.campaign.track import campaign_status

        statuses = {t.task_id: t.status for t in campaign_status(self.campaign.store, self.name).tasks}
        return self.campaign.measures(self.pairs, self.tasks, statuses)


def _default_name() -> str:
    return f"pairs-{utc_stamp()}"


class _PairCampaign:
    """The campaign that holds the tests: recorded at the first round, a task per test."""

    def __init__(self, store, spec, root: Path, nodes: dict[str, Node], executor: str, ranks: int, backend: str) -> None:
        self.store, self.spec, self.root, self.nodes = store, spec, root, nodes
        self.executor, self.ranks, self.backend = executor, ranks, backend
        self.name = spec.name
        self.tasks: list = []
        self.made_root = False  # whether the folder was made for it (else an empty one was taken)

    @classmethod
    def start(cls, store, scope: Scope, nodes: list[Node], test: PairTest, name: str, executor: str,
              reservation: str | None = None) -> _PairCampaign:
        from wirewise.orchestrator.campaign.lifecycle import campaign_folder, record_campaign
        from wirewise.orchestrator.campaign.spec import parse_spec

        backend = test.backend or ("nccl" if all(n.gpus for n in nodes) else "gloo")
        ranks = test.gpus or (min(n.gpus for n in nodes) if backend == "nccl" else 1)
        if backend == "nccl" and ranks > min(n.gpus for n in nodes):
            raise UserError(f"--gpus {ranks}: the smallest node here has {min(n.gpus for n in nodes)} GPU(s)")
        sweep = {"ops": [test.op], "min_bytes": test.size, "max_bytes": test.size, "iters": test.iters, "warmup": test.warmup}
        where = {k: v for k, v in (("partition", scope.partition), ("nodelist", scope.nodelist),
                                   ("constraint", scope.constraint), ("reservation", reservation)) if v}
        doc = {"name": name, "workloads": [{"collectives": sweep}], "axes": {"gpus": [ranks]},
               "target": {"executor": executor, **where, "nodes": 2, "backend": backend, "time": test.time,
                          "timeout_s": test.timeout_s, "tasks_per_element": 1, "array_parallelism": max(1, len(nodes) // 2)}}
        spec = parse_spec(doc, "fleet pairs")
        root = campaign_folder(spec)
        campaign = cls(store, spec, root, {n.name: n for n in nodes}, executor, ranks, backend)
        # the folder guarded as every campaign's is: new or empty, else nothing stays recorded
        campaign.made_root = record_campaign(store, spec, root, executor, campaign._plan(), [])
        return campaign

    def run_round(self, pairs: list[Pair]) -> list[Measure]:
        """Submit a round's tests, wait for them (one state query per poll), store what they
        measured and read it back."""
        tasks = self.submit(pairs)
        statuses = self._wait({t.spec.task_id for t in tasks})
        return self.measures(pairs, tasks, statuses)

    def submit(self, pairs: list[Pair]) -> list:
        """A round's tests recorded and submitted, each pinned to its pair; returns their tasks."""
        from wirewise.orchestrator.campaign.lifecycle import dispatch, submission_for
        from wirewise.orchestrator.campaign.folder import CampaignFolder
        from wirewise.orchestrator.campaign.submit import Pin
        from wirewise.orchestrator.executor.core import SubmissionRefused
        from wirewise.orchestrator.store.campaigns import add_tasks

        tasks = [self._task(pair) for pair in pairs]
        add_tasks(self.store, self.name, tasks)
        folder = CampaignFolder(self.root)
        for task in tasks:
            folder.write_task(task.spec)
        self.tasks += tasks
        self._write_plan()
        pins = {t.spec.task_id: Pin.on(tuple(t.spec.hosts), self.nodes, self.spec.target.partition) for t in tasks}
        submission = submission_for(self.spec, None, [(t.spec.task_id, 1) for t in tasks], self.executor, self.root, pins=pins)
        try:
            dispatch(self.store, self.name, submission, self.root, self.executor)
        except SubmissionRefused as exc:
            if len(self.tasks) == len(tasks):  # the first round: nothing ran, nothing stays
                self._forget()
                raise UserError(f"pair tests {self.name}: {exc}. Nothing was recorded") from None
            raise UserError(f"pair tests {self.name}: {exc}; the tests so far stay in campaign {self.name}") from None
        return tasks

    def measures(self, pairs: list[Pair], tasks: list, statuses: dict[str, str]) -> list[Measure]:
        """What the submitted tests measured, once collected into the store: the campaign's
        results read once for the round (not once per pair: a round of 500 pairs read them 500
        times)."""
        from wirewise.orchestrator.store.pair_results import pair_results

        by_task: dict[str, list] = {}
        for row in pair_results(self.store, campaign=self.name):
            by_task.setdefault(row.task_id, []).append(row)
        return [self._measure(pair, by_task.get(task.spec.task_id, []), statuses.get(task.spec.task_id, "missing"))
                for pair, task in zip(pairs, tasks)]

    def _task(self, pair: Pair):
        from wirewise.orchestrator.campaign.plan import PlannedTask
        from wirewise.workloads import Ranks

        sweep = self.spec.workloads[0].collectives
        ranks = Ranks(list(range(self.ranks)) if self.backend == "nccl" else [], self.ranks, self.backend)
        spec = sweep.model_copy(update={"transport": "default"}).to_task(
            ranks, campaign=self.name, nnodes=2, timeout_s=self.spec.target.timeout_s, hosts=sorted(pair),
            labels={"placement": "pair", "transport": "default"})
        return PlannedTask(spec, "pair", "default", 0)

    def _wait(self, task_ids: set[str]) -> dict[str, str]:
        from wirewise.orchestrator.campaign.track import campaign_status, collect_campaign

        while True:
            states = {t.task_id: t.status for t in campaign_status(self.store, self.name).tasks if t.task_id in task_ids}
            if all(s not in ("running", "pending") for s in states.values()):
                collect_campaign(self.store, self.name)
                return states
            time.sleep(POLL_S)

    def _measure(self, pair: Pair, rows: list, status: str) -> Measure:
        """What the store holds for the test (its result rows): its busbw at the size (out of
        place where both forms were measured), or why it failed."""
        from wirewise.orchestrator.fleet.standing import figure_of

        row = figure_of([r for r in rows if r.op == self.spec.workloads[0].collectives.ops[0]])
        if row is not None:
            return Measure(pair, row.busbw_gbs)
        error = next((r.error for r in rows if r.error), None) or f"the test ended {status} without a result"
        return Measure(pair, None, error.splitlines()[0][:300], ran=any(r.status != "cancelled" for r in rows))

    def _forget(self) -> None:
        from wirewise.orchestrator.campaign.lifecycle import unrecord_campaign

        unrecord_campaign(self.store, self.name, self.root, [t.spec.task_id for t in self.tasks], self.made_root)

    def cancel(self) -> None:
        from wirewise.orchestrator.campaign.lifecycle import cancel_campaign

        cancel_campaign(self.store, self.name)

    def _plan(self) -> dict[str, Any]:
        return {"campaign": self.name, "node": None, "scope": "pairs", "tasks": [t.to_json() for t in self.tasks], "skipped": []}

    def _write_plan(self) -> None:
        from wirewise.atomic import write_json_atomic
        from wirewise.orchestrator.campaign.folder import PLAN

        write_json_atomic(self.root / PLAN, self._plan())

    def write_verdict(self, report: dict[str, Any]) -> None:
        from wirewise.atomic import write_json_atomic

        write_json_atomic(self.root / "verdict.json", report)


__all__ = ["PairCheck", "PairTest", "Verdict", "run_pair_tests"]
