"""The collective sweep as users run it: gloo ranks on CPU, real processes, a real database."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from tests.conftest import FIXTURES, wirewise, wirewise_json

TOPO_FILE = FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt"
NCCL_TESTS_LOG = FIXTURES / "nccl-tests" / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt"
BUSBW_FACTOR_AT_3 = {  # nccl-tests' doc/PERFORMANCE.md at 3 ranks: 2(n-1)/n, (n-1)/n, 1
    "all_reduce": 4 / 3, "all_gather": 2 / 3, "reduce_scatter": 2 / 3, "all_to_all": 2 / 3, "broadcast": 1.0,
}


def test_rows_follow_nccl_tests_definitions(tmp_path, db_url):
    rows = wirewise_json(
        "bench", "collectives", "--backend", "gloo", "--nproc", "3",
        "--ops", "all_reduce,all_gather,reduce_scatter,broadcast,all_to_all",
        "-b", "1K", "-e", "16K", "-f", "4", "--iters", "3", "--warmup", "1", "--check", "--db", db_url,
        env={"WIREWISE_RUNS": str(tmp_path / "runs")},
    )
    by_op = {}
    for row in rows:
        by_op.setdefault(row["op"], []).append(row)
    # Whole-buffer ops keep the size; chunked ops round each of the 3 chunks down to 16-byte lines.
    whole = [(1024, 256), (4096, 1024), (16384, 4096)]
    chunked = [(1008, 84), (4080, 340), (16368, 1364)]
    # Each size in every form torch has: all_reduce and broadcast only in place, all_to_all
    # only out of place, all_gather and reduce_scatter both (out of place first, as nccl-tests).
    forms = {"all_reduce": [True], "broadcast": [True], "all_to_all": [False], "all_gather": [False, True], "reduce_scatter": [False, True]}
    expected = {
        op: [(nbytes, count, in_place) for nbytes, count in (whole if op in ("all_reduce", "broadcast") else chunked) for in_place in forms[op]]
        for op in forms
    }
    assert {op: [(r["bytes"], r["count"], r["in_place"]) for r in op_rows] for op, op_rows in by_op.items()} == expected
    for row in rows:
        assert row["ranks"] == 3 and row["gpus"] == [] and row["dtype"] == "float32" and row["cuda_graph"] is False
        assert row["status"] == "ok" and row["wrong"] == 0, row
        assert row["busbw_gbs"] == pytest.approx(row["algbw_gbs"] * BUSBW_FACTOR_AT_3[row["op"]])


def test_check_counts_the_elements_a_corrupted_input_spoils(tmp_path):
    """Rank 1 adds 1 to the first element of its input (the documented corrupt_rank hook)
    right before the checked call: the real collective carries the damage and the real check
    counts it, summed over ranks like nccl-tests' #wrong."""
    from wirewise.jobs.supervise import run_task
    from wirewise.task import TaskSpec

    params = {"ops": ["all_reduce", "all_gather", "reduce_scatter"], "min_bytes": "1K", "max_bytes": "2K",
              "iters": 1, "warmup": 0, "check": True, "dtype": "bfloat16", "corrupt_rank": 1}
    spec = TaskSpec(workload="collective", params=params, nproc_per_node=2, backend="gloo", timeout_s=120)
    result = json.loads(run_task(spec, tmp_path / spec.task_id).read_text())
    assert result["status"] == "ok", result["records"][0]["error"]
    wrong = {(r["op"], r["bytes"], r["in_place"]): r["wrong"] for r in result["records"]}
    # all_reduce: element 0 of the sum, on both ranks; all_gather: rank 1's element 0, seen by
    # both ranks; reduce_scatter: element 0 belongs to rank 0's chunk only. In place the same:
    # all_gather's input is rank 1's chunk of the output, reduce_scatter's output rank 0's chunk.
    assert wrong == {
        ("all_reduce", 1024, True): 2, ("all_reduce", 2048, True): 2,
        ("all_gather", 1024, False): 2, ("all_gather", 2048, False): 2,
        ("all_gather", 1024, True): 2, ("all_gather", 2048, True): 2,
        ("reduce_scatter", 1024, False): 1, ("reduce_scatter", 2048, False): 1,
        ("reduce_scatter", 1024, True): 1, ("reduce_scatter", 2048, True): 1,
    }


def test_cpu_ranks_never_pass_as_gpu_measurements(tmp_path, db_url):
    """Issue 10 item 13: --gpus 0,1 with gloo on a machine without GPUs ran on CPU but stored
    gpus [0, 1] under the H200 fingerprint of --topology-file, without a warning. Now: two CPU
    ranks, device cpu, no GPU indices (gpu_count 0, which keeps them out of fabric figures
    unless asked for), the node's wiring kept for that asking, and a warning for each."""
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.orm import ResultRow, TopologyRow

    proc = wirewise(
        "bench", "collectives", "--backend", "gloo", "--gpus", "0,1", "--topology-file", str(TOPO_FILE),
        "--ops", "all_reduce,all_gather", "-b", "64K", "-e", "128K", "--iters", "2", "--warmup", "0",
        "--transport", "pcie", "--db", db_url, env={"WIREWISE_RUNS": str(tmp_path / "runs")},
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning: no GPU is visible here: --gpus 0,1 runs 2 CPU rank(s), recorded without GPU indices" in proc.stderr
    assert "warning: the ranks run on CPU: --topology-file describes GPUs they do not use" in proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.split() == ["#", "size", "count", "type", "redop", "root", "place", "time", "algbw", "busbw", "#wrong"] for line in lines)
    assert sum(line.startswith("# Avg bus bandwidth") for line in lines) == 2
    assert any(line.split()[:5] == ["65536", "16384", "float32", "sum", "-1"] and line.split()[-1] == "N/A" for line in lines)

    store = Store(db_url)
    with store.session() as session:
        results = session.scalars(select(ResultRow).where(ResultRow.workload == "collective")).all()
        stored_fingerprints = session.scalars(select(TopologyRow.fingerprint)).all()
    assert len(results) == 6  # all_reduce in place; all_gather out of place and in place; 2 sizes each
    for r in results:
        assert (r.source, r.status, r.gpus, r.gpu_count, r.world_size) == ("wirewise", "ok", [], 0, 2)
        assert (r.fabric, r.extra["device"], r.extra["backend"]) == ("nvlink-groups", "cpu", "gloo") and r.fingerprint
        assert r.env["NCCL_P2P_DISABLE"] == "1" and r.env["CUDA_VISIBLE_DEVICES"] == ""
        assert r.params["transport"] == "pcie" and r.versions["torch"]
    assert stored_fingerprints == [results[0].fingerprint]
    hidden = wirewise_json("results", "--fabric", "nvlink-groups", "--db", db_url)
    shown = wirewise_json("results", "--fabric", "nvlink-groups", "--include-cpu", "--db", db_url)
    assert hidden == [] and len(shown) > 0  # out of the fabric's figures unless asked for

    # An nccl-tests log in the same database: one query puts both tools side by side.
    wirewise("import", "nccl-tests", str(NCCL_TESTS_LOG), "--db", db_url, check=True)
    with store.session() as session:
        side_by_side = session.execute(
            select(ResultRow.source, ResultRow.bytes, ResultRow.busbw_gbs).where(ResultRow.op == "all_reduce").order_by(ResultRow.bytes)
        ).all()
    assert {source for source, _, _ in side_by_side} == {"wirewise", "nccl-tests"}
    assert [b for s, b, _ in side_by_side if s == "wirewise"] == [65536, 131072]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpus", "0,x"], "--gpus '0,x'"),
        (["--ops", "all_reduce,allreduce"], "'allreduce' is not one of all_reduce"),
        (["--dtype", "int8"], "--dtype 'int8'"),
        (["-b", "2M", "-e", "1M"], "-b 2M is larger than -e 1M"),
        (["-b", "1Q"], "-b '1Q'"),
        (["--backend", "mpi"], "--backend 'mpi'"),
        (["--nproc", "2", "--gpus", "0,1,2", "--backend", "gloo"], "disagree"),
        (["--backend", "gloo", "--nproc", "2", "--cuda-graph"], "--cuda-graph needs the nccl backend"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, db_url):
    proc = wirewise("bench", "collectives", *args, "--db", db_url)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr


def test_gpus_requested_where_there_are_none(db_url):
    from wirewise.nvml import gpu_count

    if gpu_count():
        pytest.skip("this machine has GPUs")
    for args in (["--gpus", "0,1"], ["--backend", "nccl"]):
        proc = wirewise("bench", "collectives", *args, "--db", db_url)
        assert proc.returncode == 2 and "no GPU is visible" in proc.stderr, proc.stderr


def test_cuda_graph_on_cpu_ranks_is_refused_before_anything_runs(tmp_path):
    """gloo ranks run on CPU, where there is no CUDA graph to capture: one line, exit 2, and
    neither a run folder nor a database is left behind. (The graph path itself needs GPUs:
    tests/gpu/fidelity_check.sh proves it on an H200, see docs/collectives.md.)"""
    runs, db = tmp_path / "runs", tmp_path / "w.db"
    proc = wirewise("bench", "collectives", "--backend", "gloo", "--nproc", "2", "--cuda-graph", "-b", "1K", "-e", "1K",
                    "--db", f"sqlite:///{db}", env={"WIREWISE_RUNS": str(runs)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "wirewise: error: --cuda-graph needs the nccl backend (a CUDA graph captures GPU work); this run uses gloo\n"
    assert not runs.exists() and not db.exists()


def test_a_shell_that_turns_p2p_off_cannot_record_the_default_transport(db_url):
    """NCCL_P2P_DISABLE=1 in the shell is --transport pcie: stored as default, those rows would
    mix with NVLink rows in every query by transport (the same rule `import nccl-tests` keeps)."""
    proc = wirewise("bench", "collectives", "--backend", "gloo", "--nproc", "2", "--db", db_url, env={"NCCL_P2P_DISABLE": "1"})
    assert proc.returncode == 2
    assert proc.stderr == ("wirewise: error: this shell's environment: NCCL_P2P_DISABLE=1 is what --transport pcie sets: "
                           "give --transport pcie, not default\n")


def test_a_gpu_index_past_any_gpu_on_gloo_is_a_cpu_rank(tmp_path, db_url):
    """`--gpus 9 --backend gloo` on this machine (no GPU): stored `gpus: [9]` before."""
    rows = wirewise_json(
        "bench", "collectives", "--backend", "gloo", "--gpus", "9", "--ops", "all_reduce", "-b", "1K", "-e", "1K",
        "--iters", "1", "--warmup", "0", "--db", db_url, env={"WIREWISE_RUNS": str(tmp_path / "runs")},
    )
    assert rows and {(tuple(r["gpus"]), r["device"], r["ranks"], r["fingerprint"]) for r in rows} == {((), "cpu", 1, None)}


def test_rows_reach_a_pipe_as_they_are_measured_after_a_one_line_estimate(tmp_path, db_url):
    """Issue 31: piped to a file or `tee`, a sweep printed nothing until its end. Here stdout is
    a pipe (no terminal): the first row, 1K, is read while the sweep goes on to 512M (a minute
    of CPU all_reduce), after the estimate on stderr; Ctrl-C then stops it (exit 130)."""
    import signal
    import subprocess

    from tests.conftest import WIREWISE

    env = {**__import__("os").environ, "WIREWISE_RUNS": str(tmp_path / "runs")}
    proc = subprocess.Popen([WIREWISE, "bench", "collectives", "--backend", "gloo", "--nproc", "2", "--ops", "all_reduce",
                             "-b", "1K", "-e", "512M", "--db", db_url], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        head = [proc.stdout.readline() for _ in range(4)]
        still_running = proc.poll() is None
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert head[:3] == ["# all_reduce\n", *[line for line in head[1:3] if line.startswith("#   ")]], head
    assert head[3].split()[:6] == ["1024", "256", "float32", "sum", "-1", "in"], head
    assert still_running, "the first row came only once the sweep had ended"
    note = [line for line in err.splitlines() if line.startswith("wirewise: note: ")]
    assert note == ["wirewise: note: 20 sizes from 1K to 512M, 1 op(s), on 2 CPU ranks: roughly 58 s (the default "
                    "1M-1G sweep on 2 CPU ranks ran 5 min 45 s on a 2-core machine); -e sets a smaller largest size"], err
    assert proc.returncode == 130, err
    assert not any(line.split()[:1] == ["1024"] for line in rest.splitlines())  # each row printed once


def test_the_estimate_waits_until_nothing_can_refuse_the_run(tmp_path):
    """The default sweep on CPU ranks is long enough to be estimated, but a database that is no
    URL refuses it first: one line, exit 2, no estimate before it."""
    proc = wirewise("bench", "collectives", "--backend", "gloo", "--nproc", "2", "--db", "bogus",
                    env={"WIREWISE_RUNS": str(tmp_path / "runs")})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "not a database URL" in proc.stderr, proc.stderr


def test_rows_show_above_the_bar_in_a_terminal_as_they_are_measured(tmp_path, db_url):
    """The same sweep with stdout a terminal (a pseudo-terminal): the progress bar runs and the
    first row, with its op's headings, is on the screen while the sweep goes on."""
    import os
    import pty
    import re
    import select
    import signal
    import subprocess

    from tests.conftest import WIREWISE

    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "WIREWISE_RUNS": str(tmp_path / "runs")}
    proc = subprocess.Popen([WIREWISE, "bench", "collectives", "--backend", "gloo", "--nproc", "2", "--ops", "all_reduce",
                             "-b", "1K", "-e", "512M", "--db", db_url], stdout=slave, stderr=subprocess.DEVNULL, env=env)
    os.close(slave)
    screen, row = b"", None
    try:
        while row is None and select.select([master], [], [], 120)[0]:
            screen += os.read(master, 4096)
            text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", screen).decode(errors="replace")
            row = re.search(r"^\s+1024\s+256\s+float32\s+sum\s+-1\s+in\s", text, re.M)
        still_running = proc.poll() is None
        proc.send_signal(signal.SIGINT)
        proc.wait(120)
    finally:
        proc.kill()
        os.close(master)
    assert row is not None and "# all_reduce" in text and "collectives" in text, text[-2000:]
    assert still_running, "the first row came only once the sweep had ended"
