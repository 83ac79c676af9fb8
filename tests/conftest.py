"""Shared test helpers. Commands run as real processes through the installed console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _isolate_settings() -> Path:
    """The suite's own user and site: every XDG folder and the site's configuration file in a
    fresh folder, and none of the settings' variables of the shell that ran pytest, so no test
    reads or writes the real user's ~/.local/share/wirewise or /etc/wirewise. Done at import,
    before any test or worker starts a process: they all inherit it."""
    import atexit
    import shutil
    import tempfile

    from wirewise import settings

    home = Path(tempfile.mkdtemp(prefix="wirewise-tests-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    for setting in settings.SETTINGS:
        os.environ.pop(setting.variable.name, None)
    os.environ.update({settings.XDG_DATA_HOME.name: str(home / "data"), settings.XDG_CONFIG_HOME.name: str(home / "config"),
                       settings.SITE_CONFIG.name: str(home / "site" / "config.toml")})
    return home


TEST_HOME = _isolate_settings()
FIXTURES = ROOT / "tests" / "fixtures"
WIREWISE = str(Path(sys.executable).with_name("wirewise"))
# pytest-xdist's workers run with COLUMNS=80 and LINES=24 in their environment, which a command
# piped in real use does not have (wirewise's tables honour COLUMNS in a pipe): a test that wants
# a width says so (env={"COLUMNS": "80"}).
for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)

# Real services, installed and started on demand by their own scripts (see each folder).
pytest_plugins = ["tests.slurm.fixture", "tests.slurm.multinode", "tests.pg.fixture"]

# `make test` runs the suite on several pytest-xdist workers (--dist loadgroup). A test that uses
# a test cluster runs on the one worker that holds that cluster, one test at a time: tests stop
# its nodes, restart it with another gres.conf and fill its queue. PostgreSQL gives each test its
# own database and needs no group.
SERIAL_SERVICES = {"multinode_cluster": "multinode", "slurm_cluster": "slurm"}
SHARED_SERVICES = {"pg_server"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(config, items) -> None:
    """Mark each test with the xdist group it must run in (ignored when xdist does not run)."""
    for item in items:
        group = xdist_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


XDIST_GROUPS_BROKEN = (9, 2)  # pytest from which pytest-xdist 3.8 no longer groups (pytest-dev/pytest-xdist#1386)


def pytest_configure(config) -> None:
    """Under --dist loadgroup, xdist tells its scheduler a test's group by appending @GROUP to
    the test's id, which pytest 9.2 no longer lets it do: a cluster's tests would then run on two
    workers at once and fail in ways that say nothing of the cause. Refuse before running any."""
    if getattr(config.option, "dist", "no") == "loadgroup" and not hasattr(config, "workerinput"):
        if tuple(int(part) for part in pytest.__version__.split(".")[:2]) >= XDIST_GROUPS_BROKEN:
            raise pytest.UsageError(f"pytest {pytest.__version__} breaks pytest-xdist's --dist loadgroup "
                                    "(pytest-dev/pytest-xdist#1386): pip install 'pytest<9.2' (make test does)")


def xdist_group(item) -> str | None:
    """A test cluster's group; else the fixture that is built once and shared (a session
    fixture: its name; a module or class one: its module), so that it is built on one worker
    only; None: any worker."""
    closure = item.fixturenames
    for fixture, group in SERIAL_SERVICES.items():
        if fixture in closure:
            return group
    info = getattr(item, "_fixtureinfo", None)
    for name in closure:
        defs = info.name2fixturedefs.get(name) if info else None
        if not defs or name in SHARED_SERVICES or not defs[-1].func.__module__.startswith("tests."):
            continue  # pytest's own (tmp_path_factory is a session fixture) and plugins'
        scope = defs[-1].scope
        if scope == "session":
            return name
        if scope in ("package", "module", "class"):
            return item.module.__name__
    return None


def wirewise(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 300, check: bool = False):
    """Run `wirewise ARGS` as a process; returns CompletedProcess with text output. `env` is laid over
    this process's environment; a None value removes that variable (the session's fixtures set some)."""
    full_env = {key: value for key, value in {**os.environ, **(env or {})}.items() if value is not None}
    proc = subprocess.run([WIREWISE, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"wirewise {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def wirewise_json(*args: str, **kw):
    proc = wirewise(*args, "--json", check=True, **kw)
    return json.loads(proc.stdout)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A fresh SQLite database file for one test."""
    return f"sqlite:///{tmp_path / 'wirewise.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request, tmp_path) -> str:
    """A fresh database for one test: SQLite, and PostgreSQL (marked postgres)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'wirewise.db'}"
    return request.getfixturevalue("pg_url")
