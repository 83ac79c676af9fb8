"""docs/operators.md, run: every command of its `sh` blocks, in order, and every file it shows
written where it says, against the test PostgreSQL server. The paths a cluster uses become this
test's folders (/opt, /etc/wirewise, /etc/slurm), db.example.org:5432 the test server, and
`sudo -u postgres` its superuser. pip installs offline: the new environment sees this one's
packages through a .pth file (the doc's install line then installs wirewise itself, from a copy
of the checkout, and finds every dependency already there), since this machine has no index."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOC = ROOT / "docs" / "operators.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def blocks() -> list[tuple[str, str | None, str]]:
    """(language, the path a file block names or None, its text) for every fenced block."""
    found = []
    for language, text in BLOCK.findall(DOC.read_text()):
        first, _, rest = text.partition("\n")
        path = first[2:].split()[0] if first.startswith("# /") else None
        found.append((language, path, rest if path else text))
    return found


def commands(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_the_runbook_names_its_commands_and_files():
    shown = blocks()
    files = [path for _, path, _ in shown if path]
    assert files == ["/etc/wirewise/pg_service.conf", "/etc/wirewise/config.toml", "/etc/slurm/wirewise-health-check",
                     "/etc/slurm/wirewise-prolog"]
    run = [c for language, path, text in shown if language == "sh" and not path for c in commands(text)]
    assert len(run) >= 15 and sum("wirewise db upgrade" in c for c in run) == 2, run  # the first set-up, an upgrade


@pytest.mark.postgres
def test_every_command_of_the_runbook_runs(pg_server, tmp_path):
    _drop(pg_server)
    try:
        _run_the_runbook(pg_server, tmp_path)
    finally:
        _drop(pg_server)


def _run_the_runbook(pg_server, tmp_path: Path) -> None:
    site = tmp_path / "etc" / "wirewise"
    places = {"/opt/wirewise": str(tmp_path / "opt" / "wirewise"), "/etc/wirewise": str(site),
              "/etc/slurm": str(tmp_path / "etc" / "slurm"), "db.example.org": pg_server.host,
              "port=5432": f"port={pg_server.port}", "sudo -u postgres ": ""}
    test_only = (f"WIREWISE_SITE_CONFIG={site / 'config.toml'} XDG_DATA_HOME={tmp_path / 'data'} "
                 f"XDG_CONFIG_HOME={tmp_path / 'config'} HOME={tmp_path}")
    places["env -i "] = f"env -i {test_only} "  # slurmd's bare environment, but this test's site and home
    source = _checkout_copy(tmp_path / "src")
    env = {**os.environ, "WIREWISE_SITE_CONFIG": str(site / "config.toml"), "PGHOST": pg_server.host,
           "PGPORT": str(pg_server.port), "PGUSER": "postgres", "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PGSERVICEFILE", None)
    site.mkdir(parents=True)
    (tmp_path / "etc" / "slurm").mkdir()
    ran = []
    for language, path, text in blocks():
        if path:
            target = Path(_placed(path, places))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_placed(text, places))
            continue
        if language != "sh":
            continue
        for command in commands(text):
            line = _placed(command, places)
            proc = subprocess.run(["bash", "-c", line], cwd=source, env=env, capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, f"{command}\n-> {line}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
            ran.append((command, proc))
            if command.startswith("python3 -m venv"):
                _offline(Path(line.split()[-1]))
    said = {command: proc for command, proc in ran}
    config = said["PGSERVICEFILE=/etc/wirewise/pg_service.conf /opt/wirewise/bin/wirewise config show"].stdout
    assert f"db in {site / 'config.toml'}" in config and f"rules file {site / 'rules.yaml'}" in config
    info = said["PGSERVICEFILE=/etc/wirewise/pg_service.conf /opt/wirewise/bin/wirewise db info"].stdout
    assert "postgresql+psycopg://?service=wirewise" in info
    assert (site / "rules.yaml").read_text() == (ROOT / "orchestrator" / "health" / "rules.yaml").read_text()
    assert oct((site / "pg_service.conf").stat().st_mode & 0o777) == "0o600"
    # The service file is what lets root in: without it, one line naming the database, exit 2.
    wirewise = tmp_path / "opt" / "wirewise" / "bin" / "wirewise"
    proc = subprocess.run([str(wirewise), "db", "info"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "service=wirewise" in proc.stderr, proc.stderr
    assert (site / "before-upgrade.dump").stat().st_size > 0


def _placed(text: str, places: dict[str, str]) -> str:
    for name, here in places.items():
        text = text.replace(name, here)
    return text


def _checkout_copy(folder: Path) -> Path:
    """The checkout's files as git lists them (`pip install .` builds in the folder it is given)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.splitlines()
    for name in listed:
        if (ROOT / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, folder / name)
    return folder


def _offline(venv: Path) -> None:
    """This environment's packages seen by the new one (after its own), and the new one's old
    setuptools removed, so that this environment's is the one a build uses."""
    mine = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    theirs = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    Path(theirs, "zz-test-packages.pth").write_text(mine + "\n")
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "-q", "-y", "setuptools"], capture_output=True)


def _drop(pg_server) -> None:
    with pg_server._admin() as conn:
        conn.execute('DROP DATABASE IF EXISTS "wirewise" WITH (FORCE)')
        conn.execute('DROP ROLE IF EXISTS "wirewise"')
