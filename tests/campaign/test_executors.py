"""The executor seam (wirewise.orchestrator.executor): a registry of executors, one clear line
for a name it does not hold, campaigns driven through the protocol alone (a third executor
plugged in with one registry line is submitted to, polled and cancelled like the two that
ship), and the local executor acting only on the very run that took a campaign's elements."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from tests.conftest import wirewise, wirewise_json
from tests.topology.common import NVL_QUADS
from wirewise.errors import UserError
from wirewise.orchestrator.executor import EXECUTORS, executor_named
from wirewise.orchestrator.executor.core import ENDED, PENDING, Submitted, SubmissionRefused
from wirewise.orchestrator.executor.local import LocalExecutor, process_id
from wirewise.orchestrator.store import Store

QUICK = {"ops": ["all_reduce"], "min_bytes": "4K", "max_bytes": "4K", "iters": 2, "warmup": 1}


def spec_file(folder: Path, executor_name: str, **target) -> Path:
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump({
        "name": "seam", "workloads": [{"collectives": QUICK}], "axes": {"gpus": [2], "repeats": 3},
        "target": {"executor": executor_name, "tasks_per_element": 1, "folder": str(folder / "campaign"), **target},
    }))
    return path


def test_the_registry_and_an_unknown_name(tmp_path) -> None:
    assert sorted(EXECUTORS) == ["local", "slurm"]
    assert executor_named("local").runs_here and not executor_named("slurm").runs_here
    with pytest.raises(UserError, match=r"^executor 'flux': choose one of local, slurm$"):
        executor_named("flux")
    proc = wirewise("campaign", "submit", str(spec_file(tmp_path, "local")), "--executor", "flux", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (2, "wirewise: error: --executor 'flux': choose one of local, slurm\n")
    proc = wirewise("campaign", "plan", str(spec_file(tmp_path, "flux")), "--topology-file", str(NVL_QUADS))
    assert proc.returncode == 2 and "target.executor: 'flux' is not one of local, slurm" in proc.stderr
    assert not (tmp_path / "wirewise.db").exists()


def test_a_job_request_checks_itself() -> None:
    from wirewise.orchestrator.campaign.spec import parse_spec
    from wirewise.orchestrator.campaign.submit import job_request
    from wirewise.orchestrator.executor.core import JobRequest

    longest = parse_spec({"name": "n" * 64, "workloads": [{"collectives": QUICK}], "target": {"executor": "slurm"}})
    request = job_request(longest.target, longest.name, 8, Path("/shared/c"))
    assert request.name == "wirewise-" + "n" * 64 and request.folder == Path("/shared/c/submitit")
    with pytest.raises(UserError, match=r"^-p 'gpu\\n#SBATCH -A x': not a Slurm name"):
        JobRequest(folder=Path("/tmp/j"), name="j", time_min=5, partition="gpu\n#SBATCH -A x", labels={"partition": "-p"})
    with pytest.raises(UserError, match=r"^nodes 0: give a whole number from 1 to 65,536"):
        JobRequest(folder=Path("/tmp/j"), name="j", time_min=5, nodes=0)


class QueueExecutor:
    """A third executor, as a Flux or Kubernetes one would plug in: it queues elements (nothing
    runs), answers their states and cancels them, and says no to its `refuse_from`-th array."""

    name: ClassVar[str] = "queue"
    runs_here: ClassVar[bool] = False
    calls: ClassVar[list[tuple]] = []
    refuse_from: ClassVar[int | None] = None
    answer: ClassVar[str] = PENDING  # every element's state

    def parameters(self, request) -> dict[str, Any]:
        return {"queue_job": request.name, "minutes": request.time_min}

    def array_limit(self, dry_run: bool = False) -> int | None:
        return 2

    def submit(self, request, fn, elements, on_submitted=None, until=None) -> Submitted:
        arrays = sum(1 for call in self.calls if call[0] == "submit")
        self.calls.append(("submit", len(elements)))
        if self.refuse_from is not None and arrays >= self.refuse_from:
            raise SubmissionRefused("the queue refused the job: full", "full")
        submitted = Submitted(f"q{arrays}", [f"q{arrays}_{i}" for i in range(len(elements))])
        if on_submitted is not None:
            on_submitted(submitted)
        return submitted

    def states(self, elements):
        self.calls.append(("states", sorted(elements)))
        return {element: self.answer for element in elements}

    def allocation_problems(self, elements) -> dict[str, str]:
        return {}

    def cancel(self, elements) -> dict[str, Any]:
        self.calls.append(("cancel", sorted(elements)))
        return {"cancelled_arrays": sorted({e.split("_")[0] for e in elements})}

    def nodes(self, scope):
        return None  # a queue without named nodes: no fleet campaigns, nothing to check a request against


@pytest.fixture
def queue(monkeypatch):
    monkeypatch.setitem(EXECUTORS, "queue", f"{__name__}:QueueExecutor")  # the one registry line
    monkeypatch.setattr(QueueExecutor, "calls", [])
    monkeypatch.setattr(QueueExecutor, "refuse_from", None)
    monkeypatch.setattr(QueueExecutor, "answer", PENDING)
    return QueueExecutor


def test_campaigns_go_through_the_seam_alone(tmp_path, db_url, queue) -> None:
    from wirewise.orchestrator.campaign.lifecycle import cancel_campaign, plan_spec, submit_spec
    from wirewise.orchestrator.campaign.track import campaign_status

    spec, plan = plan_spec(str(spec_file(tmp_path, "queue")), str(NVL_QUADS))
    store = Store(db_url)
    report = submit_spec(store, spec, plan, "queue")
    assert report["arrays"] == ["q0", "q1"] and report["array_elements"] == [2, 1]  # split by its array limit
    assert report["parameters"] == {"queue_job": "wirewise-seam", "minutes": 60}
    status = campaign_status(store, "seam")
    assert status.counts == {"pending": 3} and {t.element for t in status.tasks} == {"q0_0", "q0_1", "q1_0"}
    assert cancel_campaign(store, "seam") == {"campaign": "seam", "cancelled_arrays": ["q0", "q1"]}
    assert [call[0] for call in queue.calls] == ["submit", "submit", "states", "states", "cancel"]


def test_a_refused_array_cancels_what_went_out_and_records_nothing(tmp_path, db_url, queue) -> None:
    from wirewise.orchestrator.campaign.lifecycle import plan_spec, submit_spec

    queue.refuse_from = 1  # the first array goes out, the second is refused
    spec, plan = plan_spec(str(spec_file(tmp_path, "queue")), str(NVL_QUADS))
    with pytest.raises(UserError, match="campaign seam: the queue refused the job: full; change the spec's target"):
        submit_spec(Store(db_url), spec, plan, "queue")
    assert ("cancel", ["q0_0", "q0_1"]) in queue.calls
    assert sqlite3.connect(db_url.removeprefix("sqlite:///")).execute("SELECT count(*) FROM campaigns").fetchone() == (0,)
    assert not (tmp_path / "campaign").exists()
    queue.refuse_from = None
    assert submit_spec(Store(db_url), spec, plan, "queue")["arrays"]  # the same spec, submitted again


def test_a_refused_resume_leaves_the_tasks_as_they_were(tmp_path, db_url, queue) -> None:
    from wirewise.orchestrator.campaign.lifecycle import plan_spec, resume_campaign, submit_spec
    from wirewise.orchestrator.store.campaigns import campaign_tasks

    spec, plan = plan_spec(str(spec_file(tmp_path, "queue")), str(NVL_QUADS))
    store = Store(db_url)
    submit_spec(store, spec, plan, "queue")
    queue.answer = ENDED  # the elements died without a word: their tasks are missing
    queue.refuse_from = 2  # the resubmission is refused
    with pytest.raises(UserError, match="the queue refused the job: full; .* Its tasks are as they were"):
        resume_campaign(store, "seam", include_oom=False, max_attempts=3)
    tasks = campaign_tasks(store, "seam")
    assert {(t.status, t.attempts) for t in tasks} == {("missing", 1)}
    assert {t.element for t in tasks} == {"q0_0", "q0_1", "q1_0"}
    queue.refuse_from = None
    assert resume_campaign(store, "seam", include_oom=False, max_attempts=3)["resubmitted"] == 3


@pytest.fixture
def stranger():
    """A live process that has nothing to do with any campaign."""
    proc = subprocess.Popen(["sleep", "600"])
    yield proc
    proc.kill()
    proc.wait()


def test_the_local_executor_knows_its_own_run(stranger) -> None:
    local = LocalExecutor()
    mine = process_id(os.getpid())
    _, pid, start, digest = mine.split(":")
    assert int(pid) == os.getpid() and local.states([mine]) == {mine: "running"}
    planted = f"local:{stranger.pid}:{start}:{digest}"  # the pid reused by another process
    assert local.states([planted, None]) == {planted: "ended", None: "ended"}
    assert local.cancel([planted]) == {"cancelled_arrays": [], "note": f"no local run is going: the run with pid {stranger.pid} is gone"}
    assert stranger.poll() is None  # still alive: nothing was signalled


def test_cancel_after_a_killed_local_run_leaves_a_reused_pid_alone(tmp_path, db_url, stranger) -> None:
    """`campaign submit --executor local` killed with -9 mid-task; its pid then names another
    process (planted: the run's id with the stranger's pid, as a reuse of the pid looks). The
    campaign reads as ended (missing, so resume may run it), and cancel signals nothing."""
    slow = {**QUICK, "min_bytes": "1M", "max_bytes": "1M", "iters": 1_000_000}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "killed", "workloads": [{"collectives": slow}], "axes": {"gpus": [2]},
                                    "target": {"executor": "local", "timeout_s": 600}}))
    env = {**os.environ, "WIREWISE_RUNS": str(tmp_path / "runs"), "CUDA_VISIBLE_DEVICES": ""}
    Store(db_url)  # migrated before the status polls below start beside the submit
    run = subprocess.Popen([str(Path(sys.executable).with_name("wirewise")), "campaign", "submit", str(spec), "--db", db_url],
                           env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not _is_running(db_url):
            assert run.poll() is None and time.monotonic() < deadline, "the local run never started its task"
            time.sleep(0.3)
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    db = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    (element,) = {row[0] for row in db.execute("SELECT slurm_job_id FROM tasks")}
    _, pid, start, digest = element.split(":")
    assert int(pid) == run.pid
    with db:
        db.execute("UPDATE tasks SET slurm_job_id = ?", (f"local:{stranger.pid}:{start}:{digest}",))

    status = wirewise_json("campaign", "status", "killed", "--db", db_url, env=env)
    assert status["counts"] == {"missing": 1} and status["done"]
    cancelled = wirewise("campaign", "cancel", "killed", "--db", db_url, env=env)
    assert cancelled.returncode == 0
    assert cancelled.stdout == "campaign killed: nothing running (no local run is going)\n"
    assert stranger.poll() is None
    resumed = wirewise_json("campaign", "resume", "killed", "--max-attempts", "1", "--db", db_url, env=env)
    assert resumed["attempt_limit_reached"] == [status["tasks"][0]["task_id"]]  # resume may act: the run is gone


def _is_running(db_url: str) -> bool:
    proc = wirewise("campaign", "status", "killed", "--db", db_url, "--json")
    return proc.returncode == 0 and json.loads(proc.stdout)["counts"].get("running") == 1
