"""`campaign status` reads what finished from the campaign folder's outcomes/ (one listing: an
empty file TASK.N.STATUS per finished run, wirewise.orchestrator.campaign.folder), and a task's
own folder only where outcomes/ does not settle it and its element has ended. These tests drive
a campaign through the executor seam (test_executors.QueueExecutor: the elements' states are
what the test says) with real files and a real database, and check the status after each thing
a worker on another node may do to the folder: finish, fail, be requeued, be resubmitted, die
without an outcome, die between its result and its outcome, leave a partial or stray file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.campaign.test_executors import QueueExecutor, queue, spec_file  # noqa: F401 (the fixture)
from tests.topology.common import NVL_QUADS
from wirewise.orchestrator.campaign.folder import OUTCOMES, CampaignFolder
from wirewise.orchestrator.executor.core import ENDED, PENDING, RUNNING
from wirewise.orchestrator.store import Store


@pytest.fixture
def seam(tmp_path, db_url, queue):  # noqa: F811 (the fixture imported above)
    """A submitted campaign of three tasks, one an element (q0_0, q0_1, q1_0), all pending."""
    from wirewise.orchestrator.campaign.lifecycle import plan_spec, submit_spec

    spec, plan = plan_spec(str(spec_file(tmp_path, "queue")), str(NVL_QUADS))
    store = Store(db_url)
    submit_spec(store, spec, plan, "queue")
    return store, CampaignFolder(tmp_path / "campaign"), [task.spec.task_id for task in plan.tasks]


def states(store) -> dict[str, tuple[str, int]]:
    from wirewise.orchestrator.campaign.track import campaign_status

    return {t.task_id: (t.status, t.attempt) for t in campaign_status(store, "seam").tasks}


def test_a_finished_run_is_read_from_outcomes_alone(seam) -> None:
    store, folder, (a, b, c) = seam
    assert sorted(os.listdir(folder.root / OUTCOMES)) == []  # made at submit, empty
    QueueExecutor.answer = RUNNING
    folder.attempt_dir(a, 1).mkdir()
    folder.write_outcome(a, "ok", 1)
    assert os.listdir(folder.root / OUTCOMES) == [f"{a}.1.ok"]
    # outcomes/ settles it: the task's own outcome.json is not read (here made unreadable)
    (folder.task_dir(a) / "outcome.json").write_text('{"status": "fai')
    assert states(store) == {a: ("ok", 1), b: ("running", 1), c: ("running", 1)}


def test_a_run_that_died_without_an_outcome(seam) -> None:
    store, folder, (a, b, c) = seam
    folder.claim_attempt(a, 1, "step-1")
    folder.attempt_dir(a, 1).mkdir()  # started, then the node died: no result, no outcome
    QueueExecutor.answer = RUNNING
    assert states(store)[a] == ("running", 1)
    QueueExecutor.answer = ENDED
    assert states(store) == {a: ("missing", 1), b: ("missing", 1), c: ("missing", 1)}


def test_a_run_that_died_between_its_result_and_its_outcome(seam) -> None:
    """Its result is there, its outcome is not (nor named): once its element has ended, the
    task's folder is read and the result counts; a requeued bundle that finds it names it."""
    from wirewise.orchestrator.campaign.bundle import run_bundle

    store, folder, (a, b, c) = seam
    folder.claim_attempt(a, 1, "step-1")
    folder.attempt_dir(a, 1).mkdir()
    folder.result_file(a, 1).write_text(json.dumps({"status": "failed", "error": "NCCL error"}))
    QueueExecutor.answer = ENDED
    assert states(store)[a] == ("failed", 1)
    assert os.listdir(folder.root / OUTCOMES) == []
    assert run_bundle(folder.root, [(a, 1)]) == {}  # the requeued bundle skips it: it finished
    assert os.listdir(folder.root / OUTCOMES) == [f"{a}.1.failed"]
    QueueExecutor.answer = RUNNING
    assert states(store)[a] == ("failed", 1)


def test_a_resubmitted_task_is_its_new_attempt_and_a_requeued_one_its_latest(seam) -> None:
    from wirewise.orchestrator.campaign.lifecycle import resume_campaign

    store, folder, (a, b, c) = seam
    for task_id, status in ((a, "failed"), (b, "ok"), (c, "ok")):
        folder.attempt_dir(task_id, 1).mkdir()
        folder.write_outcome(task_id, status, 1)
    QueueExecutor.answer = ENDED
    assert states(store) == {a: ("failed", 1), b: ("ok", 1), c: ("ok", 1)}
    assert resume_campaign(store, "seam", include_oom=False, max_attempts=3)["resubmitted"] == 1
    QueueExecutor.answer = PENDING  # attempt 1's outcome is still named: it is not attempt 2's
    assert states(store)[a] == ("pending", 2)
    QueueExecutor.answer = RUNNING
    assert folder.claim_attempt(a, 2, "step-2") == 2
    assert states(store)[a] == ("running", 2)
    # the node is lost and Slurm requeues the element: the next run claims attempt 3
    assert folder.claim_attempt(a, 2, "step-3") == 3
    folder.attempt_dir(a, 3).mkdir()
    folder.write_outcome(a, "ok", 3)
    assert states(store) == {a: ("ok", 3), b: ("ok", 1), c: ("ok", 1)}
    assert sorted(os.listdir(folder.root / OUTCOMES)) == sorted([f"{a}.1.failed", f"{a}.3.ok", f"{b}.1.ok", f"{c}.1.ok"])


def test_partial_and_stray_files(seam) -> None:
    """A partial outcome.json (a writer without wirewise's atomic write, a torn copy) is no
    outcome; names in outcomes/ that are not a finished run's are none either; two statuses
    named for one attempt are settled by the task's own outcome.json."""
    store, folder, (a, b, c) = seam
    folder.attempt_dir(a, 1).mkdir()
    (folder.task_dir(a) / "outcome.json").write_text('{"status": "ok", "att')
    for stray in (f"{b}.1.", f"{b}.x.ok", f"{b}.1.weird", f".{b}.1.ok.tmp", ".nfs000000000123", f"{b}.1.ok.part", f"{b}.².ok"):
        (folder.root / OUTCOMES / stray).touch()
    folder.attempt_dir(c, 1).mkdir()
    folder.write_outcome(c, "oom", 1)
    (folder.root / OUTCOMES / f"{c}.1.ok").touch()
    QueueExecutor.answer = RUNNING
    assert states(store) == {a: ("running", 1), b: ("running", 1), c: ("running", 1)}
    QueueExecutor.answer = ENDED
    assert states(store) == {a: ("missing", 1), b: ("missing", 1), c: ("oom", 1)}


def test_a_folder_from_before_outcomes_is_read_a_task_at_a_time(seam) -> None:
    store, folder, (a, b, c) = seam
    (folder.root / OUTCOMES).rmdir()
    folder.attempt_dir(a, 1).mkdir()
    folder.write_outcome(a, "timeout", 1)
    assert not (folder.root / OUTCOMES).exists()  # a run does not make it: the folder would then lie
    QueueExecutor.answer = RUNNING
    assert states(store) == {a: ("timeout", 1), b: ("running", 1), c: ("running", 1)}


def test_a_refused_submission_leaves_no_outcomes_folder(tmp_path, db_url, queue) -> None:  # noqa: F811
    from wirewise.errors import UserError
    from wirewise.orchestrator.campaign.lifecycle import plan_spec, submit_spec

    QueueExecutor.refuse_from = 0
    spec, plan = plan_spec(str(spec_file(tmp_path, "queue")), str(NVL_QUADS))
    with pytest.raises(UserError):
        submit_spec(Store(db_url), spec, plan, "queue")
    assert not Path(tmp_path / "campaign").exists()
