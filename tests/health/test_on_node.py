"""`doctor --health-check` and `doctor --prolog` as slurmd runs them: as a process with a bare
environment (only SLURMD_NODENAME, and the prolog's SLURM_JOB_*), in slurmd's working folder.
What keeps them from judging the node is not the node's fault: they exit 0 with a note saying
"not judged", create no database, and leave no temporary folder. An exit other than 0 from the
health check, or 1 from the prolog, drains the node in Slurm (and with a shared wrapper, every
node at once), so each case here drained nodes before. Real databases: SQLite files, a SQLite
database locked by another writer, a PostgreSQL server that is not there (port 1)."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import WIREWISE

MODES = ("--health-check", "--prolog")
JOB = {"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "0,1"}
# gloo ranks on the job's "GPUs": this machine has none (the prolog's collective runs on CPU ranks)
PROLOG = {"include_cpu": True, "prolog": {"min_bytes": "4M", "max_bytes": "4M", "iters": 5, "warmup": 1, "backend": "gloo",
                                          "time_limit_s": 20}}


def slurmd_runs(mode: str, *args: str, folder: Path, env: dict | None = None, timeout: float = 90) -> subprocess.CompletedProcess:
    """The command in `folder`/spool (slurmd's working folder), its TMPDIR under it."""
    spool = folder / "spool"
    (spool / "tmp").mkdir(parents=True, exist_ok=True)
    # HOME of its own: the default database is the user's (wirewise.settings), and this machine's root may have one
    bare = {"SLURMD_NODENAME": "n1", "TMPDIR": str(spool / "tmp"), "HOME": str(folder / "home"),
            **(JOB if mode == "--prolog" else {}), **(env or {})}
    return subprocess.run([WIREWISE, "doctor", mode, "--json", *args], cwd=spool, env=bare, capture_output=True, text=True,
                          timeout=timeout)


def not_judged(done: subprocess.CompletedProcess, folder: Path, *why: str) -> None:
    import json

    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["judged"] is False and outcome["healthy"] is None and not outcome["drained"], outcome
    said = outcome["not_judged"]  # on a machine busy enough, its own time limit may come first: as good
    assert all(w in said for w in why) or "did not finish within" in said, said
    assert "Traceback" not in done.stderr and "not judged" in done.stderr
    spool = folder / "spool"
    left = sorted(str(p.relative_to(spool)) for p in spool.rglob("*") if p.name != "tmp")
    assert left == [], left  # no database made in slurmd's folder, no scratch folder left


@pytest.mark.parametrize("mode", MODES)
def test_no_database_configured_is_not_judged_and_none_is_created(tmp_path, mode):
    """The wrapper gives no --db and slurmd no WIREWISE_DB: the check made ./wirewise.db in
    slurmd's working folder and reported the node healthy."""
    not_judged(slurmd_runs(mode, folder=tmp_path), tmp_path, f"no database at {tmp_path / 'home'}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("db, why", [
    ("sqlite:////nonexistent/wirewise.db", "no database at"),
    ("sqlite:///{spool}/missing.db", "no database at"),
    ("sqlite:////dev/zero", "is not a regular file"),
    ("bogus://", "no database driver for 'bogus'"),
    ("postgresql+psycopg://nobody@127.0.0.1:1/wirewise", "cannot open database"),
])
def test_a_wrong_db_in_the_wrapper_is_not_judged(tmp_path, mode, db, why):
    not_judged(slurmd_runs(mode, "--db", db.format(spool=tmp_path / "spool"), folder=tmp_path), tmp_path, why)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("prolog", [{"min_bytes": "512M"}, {"iters": 1000000000000}, {"time_limit_s": float("inf")}])
def test_rules_that_do_not_load_are_not_judged(tmp_path, mode, prolog):
    """The issue's three rules files: the prolog crashed with a traceback (exit 1), or ran with
    its watchdog dead."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"prolog": prolog}))
    db = f"sqlite:///{tmp_path / 'db' / 'wirewise.db'}"
    (tmp_path / "db").mkdir()
    subprocess.run([WIREWISE, "db", "upgrade", "--db", db], check=True, capture_output=True)
    done = slurmd_runs(mode, "--db", db, "--rules", str(tmp_path / "rules.yaml"), folder=tmp_path)
    not_judged(done, tmp_path, f"{tmp_path / 'rules.yaml'}: prolog")


@pytest.mark.parametrize("mode, args, why", [
    *[(mode, ["--dbb", "x"], "No such option: --dbb") for mode in MODES],
    *[(mode, ["--health-check", "--prolog"], "not both") for mode in MODES],
    ("--prolog", ["--report-only"], "--report-only goes with --health-check"),
])
def test_a_wrapper_whose_options_do_not_parse_is_not_judged_with_its_outcome(tmp_path, mode, args, why):
    """A misspelt or contradictory option fails before the command runs: it exited 0 with a note
    (slurmd drains nothing) but printed no JSON outcome for a reader of --json."""
    not_judged(slurmd_runs(mode, *args, folder=tmp_path), tmp_path, why)


@pytest.mark.parametrize("mode", MODES)
def test_a_database_locked_by_another_writer_is_not_judged_and_leaves_no_scratch(tmp_path, mode):
    """Another writer holds the SQLite database for the whole check: the health check waits a
    third of its limit per statement, the prolog runs its collective and cannot store it; both
    say so and exit 0. The prolog left its scratch folder behind and exited 1 (drained)."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(PROLOG))
    path = tmp_path / "db" / "wirewise.db"
    path.parent.mkdir()
    subprocess.run([WIREWISE, "db", "upgrade", "--db", f"sqlite:///{path}"], check=True, capture_output=True)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    writer.execute("INSERT INTO node_checks (node, source, rules, healthy, findings, checked_at) "
                   "VALUES ('other', 'test', '[]', 1, 0, '2026-01-01 00:00:00')")
    try:
        done = slurmd_runs(mode, "--db", f"sqlite:///{path}", "--rules", str(tmp_path / "rules.yaml"), folder=tmp_path)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    not_judged(done, tmp_path)
    if mode == "--prolog":  # the health check here reads no NVML: it has nothing to write
        assert any(word in done.stdout for word in ("busy", "locked", "did not finish within")), done.stdout
