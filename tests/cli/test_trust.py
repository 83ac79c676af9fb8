"""Careless and hostile input to the surfaces of issue 22 (campaigns, place, estimate, results,
compare, report, doctor, collect), each through the console script as a real process: a
campaign that survives its folder, bounds said before anything is expanded or read, figures
that are measurements, times in UTC, CSV a spreadsheet cannot execute, and one line with exit
code 2 wherever there was a traceback. Every subprocess has a timeout: a hang fails the test."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from wirewise.orchestrator.campaign.folder import CampaignFolder

from tests.conftest import FIXTURES, WIREWISE, wirewise, wirewise_json

NVL_QUADS = FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads-named.txt"
QUICK = 60  # seconds: every refusal here is immediate; a hang or an endless read fails instead


def one_line_exit_2(proc, expected: str) -> None:
    """Exit 2 and one error line (a note before it, such as "the tasks run as CPU ranks", aside)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith("wirewise: note: ")]
    assert len(lines) == 1 and lines[0].startswith("wirewise: error: ") and expected in lines[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr + proc.stdout


def result_file(path: Path, *records: dict, topology: dict | None = None) -> Path:
    """A result.json as wirewise.jobs.supervise writes one: {"records": [...], "topology": ...}."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"records": list(records), "topology": topology}))
    return path


def collective(**fields) -> dict:
    return {"workload": "collective", "op": "all_reduce", "bytes": 1024, "count": 256, "gpu_count": 2, "gpus": [0, 1],
            "node": "n1", "fingerprint": "f" * 64, "time_us": 10.0, "algbw_gbs": 1.0, "busbw_gbs": 1.0, **fields}


def db_rows(db_url: str, sql: str) -> list[tuple]:
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
        return conn.execute(sql).fetchall()


# -- a finished local campaign, copied for each test that takes it apart ---------------------------
SPEC = {
    "name": "trust-c",
    "workloads": [{"collectives": {"ops": ["all_reduce"], "min_bytes": "1K", "max_bytes": "1K", "iters": 1, "warmup": 0}}],
    "axes": {"gpus": [2], "repeats": 2},
    "target": {"executor": "local", "timeout_s": 120},
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One local campaign of two tasks on CPU ranks, run once (10 s): its database and folder."""
    root = tmp_path_factory.mktemp("finished")
    spec = root / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    db = f"sqlite:///{root / 'wirewise.db'}"
    wirewise("campaign", "submit", str(spec), "--db", db, env={"WIREWISE_RUNS": str(root / "runs")}, check=True)
    return root


@pytest.fixture
def campaign(finished, tmp_path):
    """A copy of the finished campaign: (db URL, its folder, the spec file)."""
    with sqlite3.connect(finished / "wirewise.db") as source, sqlite3.connect(tmp_path / "wirewise.db") as copy:
        source.backup(copy)  # the WAL's pages too, which a file copy would miss
    folder = tmp_path / "runs" / "campaigns" / SPEC["name"]
    shutil.copytree(finished / "runs" / "campaigns" / SPEC["name"], folder)
    db = f"sqlite:///{tmp_path / 'wirewise.db'}"
    with sqlite3.connect(tmp_path / "wirewise.db") as conn:
        conn.execute("UPDATE campaigns SET folder = ?", (str(folder),))
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    return db, folder, spec


def campaign_counts(db: str) -> dict:
    return {c["name"]: c["counts"] for c in wirewise_json("campaign", "list", "--db", db, timeout=QUICK)}


# -- 22.3: a missing folder is one line, and stored statuses stay ---------------------------------
def test_a_deleted_folder_keeps_the_stored_statuses_and_every_command_says_so(campaign):
    db, folder, _ = campaign
    shutil.rmtree(folder)
    for verb in ("collect", "resume"):
        one_line_exit_2(wirewise("campaign", verb, "trust-c", "--db", db, timeout=QUICK),
                        f"campaign folder {folder} is missing; the stored results are kept")
    one_line_exit_2(wirewise("campaign", "status", "trust-c", "--watch", "--db", db, timeout=QUICK),
                    f"campaign folder {folder} is missing")
    assert campaign_counts(db) == {"trust-c": {"ok": 2}}
    # status shows what the store holds, and says the folder is gone (issue 29: it refused)
    proc = wirewise("campaign", "status", "trust-c", "--json", "--db", db, timeout=QUICK)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["counts"] == {"ok": 2} and f"campaign folder {folder} is missing" in shown["note"]
    assert proc.stderr == f"wirewise: note: {shown['note']}\n"
    table = wirewise("campaign", "status", "trust-c", "--db", db, timeout=QUICK)
    assert table.returncode == 0 and "ok" in table.stdout and "is missing" in table.stderr


def test_a_deleted_tasks_folder_uses_up_no_attempt(campaign):
    db, folder, _ = campaign
    shutil.rmtree(folder / "tasks")
    for _ in range(2):
        one_line_exit_2(wirewise("campaign", "resume", "trust-c", "--db", db, timeout=QUICK), "has lost its tasks/ folder")
    assert {attempts for (attempts,) in db_rows(db, "SELECT attempts FROM tasks")} == {1}


def test_a_task_folder_deleted_after_it_finished_keeps_its_status(campaign):
    db, folder, _ = campaign
    gone, failed = sorted(os.listdir(folder / "tasks"))
    shutil.rmtree(folder / "tasks" / gone)
    assert wirewise_json("campaign", "status", "trust-c", "--db", db)["counts"] == {"ok": 2}
    # a task to retry whose spec.json is gone is said before an attempt is counted
    (folder / "tasks" / failed / "outcome.json").write_text(json.dumps({"status": "failed", "attempt": 1}))
    CampaignFolder(folder).name_outcome(failed, "failed", 1)  # as a finished run names it, after its outcome.json
    (folder / "tasks" / failed / "spec.json").unlink()
    one_line_exit_2(wirewise("campaign", "resume", "trust-c", "--db", db, timeout=QUICK), "has lost the spec.json of 1 task(s)")
    assert {attempts for (attempts,) in db_rows(db, "SELECT attempts FROM tasks")} == {1}


def test_a_folder_under_a_file_records_nothing_and_the_spec_can_be_submitted_again(tmp_path, db_url):
    blocker = tmp_path / "a-file"
    blocker.write_text("mine")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({**SPEC, "target": {**SPEC["target"], "folder": str(blocker / "campaign")}}))
    one_line_exit_2(wirewise("campaign", "submit", str(spec), "--db", db_url, timeout=QUICK),
                    f"cannot make campaign folder {blocker / 'campaign'}: Not a directory")
    assert wirewise_json("campaign", "list", "--db", db_url) == []
    assert blocker.read_text() == "mine"
    assert db_rows(db_url, "SELECT count(*) FROM tasks") == [(0,)]  # nothing left half-recorded: the name is free
    one_line_exit_2(wirewise("campaign", "status", "trust-c", "--db", db_url, timeout=QUICK), "no campaign named 'trust-c'")


def test_forget_keeps_or_removes_the_results_by_choice(campaign):
    db, folder, spec = campaign
    results = len(wirewise_json("results", "--campaign", "trust-c", "--include-cpu", "--db", db))
    assert results > 0
    shutil.rmtree(folder)
    forgot = wirewise_json("campaign", "forget", "trust-c", "--db", db, timeout=QUICK)
    assert forgot["tasks_removed"] == 2 and forgot["results_kept"] and forgot["results_removed"] == 0
    assert campaign_counts(db) == {}
    assert len(wirewise_json("results", "--campaign", "trust-c", "--include-cpu", "--db", db)) == results
    one_line_exit_2(wirewise("campaign", "forget", "trust-c", "--db", db, timeout=QUICK), "no campaign named 'trust-c'")
    # the same spec is a new campaign again, then forgotten with its results
    wirewise("campaign", "submit", str(spec), "--db", db, env={"WIREWISE_RUNS": str(folder.parents[1])}, check=True)
    assert campaign_counts(db) == {"trust-c": {"ok": 2}}
    forgot = wirewise_json("campaign", "forget", "trust-c", "--remove-results", "--db", db, timeout=QUICK)
    assert forgot["results_removed"] > 0 and not forgot["results_kept"]
    assert db_rows(db, "SELECT count(*) FROM results WHERE campaign = 'trust-c'") == [(0,)]
    assert folder.is_dir()  # the folder is the user's to remove


# -- 22.4: a folder that is not empty, or another campaign's, is refused -------------------------
def test_a_folder_with_the_users_files_is_refused_and_left_as_it_was(tmp_path, db_url):
    mine = "# my own spec, with comments\n" + yaml.safe_dump({**SPEC, "target": {**SPEC["target"], "folder": "."}})
    (tmp_path / "spec.yaml").write_text(mine)
    (tmp_path / "plan.json").write_text('{"mine": true}')
    one_line_exit_2(wirewise("campaign", "submit", "spec.yaml", "--db", db_url, cwd=tmp_path, timeout=QUICK), "is not empty")
    assert (tmp_path / "spec.yaml").read_text() == mine and (tmp_path / "plan.json").read_text() == '{"mine": true}'
    assert wirewise_json("campaign", "list", "--db", db_url) == []


def test_two_campaigns_given_one_folder(campaign):
    db, folder, spec = campaign
    other = dict(SPEC, name="trust-d", axes={"gpus": [3]}, target={**SPEC["target"], "folder": str(folder)})
    spec.write_text(yaml.safe_dump(other))
    before = (folder / "plan.json").read_text()
    one_line_exit_2(wirewise("campaign", "submit", str(spec), "--db", db, timeout=QUICK),
                    f"campaign folder {folder} holds campaign 'trust-c'")
    assert (folder / "plan.json").read_text() == before
    assert campaign_counts(db) == {"trust-c": {"ok": 2}}


def test_a_folder_holding_another_campaigns_plan_is_not_resumed(campaign):
    db, folder, _ = campaign
    plan = json.loads((folder / "plan.json").read_text())
    (folder / "plan.json").write_text(json.dumps({**plan, "campaign": "someone-else"}, indent=1))
    one_line_exit_2(wirewise("campaign", "resume", "trust-c", "--db", db, timeout=QUICK), "holds campaign 'someone-else'")


# -- 22.7: stored strings are text, never rich markup ----------------------------------------------
def test_a_planted_outcome_status_is_not_stored_and_list_still_works(campaign):
    db, folder, _ = campaign
    for task in os.listdir(folder / "tasks"):
        (folder / "tasks" / task / "outcome.json").write_text(json.dumps({"status": "[/]", "attempt": 1}))
    wirewise("campaign", "collect", "trust-c", "--db", db, check=True, timeout=QUICK)
    assert {s for (s,) in db_rows(db, "SELECT status FROM tasks")} == {"ok"}  # read from result.json instead
    db_rows(db, "UPDATE tasks SET status = '[/]'")  # as a database written before the fix holds it
    listed = wirewise("campaign", "list", "--db", db, check=True, timeout=QUICK)
    assert "[/] 2" in listed.stdout


def test_doctor_prints_a_node_named_like_markup(tmp_path, db_url):
    files = [result_file(tmp_path / f"r{i}" / "result.json", collective(node="good", busbw_gbs=100.0, started_at=f"2030-01-0{i + 1}T00:00:00"))
             for i in range(4)]
    files.append(result_file(tmp_path / "bad" / "result.json", collective(node="[/]", busbw_gbs=10.0)))
    wirewise("collect", *map(str, files), "--db", db_url, check=True)
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules: {busbw-below-baseline: {min_bytes: 1K}}\n")  # these records are 1 KiB
    proc = wirewise("doctor", "--rules", str(rules), "--db", db_url, timeout=QUICK)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "[/]" in proc.stdout and "busbw-below-baseline" in proc.stdout


# -- 22.5: two commands on a new database take turns at the first migration ------------------------
def test_two_commands_on_a_new_sqlite_database(tmp_path):
    for i in range(5):
        both_at_once(f"sqlite:///{tmp_path / f'new{i}.db'}")


def test_two_commands_on_a_new_postgresql_database(pg_server):
    for _ in range(3):
        url = pg_server.create_database()
        try:
            both_at_once(url)
        finally:
            pg_server.drop_database(url.rsplit("/", 1)[1])


def both_at_once(url: str) -> None:
    """Two `db upgrade` on a database neither has seen: both migrate it, in turn. (A command
    that only reads creates no SQLite database; tests/cli/test_config.py.)"""
    procs = [subprocess.Popen([WIREWISE, *args, "--db", url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for args in (["db", "upgrade"], ["db", "upgrade"])]
    for proc in procs:
        _, err = proc.communicate(timeout=QUICK)
        assert proc.returncode == 0, err


# -- 22.8: one line and exit 2 where there was a traceback -----------------------------------------
def test_a_closed_pipe_ends_results_quietly(tmp_path, db_url):
    """typer's own exit on a closed pipe passes through wirewise's handlers: with typer 0.29,
    whose vendored click has no Abort, matching them raised AttributeError on any SystemExit."""
    records = [collective(bytes=1024 * (i + 1)) for i in range(3000)]
    wirewise("collect", str(result_file(tmp_path / "result.json", *records)), "--db", db_url, check=True)
    for output in ("--csv", "--json"):
        proc = subprocess.Popen([WIREWISE, "results", output, "--db", db_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.readline()
        proc.stdout.close()  # as `| head -1` does
        err = proc.stderr.read().decode()
        proc.wait(timeout=QUICK)
        assert err == "" and proc.returncode in (0, 1), (output, proc.returncode, err)


HOSTILE_OPTIONS = {
    "run --folder '' (typer reads it as the current folder)": (["run", "-k", "1", "--folder", "", "--", "true"],
                                                              "--folder '': give a folder"),
    "--since an age past any date": (["results", "--since", "999999999999d"], "an age is at most"),
    "--since before year 1 in UTC": (["results", "--since", "0001-01-01T00:00+01:00"], "out of range in UTC"),
    "--since after year 9999 in UTC": (["compare", "node:a", "node:b", "--since", "9999-12-31T23:59-01:00"], "out of range in UTC"),
    "--since on report": (["report", "--out", "r", "--since", "999999999999d"], "an age is at most"),
    "--bytes past 64 bits": (["results", "--bytes", "99999999999999999999"], "at most 9223372036854775807 bytes"),
    "--bytes of 400 nines": (["results", "--bytes", "9" * 400], "at most 9223372036854775807 bytes"),
    "--gpus past any cluster": (["results", "--gpus", "99999999999999999999"], "--gpus 99999999999999999999: give a GPU count"),
    "--interval inf": (["campaign", "status", "x", "--watch", "--interval", "inf"], "--interval inf: give seconds from 1 to"),
    "--placement typo": (["results", "--placement", "packd"], "--placement 'packd': choose one of"),
    "--transport typo": (["results", "--transport", "pcei"], "--transport 'pcei': choose one of"),
    "--strategy typo": (["results", "--strategy", "zero4"], "--strategy 'zero4': choose one of"),
    "--op typo": (["compare", "node:a", "node:b", "--op", "allreduce"], "--op 'allreduce': choose one of"),
    "compare a side with itself": (["compare", "campaign:x", "campaign:x"], "with itself"),
    "report --out ''": (["report", "--out", ""], "--out '': give a folder"),
    "estimate --gpu-mem-gb nan": (["estimate", "-m", "mistral-7b", "--gpu-mem-gb", "nan"], "--gpu-mem-gb must be positive"),
    "place --seq-len 0": (["place", "-k", "2", "-f", str(NVL_QUADS), "-m", "mistral-7b", "--seq-len", "0"], "--seq-len 0: give a whole number"),
    "place --gpu-mem-gb inf": (["place", "-k", "2", "-f", str(NVL_QUADS), "-m", "mistral-7b", "--gpu-mem-gb", "inf"], "--gpu-mem-gb must be positive"),
    "estimate --gpus 10^20": (["estimate", "-m", "mistral-7b", "--gpus", "99999999999999999999"], "at most 65536"),
    # found by tests/cli/hostile_pass.py
    "place --free of 5,000 zeros (a 5,000-digit int)": (["place", "-k", "2", "-f", str(NVL_QUADS), "--free", "0" * 5000],
                                                         "2 GPUs asked for but only 1 free (0)"),
    "estimate -s ''": (["estimate", "-m", "tiny-mistral", "-s", ""], "unknown strategy ''"),
    "results --csv --json": (["results", "--csv", "--json"], "--json and --csv: give one of them"),
    "topo save --node with a newline": (["topo", "save", "-f", str(NVL_QUADS), "--node", "gpu01\n#"], "not a Slurm host name"),
    "import nccl-tests --node ''": (["import", "nccl-tests", str(FIXTURES / "nccl-tests" / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt"),
                                     "--node", ""], "--node '': not a Slurm host name"),
}


@pytest.mark.parametrize("case", HOSTILE_OPTIONS)
def test_hostile_options_are_one_line(case, tmp_path, db_url):
    args, expected = HOSTILE_OPTIONS[case]
    one_line_exit_2(wirewise(*args, "--db", db_url, cwd=tmp_path, timeout=QUICK), expected)
    assert not (tmp_path / "r").exists()


def test_the_op_filter_takes_imported_nccl_tests_ops(db_url):
    """An op only nccl-tests measures (sendrecv) is a name, not a typo."""
    wirewise("db", "upgrade", "--db", db_url, check=True)  # a read creates no database
    assert wirewise_json("results", "--op", "sendrecv", "--db", db_url) == []


BAD_SPECS = {
    "axes.repeats true (YAML's boolean, not a count)": (yaml.safe_dump({**SPEC, "axes": {"repeats": True}}).encode(),
                                                         "axes.repeats: Input should be a valid integer"),
    "iterations past any run": (yaml.safe_dump({**SPEC, "workloads": [{"collectives": {"ops": ["all_reduce"], "iters": 10**20}}]}).encode(),
                                "less than or equal to 1000000000"),
    "not UTF-8": (b"name: \xff\xfe\n", "not UTF-8 text (byte 6 is 0xff)"),
    "YAML nested 5,000 deep": (b"name: x\nworkloads: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested deeper than 100 levels"),
    "axes.repeats 10^23": (yaml.safe_dump({**SPEC, "axes": {"repeats": 10**23}}).encode(), "axes.repeats: Input should be less than or equal to 10000"),
    "a grid past the task bound": (yaml.safe_dump({**SPEC, "axes": {"gpus": list(range(1, 17)), "repeats": 10000}}).encode(),
                                   "asks for 160,000 tasks, more than the 100,000"),
    "timeout_s .inf": (yaml.safe_dump({**SPEC, "target": {"timeout_s": float("inf")}}).encode(), "target.timeout_s: Input should be a finite number"),
    "time past a year": (yaml.safe_dump({**SPEC, "target": {"time": "99999999999999999999"}}).encode(), "target.time: "),
    "time of 400 days": (yaml.safe_dump({**SPEC, "target": {"time": "400-00:00:00"}}).encode(), "longer than 365 days"),
    "time 0 (Slurm: no limit)": (yaml.safe_dump({**SPEC, "target": {"time": "0:00"}}).encode(), "give at least a minute"),
    # JSON is YAML too, and json writes 100,000 items in milliseconds where yaml.safe_dump takes 1.4 s
    "a GPU count listed twice": (json.dumps({**SPEC, "axes": {"gpus": [2] * 100_000}}).encode(), "axes.gpus: 2 is listed twice"),
    "a NUL (PyYAML's reason spans two lines)": (b"name: a\x00b\n", "control characters are not allowed in"),
    "a placement past the largest GPU index": (yaml.safe_dump({**SPEC, "axes": {"placement": [[5000]]}}).encode(),
                                               "GPU index 5000 is past the largest a node has (1023)"),
    "a node list past 65,536 names": (yaml.safe_dump({**SPEC, "target": {"nodelist": "gpu[01-99999999999]"}}).encode(),
                                      "target.nodelist: 'gpu[01-99999999999]' names more than 65,536 nodes"),
    "a model 10,000 characters long": (yaml.safe_dump({**SPEC, "workloads": [{"train": {"models": ["x" * 10_000], "strategies": ["ddp"]}}]}).encode(),
                                       "unknown model 'xxxxx"),
}


@pytest.mark.parametrize("case", BAD_SPECS)
def test_bad_specs_are_one_line(case, tmp_path, db_url):
    text, expected = BAD_SPECS[case]
    (tmp_path / "spec.yaml").write_bytes(text)
    one_line_exit_2(wirewise("campaign", "plan", str(tmp_path / "spec.yaml"), "--db", db_url, timeout=QUICK), expected)


def test_many_cpu_ranks_are_skipped_with_the_bound(tmp_path, db_url):
    """Without a GPU, `--gpus 10^20` is no longer 10^20 CPU ranks: the count is bounded, and a
    count past the CPU-rank bound is a skipped entry saying it."""
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(SPEC))
    one_line_exit_2(wirewise("campaign", "plan", str(tmp_path / "spec.yaml"), "--gpus", "99999999999999999999", "--db", db_url,
                             timeout=QUICK), "past the largest GPU count this takes (65536)")
    plan = wirewise_json("campaign", "plan", str(tmp_path / "spec.yaml"), "--gpus", "1000", "--db", db_url,
                         env={"CUDA_VISIBLE_DEVICES": ""})
    if plan["node"] is None:  # CPU ranks here (a GPU machine plans on its GPUs instead)
        assert plan["tasks"] == [] and "at most 256" in plan["skipped"][0]["reason"]


def test_the_plan_reads_no_endless_topology_file(tmp_path, db_url):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(SPEC))
    for endless in ("/dev/zero", str(tmp_path / "fifo")):
        one_line_exit_2(wirewise("campaign", "plan", str(tmp_path / "spec.yaml"), "--topology-file", endless, "--db", db_url,
                                 timeout=QUICK), "not a regular file")
    big = tmp_path / "big.txt"
    big.write_text(NVL_QUADS.read_text() + " " * (2 * 2**20))
    one_line_exit_2(wirewise("topo", "show", "--from-file", str(big), timeout=QUICK), "larger than 1 MiB")


BAD_RESULT_FILES = {
    "JSON nested 100,000 deep": (lambda p: p.write_text('{"records": ' + "[" * 100_000 + "]" * 100_000 + "}"), "nested deeper than 100 levels"),
    "bytes 10^30": (lambda p: result_file(p, collective(bytes=10**30)), "bytes 1000000000000000000000000000000 does not fit a 64-bit integer"),
    "count 2^63": (lambda p: result_file(p, collective(count=2**63)), "count 9223372036854775808 does not fit a 64-bit integer"),
    "gpu_count 10^20": (lambda p: result_file(p, collective(gpu_count=10**20)), "gpu_count 100000000000000000000 does not fit"),
    "busbw NaN": (lambda p: p.write_text(json.dumps({"records": [collective(busbw_gbs=float("nan"))]})), "busbw_gbs nan is not a measurement"),
    "time Infinity": (lambda p: p.write_text(json.dumps({"records": [collective(time_us=float("inf"))]})), "time_us inf is not a measurement"),
    "tokens -Infinity": (lambda p: p.write_text(json.dumps({"records": [{"workload": "train", "tokens_per_s": float("-inf")}]})),
                         "tokens_per_s -inf is not a measurement"),
    "negative algbw": (lambda p: result_file(p, collective(algbw_gbs=-1.0)), "algbw_gbs -1.0 is negative"),
    "negative peak memory": (lambda p: result_file(p, {"workload": "train", "peak_mem_bytes": [1, -5]}), "peak_mem_bytes -5 is negative"),
    "a newer schema's field": (lambda p: result_file(p, collective(), collective(joules=3.0)),
                               "records[1].joules: a field this wirewise does not know (written by a newer wirewise? upgrade it)"),
    "a bad status": (lambda p: result_file(p, collective(status="[/]")), "records[0].status: Input should be"),
    "a symlink to /dev/zero": (lambda p: p.symlink_to("/dev/zero"), "not a regular file"),
    "a FIFO": (lambda p: os.mkfifo(p), "not a regular file"),
    "a dangling symlink": (lambda p: p.symlink_to(p.parent / "gone"), "result.json': No such file or directory"),
}


@pytest.mark.parametrize("case", BAD_RESULT_FILES)
def test_bad_result_files_store_nothing(case, tmp_path, db_url):
    make, expected = BAD_RESULT_FILES[case]
    good = result_file(tmp_path / "a" / "result.json", collective())
    bad = tmp_path / "b" / "result.json"
    bad.parent.mkdir()
    make(bad)
    one_line_exit_2(wirewise("collect", str(bad), "--db", db_url, timeout=QUICK), expected)
    assert not Path(db_url.removeprefix("sqlite:///")).exists() or db_rows(db_url, "SELECT count(*) FROM results") == [(0,)]
    found = wirewise("collect", str(tmp_path), "--db", db_url, timeout=QUICK)  # after a good file, in a folder
    if case == "a dangling symlink":  # a folder search does not see it (pathlib's glob skips it)
        assert found.returncode == 0 and db_rows(db_url, "SELECT count(*) FROM results") == [(1,)]
        return
    one_line_exit_2(found, expected)
    stored = db_rows(db_url, "SELECT count(*) FROM results") if Path(db_url.removeprefix("sqlite:///")).exists() else [(0,)]
    assert stored == [(1,)] and "(1 file(s) before it are stored)" in found.stderr or stored == [(0,)]
    assert good.exists()


def sparse_file(path: Path, size: int) -> None:
    """A file of `size` bytes that takes no disk (a hole)."""
    with open(path, "wb") as fh:
        fh.truncate(size)


# A bad JSON file a person names, and the words its refusal starts with (`what` it is, the file).
BAD_JSON_FILES = {
    "a FIFO": (lambda p, bound: os.mkfifo(p), "cannot read {what} '{path}': not a regular file: a FIFO, a device or a socket"),
    "past the bound": (lambda p, bound: sparse_file(p, bound + 1), "cannot read {what} '{path}': larger than "),
    "not JSON": (lambda p, bound: p.write_text("{"), "{path}: not JSON (Expecting property name enclosed in double quotes: "),
    "nested 100,000 deep": (lambda p, bound: p.write_text("[" * 100_000 + "]" * 100_000),
                            "{path}: nested deeper than 100 levels, the bound for a document; "),
}


@pytest.mark.parametrize("case", BAD_JSON_FILES)
def test_every_json_file_a_person_names_is_refused_in_the_same_words(case, tmp_path):
    """A result file (`collect`), a baselines file (`baseline import`) and a model config
    (`--model`) are read by one function (wirewise.limits.read_json): a bad one is one line
    naming the file, in the same words whichever reads it (in-process: the commands' own
    refusals of these files are the tests above and tests/report/test_rules_and_baselines.py)."""
    from wirewise.errors import UserError
    from wirewise.limits import MAX_CONFIG_BYTES, MAX_RESULT_BYTES
    from wirewise.models import check_model_name
    from wirewise.orchestrator.health.baseline import read_file
    from wirewise.orchestrator.record.ingest import read_result_file

    make, said = BAD_JSON_FILES[case]
    readers = (("result file", read_result_file, MAX_RESULT_BYTES, UserError),
               ("baselines file", read_file, MAX_RESULT_BYTES, UserError),
               ("model config", check_model_name, MAX_CONFIG_BYTES, ValueError))  # ValueError: a field validator's
    for what, read, bound, error in readers:
        path = tmp_path / what.replace(" ", "-") / "bad.json"
        path.parent.mkdir()
        make(path, bound)
        if case == "a FIFO" and read is check_model_name:  # not a file: --model takes it as a name
            with pytest.raises(ValueError, match="unknown model"):
                read(str(path))
            continue
        with pytest.raises(error) as raised:
            read(str(path))
        message = str(raised.value)
        assert message.startswith(said.format(what=what, path=path)) and "\n" not in message, message


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_text_wider_than_the_store_keeps_is_refused_on_both_databases(backend, tmp_path, db_url, request):
    """PostgreSQL refuses a node name past its column's 255 characters (a traceback before);
    SQLite kept it: both now refuse it alike, naming the field and the width."""
    url = db_url if backend == "sqlite" else request.getfixturevalue("pg_url")
    bad = result_file(tmp_path / "result.json", collective(node="n" * 300))
    one_line_exit_2(wirewise("collect", str(bad), "--db", url, timeout=QUICK),
                    "records[0]: node of 300 characters, longer than the 255 the store keeps")


def test_a_folder_named_result_json_is_searched_not_read(tmp_path, db_url):
    result_file(tmp_path / "run" / "result.json" / "attempt1" / "result.json", collective())
    assert wirewise_json("collect", str(tmp_path / "run"), "--db", db_url)["new_records"] == 1


def test_non_finite_figures_already_stored_print_as_json_null(tmp_path, db_url):
    wirewise("collect", str(result_file(tmp_path / "result.json", collective())), "--db", db_url, check=True)
    db_rows(db_url, "UPDATE results SET time_us = 1e999")  # as a database written before the store refused them
    out = wirewise("results", "--json", "--db", db_url, check=True).stdout

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    rows = json.loads(out, parse_constant=refuse)
    assert rows[0]["time_us_median"] is None


def test_a_report_with_a_model_name_matplotlib_would_read_as_tex(tmp_path, db_url):
    """Names with two '$' were mathtext; 'cfg/a.json' and 'cfg-a.json' shared one figure file."""
    records = [{"workload": "train", "model": model, "strategy": "ddp", "gpu_count": 2, "gpus": [0, 1], "world_size": 2,
                "tokens_per_s": 100.0, "step_time_s": 1.0, "peak_mem_bytes": [2**30, 2**30], "node": "n1"}
               for model in ("$\\nosuchmacro{$", "cfg/a.json", "cfg-a.json")]
    wirewise("collect", str(result_file(tmp_path / "result.json", *records)), "--db", db_url, check=True)
    written = wirewise_json("report", "--out", str(tmp_path / "report"), "--db", db_url, timeout=120)
    files = [figure["file"] for figure in written["figures"] if "strategies" in figure["file"]]
    assert len(files) == len(set(files)) == 3
    page = (tmp_path / "report" / "index.html").read_text()
    assert all(f'id="{Path(f).stem}"' in page for f in files)


def test_report_out_where_it_cannot_write(tmp_path, db_url):
    wirewise("collect", str(result_file(tmp_path / "result.json", collective())), "--db", db_url, check=True)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    one_line_exit_2(wirewise("report", "--out", str(tmp_path / "dangling"), "--db", db_url, timeout=QUICK), "which does not exist")
    (tmp_path / "taken" / "index.html").mkdir(parents=True)
    one_line_exit_2(wirewise("report", "--out", str(tmp_path / "taken"), "--db", db_url, timeout=QUICK), "index.html there is a folder")
    one_line_exit_2(wirewise("report", "--out", "/proc/wirewise-report", "--db", db_url, timeout=QUICK), "cannot write the report there")


def test_long_values_are_shown_by_their_ends(tmp_path, db_url):
    """A 10,000-character name or a 5,000-digit number in an error stays one readable line."""
    wirewise("db", "upgrade", "--db", db_url, check=True)  # a read creates no database
    for args in (["estimate", "-m", "x" * 10_000], ["results", "--bytes", "9" * 5000, "--db", db_url],
                 ["campaign", "status", "n" * 10_000, "--db", db_url]):
        proc = wirewise(*args, timeout=QUICK)
        one_line_exit_2(proc, "characters)...")
        assert len(proc.stderr) < 500


def test_paths_the_system_refuses_are_one_line(tmp_path, db_url):
    wirewise("collect", str(result_file(tmp_path / "result.json", collective())), "--db", db_url, check=True)
    one_line_exit_2(wirewise("report", "--out", str(tmp_path / ("r" * 300)), "--db", db_url, timeout=QUICK), "File name too long")
    for url in ("sqlite:////dev/zero", f"sqlite:///{tmp_path}"):
        one_line_exit_2(wirewise("results", "--db", url, timeout=QUICK), "is not a regular file")


def test_model_configs_transformers_refuses_are_one_line(tmp_path):
    (tmp_path / "up.json").write_text(json.dumps({"model_type": "../../etc", "hidden_size": 8}))
    (tmp_path / "short.json").write_text(json.dumps({"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 2,
                                                     "num_attention_heads": 4, "intermediate_size": 128}))
    for args in (["estimate", "-m"], ["place", "-k", "2", "-f", str(NVL_QUADS), "-m"]):
        proc = wirewise(*args, str(tmp_path / "up.json"), timeout=QUICK, cwd=tmp_path)
        one_line_exit_2(proc, "transformers cannot build model_type '../../etc'")
        assert len(proc.stderr) < 400
        one_line_exit_2(wirewise(*args, str(tmp_path / "short.json"), timeout=QUICK, cwd=tmp_path), "its config has no 'vocab_size'")
    (tmp_path / "negative.json").write_text(json.dumps({"model_type": "mistral", "hidden_size": -64, "num_hidden_layers": 2,
                                                        "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}))
    one_line_exit_2(wirewise("estimate", "-m", str(tmp_path / "negative.json"), timeout=QUICK), "must be positive whole numbers")


# -- 22.11: times are stored in UTC -------------------------------------------------------------
def test_an_offset_is_applied_before_storing(tmp_path, db_url):
    record = collective(started_at="2030-01-01T12:00:00+05:00", ended_at="2030-01-01T12:00:01+05:00")
    wirewise("collect", str(result_file(tmp_path / "result.json", record)), "--db", db_url, check=True)
    assert wirewise_json("results", "--since", "2030-01-01T07:00", "--db", db_url)[0]["count"] == 1
    assert wirewise_json("results", "--since", "2030-01-01T07:01", "--db", db_url) == []
    assert wirewise_json("results", "--since", "2030-01-01T12:00+05:00", "--db", db_url)[0]["count"] == 1


# -- 22.12: Ctrl-C during a local campaign exits 130 ---------------------------------------------
def test_ctrl_c_during_a_local_submit_exits_130(tmp_path, db_url):
    long = {**SPEC, "workloads": [{"collectives": {"ops": ["all_reduce"], "min_bytes": "1M", "max_bytes": "1M",
                                                   "iters": 1_000_000, "warmup": 0}}], "axes": {"gpus": [2]}}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(long))
    runs = tmp_path / "runs"
    proc = subprocess.Popen([WIREWISE, "campaign", "submit", str(tmp_path / "spec.yaml"), "--db", db_url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "WIREWISE_RUNS": str(runs)})
    deadline = time.monotonic() + 120
    while not list(runs.glob("campaigns/*/tasks/*/attempt1/progress.jsonl")):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole foreground group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert campaign_counts(db_url) == {"trust-c": {"cancelled": 1}}


# -- 22.13: CSV that a spreadsheet reads as text ---------------------------------------------------
def test_csv_cells_that_look_like_formulas_are_inert(tmp_path, db_url):
    hostile = ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "a\"b"]
    records = [collective(node=name, campaign=name) for name in hostile]
    wirewise("collect", str(result_file(tmp_path / "result.json", *records)), "--db", db_url, check=True)
    out = wirewise("results", "--csv", "--group-by", "node,campaign", "--db", db_url, check=True).stdout
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(out)))
    assert sorted(row["node"] for row in rows) == sorted("'" + h if h[0] in "=+-@\t" else h for h in hostile)
    for line in out.splitlines()[1:]:
        assert all(cell.startswith('"') or cell[:1].isdigit() for cell in line.split(",") if cell)


@pytest.mark.parametrize(("args", "expected"), [
    (["launch", "--dry-run", "--cpu", "--model", "tiny-mistral", "--gpus", "99999999999999999999", "--", "train.py"],
     "--gpus 99999999999999999999: give at least 1 GPU, at most 65536"),  # was an OverflowError traceback
    (["run", "--whole-node", "-k", "2", "-f", str(NVL_QUADS), "--gpu-mem-gb", "nan", "--", "true"],
     "--gpu-mem-gb must be positive"),  # was accepted: run without --model never read it
    (["fleet", "drain", "--apply", "--beyond-guardrails", "99999999999999999999"],
     "is not in the range 0<=x<=65536"),  # was accepted: "nothing to do"
])
def test_options_found_by_the_hostile_pass(args, expected, tmp_path, db_url):
    one_line_exit_2(wirewise(*args, cwd=tmp_path, env={"WIREWISE_DB": db_url}, timeout=QUICK), expected)


def test_a_long_log_line_without_spaces_is_read_in_linear_time(tmp_path, db_url):
    """nccl-tests' failure pattern backtracked over each start of such a line: 100 KB took
    minutes (the timeout fails the test); now it is read at once and refused as no log."""
    log = tmp_path / "deep.log"
    log.write_text("[" * 200_000)
    one_line_exit_2(wirewise("import", "nccl-tests", str(log), "--db", db_url, timeout=QUICK), "no nccl-tests result rows found")


def test_the_fixtures_json_lines_result_files_are_collected(tmp_path, db_url):
    """Issue 29: collect refused the JSON-lines files of tests/fixtures/measured-2xh200 (one result
    record per line, as stored). Each line is a record; a bad line is named by its number, and
    then the file stores nothing."""
    measured = FIXTURES / "measured-2xh200"
    lines = (measured / "wirewise-results.jsonl").read_text().splitlines()
    done = wirewise_json("collect", str(measured / "wirewise-results.jsonl"), "--db", db_url)
    ids = {json.loads(line)["record_id"] for line in lines}
    assert done["records"] == len(lines) and db_rows(db_url, "SELECT count(*) FROM results") == [(len(ids),)]
    one = tmp_path / "one.jsonl"
    one.write_text(lines[0] + "\n")
    assert wirewise_json("collect", str(one), "--db", db_url)["records"] == 1  # one line: one record
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([lines[0], json.dumps({**json.loads(lines[1]), "record_id": "new", "bytes": -1})]) + "\n")
    one_line_exit_2(wirewise("collect", str(broken), "--db", db_url, timeout=QUICK), "broken.jsonl: ")
    assert db_rows(db_url, "SELECT count(*) FROM results WHERE record_id = 'new'") == [(0,)]
