"""Issue 10 item 3: a finished run is never lost to a busy database. The run ends while another
process holds SQLite's write lock: wirewise waits ($WIREWISE_DB_WAIT_S, shortened here), then
says in one line where the result file is, and `wirewise collect` stores it later."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time

from tests.conftest import WIREWISE, wirewise, wirewise_json


def test_a_run_the_database_cannot_take_is_kept_and_collected_later(tmp_path, db_url):
    wirewise("db", "upgrade", "--db", db_url, check=True)
    runs = tmp_path / "runs"
    env = {**os.environ, "WIREWISE_RUNS": str(runs), "WIREWISE_DB_WAIT_S": "3"}
    args = ["bench", "collectives", "--backend", "gloo", "--nproc", "2", "--ops", "all_reduce", "-b", "1M", "-e", "1M",
            "--iters", "200", "--warmup", "1", "--db", db_url]
    run = subprocess.Popen([WIREWISE, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(runs.glob("*/progress.jsonl")):  # the run is under way: the store was opened
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()
        time.sleep(0.05)
    lock = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None, timeout=30)
    lock.execute("BEGIN IMMEDIATE")  # another writer holds the database for the rest of the run
    try:
        _out, err = run.communicate(timeout=300)
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert run.returncode == 2, err
    [result_file] = runs.glob("*/result.json")
    assert err.strip().splitlines()[-1] == (
        f"wirewise: error: the database stayed busy for 3 s; the results are safe in {result_file}: "
        f"store them later with `wirewise collect {result_file}`")
    collected = wirewise_json("collect", str(result_file), "--db", db_url)
    assert collected["new_records"] == 1 and collected["statuses"] == {"ok": 1}
    assert wirewise_json("collect", str(runs), "--db", db_url)["new_records"] == 0
