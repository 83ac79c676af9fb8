"""A campaign's folder: what the control plane writes at submit and the compute nodes write
as they run. It lives on storage both see (for Slurm, a shared file system).

    FOLDER/spec.yaml                      the spec as submitted
    FOLDER/plan.json                      the plan (`campaign plan --json`)
    FOLDER/tasks/TASK/spec.json           the task (wirewise.task.TaskSpec)
    FOLDER/tasks/TASK/attemptN.claim      which run took attempt N (the Slurm step, wirewise.jobs.launch.step_key)
    FOLDER/tasks/TASK/attemptN/           run folder of the N-th run: rank logs, result.json
    FOLDER/tasks/TASK/outcome.json        {"status", "attempt"} of the latest finished run
    FOLDER/submitit/                      submitit's pickles and job logs (the Slurm executor's)

A task is done when its latest attempt wrote result.json, whatever its status; outcome.json
is a few bytes written right after, so `campaign status` reads it instead of results that
can run to megabytes.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

from wirewise.atomic import write_json_atomic

if TYPE_CHECKING:  # status reads folders without pydantic: it must answer fast
    from wirewise.task import TaskSpec

RESULT = "result.json"
OUTCOME = "outcome.json"
CLAIM = ".claim"


@dataclass(frozen=True)
class CampaignFolder:
    root: Path

    def task_dir(self, task_id: str) -> Path:
        return self.root / "tasks" / task_id

    def write_task(self, spec: TaskSpec) -> None:
        folder = self.task_dir(spec.task_id)
        folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(folder / "spec.json", spec.model_dump(mode="json"))

    def read_task(self, task_id: str) -> TaskSpec:
        from wirewise.task import TaskSpec

        return TaskSpec.model_validate_json((self.task_dir(task_id) / "spec.json").read_text())

    def attempts(self, task_id: str) -> int:
        """How many runs of the task have started (attempts claimed, or their folders present)."""
        try:
            return _latest_attempt(os.listdir(self.task_dir(task_id)))
        except FileNotFoundError:
            return 0

    def claim_attempt(self, task_id: str, at_least: int, step: str | None) -> int:
        """The attempt this run of the task is: the first from `at_least` after every attempt
        already started, and the same one on every node of one Slurm step (`step`; None: a run
        of its own). The first node to get here claims it with an exclusive hard link (atomic
        on local and NFS file systems alike); the others find their step's claim and join it."""
        folder = self.task_dir(task_id)
        step = step or f"local-{uuid.uuid4().hex}"
        names = os.listdir(folder)
        for name in names:
            if name.startswith("attempt") and name.endswith(CLAIM) and _claim_owner(folder / name) == step:
                return int(name[len("attempt") : -len(CLAIM)])
        attempt = max(at_least, _latest_attempt(names) + 1)
        note = folder / f".claim-{uuid.uuid4().hex}"
        note.write_text(step)
        try:
            while True:
                claim = folder / f"attempt{attempt}{CLAIM}"
                try:
                    os.link(note, claim)
                    return attempt
                except FileExistsError:
                    if _claim_owner(claim) == step:
                        return attempt
                    attempt += 1
        finally:
            note.unlink()

    def attempt_dir(self, task_id: str, attempt: int) -> Path:
        return self.task_dir(task_id) / f"attempt{attempt}"

    def result_file(self, task_id: str, attempt: int) -> Path:
        return self.attempt_dir(task_id, attempt) / RESULT

    def write_outcome(self, task_id: str, status: str, attempt: int) -> None:
        write_json_atomic(self.task_dir(task_id) / OUTCOME, {"status": status, "attempt": attempt})

    def remove_written(self, task_ids: list[str], whole: bool) -> None:
        """Undo a submission that did not go out: the whole folder when it was made for it,
        else only what the submission wrote (spec, plan, these tasks' folders)."""
        if whole:
            shutil.rmtree(self.root, ignore_errors=True)
            return
        for name in ("spec.yaml", "plan.json"):
            (self.root / name).unlink(missing_ok=True)
        for task_id in task_ids:
            shutil.rmtree(self.task_dir(task_id), ignore_errors=True)
        for empty in (self.root / "tasks", self.root / "submitit"):
            with suppress(OSError):
                empty.rmdir()

    def outcome(self, task_id: str) -> dict | None:
        """The latest run's {"status", "attempt"} once it finished, else None. A run that wrote its
        result but not yet its outcome (its element was killed in between) is read from the result.
        One directory listing and one small read per task: status reads 10,000 tasks in a blink."""
        folder = os.path.join(self.root, "tasks", task_id)
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            return None
        latest = _latest_attempt(names)
        if latest == 0:
            return None
        if OUTCOME in names:
            with open(os.path.join(folder, OUTCOME)) as fh:
                outcome = json.load(fh)
            if outcome.get("attempt") == latest:
                return outcome
        try:
            with open(os.path.join(folder, f"attempt{latest}", RESULT)) as fh:
                return {"status": json.load(fh)["status"], "attempt": latest}
        except (OSError, ValueError, KeyError):
            return None  # the latest run has not finished, or died without a word


def _latest_attempt(names: list[str]) -> int:
    """The highest N of attemptN folders and attemptN.claim files."""
    numbers = (name[7:].removesuffix(CLAIM) for name in names if name.startswith("attempt"))
    return max((int(n) for n in numbers if n.isdigit()), default=0)


def _claim_owner(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None
