"""Shared test helpers. Commands run as real processes through the installed console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
WIREWISE = str(Path(sys.executable).with_name("wirewise"))

# Real services, installed and started on demand by their own scripts (see each folder).
pytest_plugins = ["tests.slurm.fixture", "tests.slurm.multinode", "tests.pg.fixture"]


def wirewise(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 300, check: bool = False):
    """Run `wirewise ARGS` as a process; returns CompletedProcess with text output."""
    full_env = {**os.environ, **(env or {})}
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
