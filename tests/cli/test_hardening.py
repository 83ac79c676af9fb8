"""Careless and hostile input to the console script, as real processes (issue 10): stored
strings that look like rich markup, names that would inject config lines, and every bad
input answered with one line and exit code 2."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, wirewise, wirewise_json

NVL_QUADS = FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt"
NEW_LOG = FIXTURES / "nccl-tests" / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt"


def _one_line_exit_2(proc, expected: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("wirewise: error: ") and expected in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


# -- item 8: user strings are data, never rich markup --------------------------------------
def test_a_node_named_like_markup_is_not_stored_as_a_node(db_url):
    """A stored name is handed back to Slurm (place --node, run, fleet jobs): only a Slurm host
    name is taken. Markup that arrives in a log's host names is listed as text (below)."""
    _one_line_exit_2(wirewise("topo", "save", "-f", str(NVL_QUADS), "--node", "[/x]", "--db", db_url),
                     "not a Slurm host name")


def test_hosts_in_an_imported_log_lose_control_sequences_and_stay_text(tmp_path, db_url):
    log = tmp_path / "nccl-all_reduce.txt"
    log.write_text(NEW_LOG.read_text().replace("on cnode3-002 device", "on [/x]\x1b[2J\x1b]0;pwned\x07node device"))
    imported = wirewise_json("import", "nccl-tests", str(log), "--topology-file", str(FIXTURES / "topo" / "h100-sxm-8gpu-nvswitch-12nic-numaoff.txt"), "--db", db_url)
    assert imported["node"] == "[/x]node"
    proc = wirewise("topo", "list", "--db", db_url, check=True)
    assert "[/x]node" in proc.stdout and "\x1b" not in proc.stdout


# -- item 9: gres.conf lines take Slurm host names only ------------------------------------
def test_topo_slurm_refuses_a_node_that_would_inject_a_line():
    for bad in ("gpu-a\nNodeName=ALL Name=gpu File=/dev/nvidia0", "gpu a", "gpu=a", "-gpu", ""):
        proc = wirewise("topo", "slurm", "-f", str(NVL_QUADS), "--node", bad)
        _one_line_exit_2(proc, "not a Slurm host name")
        assert "NodeName" not in proc.stdout
    good = wirewise("topo", "slurm", "-f", str(NVL_QUADS), "--node", "gpu-a01.cluster_x", check=True).stdout
    assert "NodeName=gpu-a01.cluster_x Name=gpu" in good


def test_topo_slurm_from_a_file_needs_the_node():
    """A saved file names no host; this machine's name in its lines would be wrong."""
    _one_line_exit_2(wirewise("topo", "slurm", "-f", str(NVL_QUADS)), "--node: give the node")


# -- item 10: one line and exit 2 where there was a traceback -------------------------------
def test_a_db_file_that_is_not_sqlite(tmp_path):
    garbage = tmp_path / "results.db"
    garbage.write_bytes(b"this is a spreadsheet, not a database\n" * 200)
    _one_line_exit_2(wirewise("db", "info", "--db", f"sqlite:///{garbage}"), "file is not a database")


def _sqlite(db_url: str, *statements: str) -> None:
    import sqlite3

    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
        for statement in statements:
            conn.execute(statement)


def test_a_db_at_a_newer_schema_says_upgrade_wirewise(db_url):
    wirewise("db", "upgrade", "--db", db_url, check=True)
    _sqlite(db_url, "UPDATE alembic_version SET version_num = '0042'")
    for command in (["db", "info"], ["db", "upgrade"], ["topo", "list"]):
        _one_line_exit_2(wirewise(*command, "--db", db_url), "revision '0042', newer than this wirewise knows")
        assert "upgrade wirewise" in wirewise(*command, "--db", db_url).stderr


def test_wirewise_tables_without_alembic_version(db_url):
    wirewise("db", "upgrade", "--db", db_url, check=True)
    _sqlite(db_url, "DROP TABLE alembic_version")
    _one_line_exit_2(wirewise("topo", "list", "--db", db_url), "no alembic_version")


def test_in_memory_urls_are_refused():
    for url in ("sqlite://", "sqlite:///:memory:"):
        _one_line_exit_2(wirewise("db", "info", "--db", url), "in-memory SQLite database keeps nothing")


def test_a_runs_folder_that_is_a_file_or_cannot_be_made(tmp_path, db_url):
    a_file = tmp_path / "runs"
    a_file.write_text("")
    for runs in (a_file, "/proc/wirewise-runs"):
        proc = wirewise("bench", "collectives", "--backend", "gloo", "--nproc", "2", "-b", "1K", "-e", "1K",
                        "--db", db_url, env={"WIREWISE_RUNS": str(runs)})
        _one_line_exit_2(proc, f"cannot make a run folder under {runs} (WIREWISE_RUNS)")
    assert not (tmp_path / "wirewise.db").exists()  # nothing written


def test_a_size_past_64_bits_in_a_log_is_skipped_not_a_traceback(tmp_path, db_url):
    log = tmp_path / "nccl-all_reduce.txt"
    log.write_text(NEW_LOG.read_text().replace("    33554432       4194304", " 99999999999999999999       4194304"))
    proc = wirewise("import", "nccl-tests", str(log), "--db", db_url, "--json", check=True)
    assert json.loads(proc.stdout)["rows"] == 18
    assert "line 20: size 99999999999999999999 does not fit a 64-bit integer" in proc.stderr


# -- item 11: option checks answer in one style, before anything starts ---------------------
OPTION_CASES = {
    "train --nproc -1": (["bench", "train", "--model", "tiny-mistral", "--strategy", "ddp", "--nproc", "-1"], "--nproc -1: give at least 1 rank"),
    "train --timeout 0": (["bench", "train", "--model", "tiny-mistral", "--strategy", "ddp", "--timeout", "0"], "--timeout 0.0: "),
    "train --timeout nan": (["bench", "train", "--model", "tiny-mistral", "--strategy", "ddp", "--timeout", "nan"], "--timeout nan: "),
    "train without --strategy": (["bench", "train", "--model", "tiny-mistral"], "Missing option '--strategy'"),
    "train --seq-len past the model": (["bench", "train", "--model", "tiny-mistral", "--strategy", "ddp", "--seq-len", "513"],
                                       "--seq-len 513: tiny-mistral takes at most 512 positions"),
    "train --nproc abc": (["bench", "train", "--model", "tiny-mistral", "--strategy", "ddp", "--nproc", "abc"], "'--nproc'"),
    "collectives --timeout nan": (["bench", "collectives", "--backend", "gloo", "--timeout", "nan"], "--timeout nan: "),
    "collectives --timeout inf": (["bench", "collectives", "--backend", "gloo", "--timeout", "inf"], "--timeout inf: "),
    "an unknown option": (["topo", "list", "--colour"], "No such option: --colour"),
}


@pytest.mark.parametrize("case", OPTION_CASES)
def test_option_checks_are_one_line_and_start_nothing(case, tmp_path, db_url):
    args, expected = OPTION_CASES[case]
    proc = wirewise(*args, "--db", db_url, env={"WIREWISE_RUNS": str(tmp_path / "runs")})
    _one_line_exit_2(proc, expected)
    assert not (tmp_path / "runs").exists()


# -- item 17: tables read at 80 columns ------------------------------------------------------
def test_topo_list_at_80_columns_keeps_fabric_fingerprint_and_date_whole(db_url):
    fixtures = {"gpu-node-001": "synthetic-h200-nvl-8gpu-two-quads.txt", "dgx1-a": "v100-dgx1-8gpu-hybrid-cube-mesh-ib-old-legend.txt",
                "a-very-long-node-name-0001.cluster.example.org": "h100-sxm-8gpu-nvswitch-12nic-numaoff.txt"}
    for node, name in fixtures.items():
        wirewise("topo", "save", "-f", str(FIXTURES / "topo" / name), "--node", node, "--db", db_url, check=True)
    listed = {row["node"]: row for row in wirewise_json("topo", "list", "--db", db_url)}
    out = wirewise("topo", "list", "--db", db_url, env={"COLUMNS": "80"}, check=True).stdout
    assert max(len(line) for line in out.splitlines()) <= 80
    for row in listed.values():
        assert row["fabric"] in out and row["fingerprint"][:12] in out
        assert f"{row['last_seen'][:10]}" in out
    assert "nvlink-all-to-all" in out and "nvlink-partial" in out and "…" not in out


def test_the_train_table_wraps_between_values_never_inside_one():
    from rich.console import Console

    from wirewise.orchestrator.report.train import summary_table
    from wirewise.record import ResultRecord

    sizes = [int(377.89 * 10**6) + rank for rank in range(8)]
    record = ResultRecord(
        workload="train", model="mistral-7b", strategy="fsdp", world_size=8, micro_batch=1, seq_len=512, step_time_s=0.5,
        samples_per_s=16.0, tokens_per_s=8192.0, peak_mem_bytes=sizes, model_state_bytes=sizes, params={"engine": "native"},
        extra={"precision": "bf16-mixed", "param_bytes": sizes, "grad_bytes": sizes, "optimizer_bytes": sizes, "losses": [2.0, 1.5]},
    )
    console = Console(width=80, record=True, file=open("/dev/null", "w"))
    console.print(summary_table(record))
    lines = console.export_text().splitlines()
    assert max(len(line) for line in lines) <= 80
    assert sum(line.count("377.89 MB") for line in lines) == 8 * 5  # peak, state, params, grads, optimizer
    assert not any(line.rstrip(" │").endswith(("377.89", "377.89,")) for line in lines)
