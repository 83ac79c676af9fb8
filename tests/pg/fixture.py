"""pytest plugin: a real PostgreSQL 15 server (tests/pg/server.sh) for tests that ask for it.

Fixtures:
    pg_server (session): starts the server (a no-op when it already runs), yields a PgServer whose
        `url` is the database wirewise_test. At session end it stops the server only if this
        session started it and no other pytest session still uses it; WIREWISE_KEEP_SERVICES=1
        keeps it running.
    pg_url (function): the SQLAlchemy URL (postgresql+psycopg://...) of a new, empty database
        made for this test alone and dropped after it.

When the server cannot start (not root, apt fails), the fixtures fail with the script's message
if CI is set and skip with it otherwise.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

SCRIPT = Path(__file__).resolve().with_name("server.sh")
DEFAULT_DIR = "/tmp/wirewise-pg"


def _unavailable(message: str) -> None:
    text = f"PostgreSQL test server unavailable:\n{message.strip()}"
    if os.environ.get("CI"):
        pytest.fail(text, pytrace=False)
    pytest.skip(text)


@dataclass
class PgServer:
    url: str  # SQLAlchemy URL of the database wirewise_test
    host: str
    port: int
    folder: Path  # data/, the socket, server.log

    def url_for(self, database: str) -> str:
        return f"postgresql+psycopg://postgres@{self.host}:{self.port}/{database}"

    def _admin(self):
        import psycopg  # the test extra; imported here so that collecting tests never needs it

        return psycopg.connect(host=self.host, port=self.port, user="postgres", dbname="postgres", autocommit=True)

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database (a unique name when none is given); returns its URL."""
        name = name or f"wirewise_test_{uuid.uuid4().hex[:12]}"
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url_for(name)

    def drop_database(self, name: str) -> None:
        """Drop it, closing whatever connections a test left open."""
        with self._admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    folder = Path(os.environ.get("WIREWISE_PG_DIR", DEFAULT_DIR))
    env = {**os.environ, "WIREWISE_PG_DIR": str(folder)}
    try:
        proc = subprocess.run([str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        _unavailable(f"{SCRIPT} start: {exc}")
    if proc.returncode != 0:
        _unavailable(f"{SCRIPT} start exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        _unavailable(f"psycopg is not installed ({exc}); pip install 'psycopg[binary]'")
    from sqlalchemy.engine import make_url

    url = proc.stdout.strip().splitlines()[-1]
    parsed = make_url(url)
    server = PgServer(url=url, host=parsed.host, port=parsed.port, folder=folder)
    started_here = "already running" not in proc.stderr
    # Every session holds a shared lock; the starter stops the server only when it is alone.
    users = open(folder / "users.lock", "a+")  # noqa: SIM115 - held for the session
    fcntl.flock(users, fcntl.LOCK_SH)
    try:
        yield server
    finally:
        fcntl.flock(users, fcntl.LOCK_UN)
        try:
            fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
            alone = True
        except OSError:
            alone = False
        users.close()
        if started_here and alone and os.environ.get("WIREWISE_KEEP_SERVICES") != "1":
            subprocess.run([str(SCRIPT), "stop"], env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A new empty database for this test; dropped afterwards."""
    url = pg_server.create_database()
    yield url
    pg_server.drop_database(url.rsplit("/", 1)[1])
