"""A rank killed or frozen mid-sweep: the run ends within its timeout, says so, leaves no process."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

from sqlalchemy import select

from tests.conftest import WIREWISE


def _rank_pids(runs: Path) -> dict[int, int]:
    """Live (non-zombie) `wirewise.jobs.worker` processes of runs under `runs`, by rank."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"wirewise.jobs.worker" in argv and any(str(runs).encode() in arg for arg in argv) and state != "Z":
            rank = next(int(e[5:]) for e in environ if e.startswith(b"RANK="))
            found[rank] = int(proc.name)
    return found


def _start_long_sweep(runs: Path, db_url: str, timeout_s: int) -> subprocess.Popen:
    """Two gloo ranks on one size with far more iterations than the timeout allows."""
    args = ["bench", "collectives", "--backend", "gloo", "--nproc", "2", "--ops", "all_reduce", "-b", "1M", "-e", "1M",
            "--iters", "10000000", "--timeout", str(timeout_s), "--db", db_url]
    env = {**os.environ, "WIREWISE_RUNS": str(runs)}
    return subprocess.Popen([WIREWISE, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_until_sweeping(runs: Path, proc: subprocess.Popen, limit_s: float = 60) -> dict[int, int]:
    """Both ranks up and rank 0 into the sweep (its first progress event is written)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        pids = _rank_pids(runs)
        if list(runs.glob("*/progress.jsonl")) and len(pids) == 2:
            return pids
        time.sleep(0.1)
    raise AssertionError("the ranks never started sweeping")


def _stored_status(db_url: str):
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.orm import ResultRow

    with Store(db_url).session() as session:
        return session.execute(select(ResultRow.status, ResultRow.error, ResultRow.params)).all()


def test_a_killed_rank_fails_the_run_fast_and_leaves_no_process(tmp_path, db_url):
    runs = tmp_path / "runs"
    proc = _start_long_sweep(runs, db_url, timeout_s=120)
    pids = _wait_until_sweeping(runs, proc)
    os.kill(pids[1], signal.SIGKILL)
    killed_at = time.monotonic()
    _out, err = proc.communicate(timeout=60)
    assert time.monotonic() - killed_at < 20  # the failure grace, not the 120 s timeout
    assert proc.returncode == 1
    assert "collectives run failed: rank 1 ended with signal 9" in err
    assert _rank_pids(runs) == {}
    [(status, error, params)] = _stored_status(db_url)
    assert status == "failed" and error.startswith("rank 1 ended with signal 9") and params["ops"] == ["all_reduce"]


def test_a_frozen_rank_times_out_and_leaves_no_process(tmp_path, db_url):
    runs = tmp_path / "runs"
    timeout_s = 12  # the ranks start and sweep well within it, also on a busy 2-core machine
    started = time.monotonic()
    proc = _start_long_sweep(runs, db_url, timeout_s=timeout_s)
    pids = _wait_until_sweeping(runs, proc)
    os.kill(pids[1], signal.SIGSTOP)  # rank 0 now waits forever inside the all_reduce
    _out, err = proc.communicate(timeout=timeout_s + 60)
    assert time.monotonic() - started < timeout_s + 20
    assert proc.returncode == 1
    assert f"collectives run timeout: timed out after {timeout_s} s" in err
    assert _rank_pids(runs) == {}
    [(status, _error, _params)] = _stored_status(db_url)
    assert status == "timeout"


def test_two_quick_ctrl_c_still_write_the_cancelled_result_and_exit_130(tmp_path, db_url):
    """Issue 10 item 5: a second Ctrl-C about 100 ms after the first cut the clean-up short:
    exit 130 with nothing printed and no result file. A single Ctrl-C exited 1."""
    runs = tmp_path / "runs"
    proc = _start_long_sweep(runs, db_url, timeout_s=120)
    _wait_until_sweeping(runs, proc)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    [result_file] = runs.glob("*/result.json")
    assert json.loads(result_file.read_text())["status"] == "cancelled"
    assert "collectives run cancelled: cancelled (SIGINT)" in err and f"result file {result_file}" in err
    assert _rank_pids(runs) == {}
    [(status, error, _params)] = _stored_status(db_url)
    assert status == "cancelled" and "SIGINT" in error


def _address_space_limit(limit_bytes: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return apply


def test_a_cpu_allocation_failure_is_stored_as_oom(tmp_path, db_url):
    """Issue 10 item 6: `-e 16G` on gloo ranks under a memory limit was stored as `failed`.
    The limit is real (RLIMIT_AS, inherited by the ranks); torch's CPU allocator refuses the
    16 GiB buffer at once, so nothing is touched."""
    args = ["bench", "collectives", "--backend", "gloo", "--nproc", "2", "--ops", "all_reduce", "-b", "16G", "-e", "16G",
            "--db", db_url]
    proc = subprocess.run([WIREWISE, *args], env={**os.environ, "WIREWISE_RUNS": str(tmp_path / "runs")},
                          capture_output=True, text=True, timeout=120, preexec_fn=_address_space_limit(6 * 2**30))
    assert proc.returncode == 1 and "collectives run oom: rank " in proc.stderr, proc.stderr
    [(status, error, _params)] = _stored_status(db_url)
    assert status == "oom" and "can't allocate memory" in error
