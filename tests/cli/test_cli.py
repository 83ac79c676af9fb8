"""The console script as users run it: real processes in a fresh folder."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import wirewise
from wirewise.db import HEAD


def test_cli_module_does_not_import_torch():
    code = "import sys, wirewise.orchestrator.cli.main; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'deepspeed', 'transformers', 'accelerate'))))"
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_db_upgrade_creates_the_default_database_in_the_data_folder(tmp_path):
    """Without --db, WIREWISE_DB or a file, the database is wirewise.db in the user's data folder
    (XDG_DATA_HOME, set for the suite by tests/conftest.py), not in the current folder."""
    data = tmp_path / "data"
    proc = wirewise("db", "upgrade", cwd=tmp_path, env={"XDG_DATA_HOME": str(data)})
    assert proc.returncode == 0, proc.stderr
    assert f"sqlite:///{data / 'wirewise' / 'wirewise.db'}: schema empty -> {HEAD}" in proc.stdout
    info = json.loads(wirewise("db", "info", "--json", cwd=tmp_path, env={"XDG_DATA_HOME": str(data)}, check=True).stdout)
    assert info["revision"] == info["head"] == HEAD  # the newest migration in db/versions
    assert info["rows"]["results"] == 0
    assert not (tmp_path / "wirewise.db").exists()


def test_db_url_from_environment(tmp_path):
    target = tmp_path / "elsewhere.db"
    proc = wirewise("db", "upgrade", cwd=tmp_path, env={"WIREWISE_DB": f"sqlite:///{target}"})
    assert proc.returncode == 0, proc.stderr
    assert target.exists() and not (tmp_path / "wirewise.db").exists()


def test_db_upgrade_reports_current(tmp_path):
    url = f"sqlite:///{tmp_path / 'w.db'}"
    first = wirewise("db", "upgrade", "--db", url)
    second = wirewise("db", "upgrade", "--db", url)
    assert f"empty -> {HEAD}" in first.stdout
    assert "is current" in second.stdout


def test_version():
    proc = wirewise("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("wirewise ")


def test_bad_database_url_is_one_line_exit_2(tmp_path):
    for url in ("sqlite:////no/such/folder/w.db", "nosuchdriver://x", "postgresql+psycopg://u@127.0.0.1:1/x"):
        proc = wirewise("db", "info", "--db", url, cwd=tmp_path)
        assert proc.returncode == 2, (url, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr


def test_bench_commands_read_the_topology_file_before_running(tmp_path):
    """A malformed --topology-file stops both bench commands with one line and exit 2, before
    any rank starts (no run folder is made), instead of a run without a fingerprint."""
    bad = tmp_path / "topo.txt"
    bad.write_text("not nvidia-smi output\n")
    runs = tmp_path / "runs"
    for command in (["collectives", "--backend", "gloo"], ["train", "--model", "tiny-mistral", "--strategy", "ddp"]):
        proc = wirewise("bench", *command, "--topology-file", str(bad), cwd=tmp_path, env={"WIREWISE_RUNS": str(runs)})
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "no `nvidia-smi topo -m` matrix found" in proc.stderr
    assert not runs.exists()
