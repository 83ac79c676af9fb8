"""A campaign through the local executor, as `make demo` runs it: CPU ranks (gloo) as real
processes, results in a real SQLite file, then status, collect, resume and list."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import yaml

from tests.conftest import wirewise, wirewise_json

SWEEP = {"ops": ["all_reduce", "all_gather"], "min_bytes": "4K", "max_bytes": "8K", "iters": 2, "warmup": 1, "check": True}


def test_local_campaign_end_to_end(tmp_path, db_url):
    # A config transformers reads but the benchmark cannot train (an encoder-decoder): its task
    # passes the plan's checks and fails on the ranks. (A cut --data file is refused at plan time.)
    broken = tmp_path / "t5" / "config.json"
    broken.parent.mkdir()
    broken.write_text('{"model_type": "t5"}')
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "local-t",
        "workloads": [
            {"collectives": SWEEP},
            {"train": {"models": [str(broken)], "strategies": ["ddp"], "batch_size": 2, "steps": 1,
                       "warmup_steps": 1}},
        ],
        "axes": {"gpus": [2], "repeats": 2},
        "target": {"executor": "local", "timeout_s": 300},
    }))
    env = {"WIREWISE_RUNS": str(tmp_path / "runs"), "CUDA_VISIBLE_DEVICES": ""}
    run = lambda *args: wirewise_json(*args, "--db", db_url, env=env, cwd=tmp_path)  # noqa: E731

    submitted = wirewise("campaign", "submit", str(spec), "--executor", "local", "--db", db_url, "--json", env=env, cwd=tmp_path)
    assert submitted.returncode == 0, submitted.stderr
    report = json.loads(submitted.stdout)
    assert report["tasks"] == 4 and report["counts"] == {"ok": 2, "failed": 2}
    folder = Path(report["folder"])
    assert folder == (tmp_path / "runs" / "campaigns" / "local-t")
    _check_layout(folder, report["counts"])

    status = run("campaign", "status", "local-t")
    by_task = {t["task_id"]: t for t in status["tasks"]}
    assert status["done"] and status["counts"] == {"ok": 2, "failed": 2}
    _check_junit(run, tmp_path, by_task)

    rows = sqlite3.connect(db_url.removeprefix("sqlite:///")).execute(
        "SELECT campaign, task_id, status, params, extra, env FROM results").fetchall()
    assert {r[0] for r in rows} == {"local-t"}
    for campaign, task_id, status_, params, extra, env_ in rows:
        params, extra = json.loads(params), json.loads(extra)
        assert params["placement"] == "cpu" and params["transport"] == "default"
        assert extra["attempt"] == 1 and extra["repeat"] in (0, 1)
        assert by_task[task_id]["status"] == status_
    stored = len(rows)

    # collecting again, by campaign or by folder, adds nothing
    assert run("campaign", "collect", "local-t")["new_records"] == 0
    assert run("collect", str(folder))["new_records"] == 0

    # resume runs exactly the two failed tasks again, as attempt 2
    failed = {t for t, s in by_task.items() if s["status"] == "failed"}
    resumed = run("campaign", "resume", "local-t", "--max-attempts", "2")
    assert resumed["resubmitted"] == 2
    after = {t["task_id"]: t for t in run("campaign", "status", "local-t")["tasks"]}
    assert {t for t, s in after.items() if s["attempt"] == 2} == failed
    assert all(after[t]["attempt"] == 1 and after[t]["status"] == "ok" for t in by_task if t not in failed)
    attempts = sqlite3.connect(db_url.removeprefix("sqlite:///")).execute(
        "SELECT json_extract(extra, '$.attempt'), count(*) FROM results GROUP BY 1").fetchall()
    assert dict(attempts) == {1: stored, 2: 2}

    # the attempt limit is reached: nothing more to resubmit, and it says which
    again = run("campaign", "resume", "local-t", "--max-attempts", "2")
    assert again["resubmitted"] == 0 and sorted(again["attempt_limit_reached"]) == sorted(failed)

    listed = run("campaign", "list")
    assert [(c["name"], c["tasks"], c["counts"]) for c in listed] == [("local-t", 4, {"ok": 2, "failed": 2})]


def _check_layout(folder: Path, counts: dict[str, int]) -> None:
    """The folder as operators' scripts and earlier campaigns read it (docs/campaigns.md), names
    written out here so that a change of one in wirewise.runs or the campaign folder fails; and
    each of a run's files is the one wirewise.runs.RunPaths names."""
    from wirewise.runs import RunPaths

    assert {p.name for p in folder.iterdir()} == {"spec.yaml", "plan.json", "tasks", "outcomes"}
    outcomes = sorted(p.name.rsplit(".", 2)[1:] for p in (folder / "outcomes").iterdir())
    assert outcomes == sorted([["1", status] for status, n in counts.items() for _ in range(n)])
    for task in (folder / "tasks").iterdir():
        assert {p.name for p in task.iterdir()} == {"spec.json", "outcome.json", "attempt1.claim", "attempt1"}
        run = task / "attempt1"
        wrote = {p.name for p in run.iterdir()}
        assert {"spec.json", "result.json", "rank0.log", "rank1.log", "rank0.json", "rank1.json"} <= wrote
        paths = RunPaths(run)
        named = {paths.spec, paths.result, *(f(r) for f in (paths.rank_log, paths.rank_outcome) for r in (0, 1))}
        assert {p.name for p in named} <= wrote and all(p.parent == run for p in named)


def _check_junit(run, tmp_path: Path, by_task: dict) -> None:
    """campaign status --junit, read by junitparser as a CI job would: a case per task, the failed
    training tasks failed with the run's error."""
    from junitparser import Failure, JUnitXml

    report = tmp_path / "junit" / "campaign.xml"
    report.parent.mkdir()
    run("campaign", "status", "local-t", "--junit", str(report))
    [suite] = list(JUnitXml.fromfile(str(report)))
    cases = {case.name: case for case in suite}
    assert set(cases) == set(by_task) and (suite.tests, suite.failures, suite.skipped) == (4, 2, 0)
    for task_id, task in by_task.items():
        assert cases[task_id].classname == "local-t"
        if task["status"] == "ok":
            assert cases[task_id].is_passed
        else:
            [failure] = cases[task_id].result
            assert isinstance(failure, Failure) and failure.message == "failed (attempt 1)" and failure.text


def test_unknown_campaign_is_one_line(db_url):
    wirewise("db", "upgrade", "--db", db_url, check=True)  # a database without campaigns (status, a read, creates none)
    for verb in ("status", "collect", "resume", "cancel"):
        proc = wirewise("campaign", verb, "nope", "--db", db_url)
        assert proc.returncode == 2 and proc.stderr.strip() == "wirewise: error: no campaign named 'nope' " \
            "(none stored yet: `wirewise campaign submit SPEC`)", proc.stderr


def test_collect_refuses_what_is_not_there(tmp_path, db_url):
    proc = wirewise("collect", str(tmp_path / "missing"), "--db", db_url)
    assert proc.returncode == 2 and "no such file or folder" in proc.stderr
    junk = tmp_path / "result.json"
    junk.write_text("{}")
    proc = wirewise("collect", str(junk), "--db", db_url)
    assert proc.returncode == 2 and "not a wirewise result file" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_bench_runs_record_their_task(tmp_path, db_url):
    """A `bench` run is a task without a campaign: running the same one twice is one task row
    with two attempts (its id is its key)."""
    args = ["bench", "collectives", "--backend", "gloo", "--nproc", "2", "-b", "1K", "-e", "1K", "--ops", "all_reduce",
            "--iters", "1", "--warmup", "0", "--db", db_url]
    env = {"WIREWISE_RUNS": str(tmp_path / "runs")}
    first = wirewise_json(*args, env=env)
    wirewise_json(*args, env=env)
    tasks = sqlite3.connect(db_url.removeprefix("sqlite:///")).execute(
        "SELECT key, campaign_id, status, attempts, workload FROM tasks").fetchall()
    assert tasks == [(first[0]["task_id"], None, "ok", 2, "collective")]


def test_a_local_campaign_says_each_task_as_it_ends_into_a_pipe(tmp_path, db_url):
    """Issue 31: output people can pipe. Run here with stdout a pipe, each task's outcome is a
    line the moment it ends: the first is read while the second task still runs; the summary
    comes last."""
    import os
    import subprocess

    from tests.conftest import WIREWISE

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "piped", "workloads": [{"collectives": {**SWEEP, "check": False}}],
                                    "axes": {"gpus": [2], "repeats": 2}, "target": {"executor": "local", "timeout_s": 300}}))
    env = {**os.environ, "WIREWISE_RUNS": str(tmp_path / "runs"), "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.Popen([WIREWISE, "campaign", "submit", str(spec), "--executor", "local", "--db", db_url],
                            env=env, cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = proc.stdout.readline()
        still_running = proc.poll() is None
        rest, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert first.startswith("task ") and first.endswith(": ok\n") and still_running, (first, still_running)
    lines = rest.splitlines()
    assert lines[0].startswith("task ") and lines[0].endswith(": ok") and lines[0] != first.strip()
    assert lines[1].startswith("campaign piped: ran 2 task(s) here (ok 2)") and len(lines) == 2, rest
