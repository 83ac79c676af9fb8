"""A campaign's folder: what the control plane writes at submit and the compute nodes write
as they run. It lives on storage both see (for Slurm, a shared file system).

    FOLDER/spec.yaml                      the spec as submitted
    FOLDER/plan.json                      the plan (`campaign plan --json`)
    FOLDER/tasks/TASK/spec.json           the task (wirewise.task.TaskSpec)
    FOLDER/tasks/TASK/attemptN.claim      which run took attempt N (the Slurm step, wirewise.jobenv.JobEnv.step_key)
    FOLDER/tasks/TASK/attemptN/           run folder of the N-th run: rank logs, result.json (wirewise.runs.RunPaths)
    FOLDER/tasks/TASK/outcome.json        {"status", "attempt"} of the latest finished run
    FOLDER/outcomes/TASK.N.STATUS         an empty file per finished run: the campaign's outcomes in one folder
    FOLDER/submitit/                      submitit's pickles and job logs (the Slurm executor's)

A task is done when its latest attempt wrote result.json, whatever its status; outcome.json
is a few bytes written right after, so a reader of one task reads it instead of results that
can run to megabytes. Then the run names its outcome in outcomes/: the name is the whole
record (an empty file made in one step, atomic on local and NFS file systems alike, so there is
no partial one), and `campaign status` lists that one folder instead of opening a file per task
(issue 33: 93,642 tasks' outcome files took 9 s of CPU and 46 s at load 12 on 2 cores). A
folder made before outcomes/ existed has none, and is read a task at a time as before.

The folder is the campaign's: a new campaign gets a new or empty folder (never one holding
the user's files or another campaign's plan, which it would overwrite), and every command on
a stored campaign checks its folder first, so a folder deleted or replaced is one line and
the stored statuses stay as they were.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING, Any

from wirewise.atomic import write_json_atomic
from wirewise.errors import UserError
from wirewise.limits import MAX_RESULT_BYTES, MAX_SMALL_FILE_BYTES, read_bounded, read_head
from wirewise.runs import SUBMITIT, RunPaths

if TYPE_CHECKING:  # status reads folders without pydantic: it must answer fast
    from wirewise.task import TaskSpec

OUTCOME = "outcome.json"
OUTCOMES = "outcomes"
CLAIM = ".claim"
PLAN = "plan.json"
SPEC = "spec.yaml"
TASKS = "tasks"
FINISHED = ("ok", "oom", "failed", "timeout", "cancelled")  # what a run's outcome may say (wirewise.record.Status)
_PLAN_OWNER = re.compile(r'^\{\s*"campaign":\s*("(?:[^"\\]|\\.)*")')  # plan.json begins with its campaign's name


@dataclass(frozen=True)
class CampaignFolder:
    root: Path

    def task_dir(self, task_id: str) -> Path:
        return self.root / TASKS / task_id

    def task_spec(self, task_id: str) -> Path:
        """The task's spec.json: the one every attempt's run folder gets (RunPaths.spec)."""
        return RunPaths(self.task_dir(task_id)).spec

    @property
    def submitit(self) -> Path:
        return self.root / SUBMITIT

    def write_task(self, spec: TaskSpec) -> None:
        self.task_dir(spec.task_id).mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.task_spec(spec.task_id), spec.model_dump(mode="json"))

    def read_task(self, task_id: str) -> TaskSpec:
        from wirewise.task import TaskSpec

        return TaskSpec.model_validate_json(self.task_spec(task_id).read_text())

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
        return RunPaths(self.attempt_dir(task_id, attempt)).result

    def write_outcome(self, task_id: str, status: str, attempt: int) -> None:
        write_json_atomic(self.task_dir(task_id) / OUTCOME, {"status": status, "attempt": attempt})
        self.name_outcome(task_id, status, attempt)

    def name_outcome(self, task_id: str, status: str, attempt: int) -> None:
        """The run's outcome named in outcomes/ (after outcome.json: what the index names, the
        task's folder holds), where the campaign was submitted with that folder."""
        with suppress(FileNotFoundError):  # a folder from before outcomes/: read a task at a time
            os.close(os.open(os.path.join(self.root, OUTCOMES, f"{task_id}.{attempt}.{status}"), os.O_CREAT | os.O_WRONLY, 0o644))

    def outcome_index(self) -> dict[str, tuple[int, str]] | None:
        """{task id: (attempt, status)} of each task's latest finished run named in outcomes/, from
        one listing of that folder; None for a folder made before it (read each task's own).
        Names that are not a finished run's (a status wirewise does not write, a file an NFS
        client or a person left) are no outcome; two statuses for one attempt, none either: the
        task's own folder says which (CampaignFolder.outcome)."""
        try:
            names = os.listdir(os.path.join(self.root, OUTCOMES))
        except (FileNotFoundError, NotADirectoryError):
            return None
        index: dict[str, tuple[int, str]] = {}
        ambiguous: set[tuple[str, int]] = set()
        for name in names:
            parts = name.rsplit(".", 2)
            if len(parts) != 3 or not parts[0] or not (parts[1].isascii() and parts[1].isdigit()) or parts[2] not in FINISHED:
                continue
            task_id, attempt, status = parts
            found, number = index.get(task_id), int(attempt)
            if found is None or number > found[0]:
                index[task_id] = (number, status)
            elif number == found[0] and status != found[1]:
                ambiguous.add((task_id, number))
        for task_id, number in ambiguous:
            if index[task_id][0] == number:
                del index[task_id]
        return index

    def remove_written(self, task_ids: list[str], whole: bool) -> None:
        """Undo a submission that did not go out: the whole folder when it was made for it,
        else only what the submission wrote (spec, plan, these tasks' folders)."""
        if whole:
            shutil.rmtree(self.root, ignore_errors=True)
            return
        for name in (SPEC, PLAN):
            (self.root / name).unlink(missing_ok=True)
        for task_id in task_ids:
            shutil.rmtree(self.task_dir(task_id), ignore_errors=True)
        for empty in (self.root / TASKS, self.root / OUTCOMES, self.submitit):
            with suppress(OSError):
                empty.rmdir()

    def run_error(self, task_id: str, attempt: int) -> str | None:
        """The error a run wrote in its result, where it wrote one."""
        try:
            doc = json.loads(self.result_file(task_id, attempt).read_text())
        except (OSError, ValueError):
            return None
        error = doc.get("error") if isinstance(doc, dict) else None
        return error if isinstance(error, str) else None

    def outcome(self, task_id: str) -> dict | None:
        """The latest run's {"status", "attempt"} once it finished, else None. A run that wrote its
        result but not yet its outcome (its element was killed in between) is read from the result.
        One directory listing and one small read per task: `campaign status` reads it only for
        tasks outcomes/ does not settle (CampaignFolder.outcome_index)."""
        folder = os.path.join(self.root, TASKS, task_id)
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            return None
        latest = _latest_attempt(names)
        if latest == 0:
            return None
        if OUTCOME in names:
            outcome = _read_outcome(os.path.join(folder, OUTCOME), MAX_SMALL_FILE_BYTES)
            if outcome is not None and outcome.get("attempt") == latest:
                return outcome
        found = _read_outcome(str(self.result_file(task_id, latest)), MAX_RESULT_BYTES)
        return None if found is None else {"status": found["status"], "attempt": latest}


def _read_outcome(path: str, max_bytes: int) -> dict | None:
    """{"status", "attempt"?} from an outcome or result file, or None when it cannot be read or
    does not hold a run's status: the run has not finished, died without a word, or the file
    was planted (a FIFO, a status such as '[/]' that is none of FINISHED)."""
    try:
        doc = json.loads(read_bounded(path, max_bytes))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("status") not in FINISHED:
        return None
    attempt = doc.get("attempt")
    if attempt is not None and (not isinstance(attempt, int) or isinstance(attempt, bool)):
        return None
    return doc


# -- the folder of a new campaign, and of a stored one ------------------------------------------
def claim_folder(root: Path, name: str) -> bool:
    """Make `root` the folder of the new campaign `name`: created when missing (True), or
    taken when it is an empty folder (False). UserError, with nothing made, for a folder that
    is not empty (the user's files, another campaign's plan: both would be overwritten) and
    for one that cannot be made (a file on the way, no permission)."""
    if root.is_dir():
        if next(os.scandir(root), None) is not None:
            owner = plan_owner(root)
            whose = (f"holds campaign {owner!r} (its {PLAN})" if owner and owner != name
                     else f"holds an earlier campaign {name!r} (its {PLAN})" if owner
                     else "is not empty")
            raise UserError(f"campaign folder {root} {whose}: wirewise writes {SPEC}, {PLAN} and {TASKS}/ there; "
                            "give target.folder a new or empty folder, or move that one away")
        return False
    try:
        root.mkdir(parents=True)
    except OSError as exc:
        raise UserError(f"cannot make campaign folder {root}: {exc.strerror} (target.folder, or WIREWISE_RUNS)") from None
    return True


def write_campaign(root: Path, name: str, spec_doc: dict[str, Any], plan_doc: dict[str, Any], tasks) -> bool:
    """The new campaign's folder: claimed (claim_folder), then its spec, plan and task specs;
    returns whether the folder was made for it. When any of it fails (a full disk, Ctrl-C)
    what was written goes again (CampaignFolder.remove_written): missing, or empty, as it was."""
    import yaml

    created = claim_folder(root, name)
    folder = CampaignFolder(root)
    try:
        (root / SPEC).write_text(yaml.safe_dump(spec_doc, sort_keys=False))
        write_json_atomic(root / PLAN, plan_doc)
        (root / OUTCOMES).mkdir()
        for task in tasks:
            folder.write_task(task)
    except BaseException as exc:
        folder.remove_written([task.task_id for task in tasks], whole=created)
        if isinstance(exc, OSError):
            raise UserError(f"cannot write campaign folder {root}: {exc.strerror}; nothing recorded") from None
        raise
    return created


def plan_owner(root: Path) -> str | None:
    """The campaign whose plan.json is in `root` (read from its first bytes), or None."""
    try:
        head = read_head(root / PLAN, 4096).decode("utf-8", "replace")
    except OSError:
        return None
    match = _PLAN_OWNER.match(head)
    try:
        return json.loads(match.group(1)) if match else None
    except ValueError:
        return None


class FolderUnusable(UserError):
    """The campaign's folder is gone or no longer its own: what the store holds is all there is."""


def check_folder(root: Path, name: str) -> None:
    """The folder of the stored campaign `name` is there and still its own; else FolderUnusable,
    before anything reads it or changes a stored status."""
    kept = f"the stored results are kept (`wirewise results --campaign {name}`)"
    forget = f"`wirewise campaign forget {name}` removes the campaign's records"
    if not root.is_dir():
        raise FolderUnusable(f"campaign folder {root} is missing; {kept}; {forget}")
    owner = plan_owner(root)
    if owner != name:
        what = f"holds campaign {owner!r}'s {PLAN}" if owner else f"has no {PLAN} of campaign {name!r}"
        raise FolderUnusable(f"campaign folder {root} {what}; {kept}; {forget}")
    if not (root / TASKS).is_dir():
        raise FolderUnusable(f"campaign folder {root} has lost its {TASKS}/ folder; {kept}; {forget}")


def missing_task_specs(root: Path, task_ids) -> list[str]:
    """The tasks among `task_ids` whose spec.json is gone (a run needs it)."""
    folder = CampaignFolder(root)
    return [task_id for task_id in task_ids if not folder.task_spec(task_id).is_file()]


def read_plan_node(root: Path) -> dict[str, Any]:
    """The node the campaign was planned on (plan.json's "node"; {} for CPU ranks)."""
    try:
        doc = json.loads(read_bounded(root / PLAN, MAX_RESULT_BYTES))
    except (OSError, ValueError, RecursionError) as exc:
        raise UserError(f"campaign folder {root}: cannot read its {PLAN} ({getattr(exc, 'strerror', None) or exc})") from None
    return (doc.get("node") if isinstance(doc, dict) else None) or {}


def _latest_attempt(names: list[str]) -> int:
    """The highest N of attemptN folders and attemptN.claim files."""
    numbers = (name[7:].removesuffix(CLAIM) for name in names if name.startswith("attempt"))
    return max((int(n) for n in numbers if n.isdigit()), default=0)


def _claim_owner(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None
