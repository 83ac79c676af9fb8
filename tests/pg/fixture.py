"""pytest plugin: a real PostgreSQL 15 server (tests/pg/server.sh) for tests that ask for it.

Fixtures:
    pg_server (session): starts the server (a no-op when it already runs), yields a PgServer whose
        `url` is the database wirewise_test. At session end the last pytest session using it
        stops it if a test session started it; WIREWISE_KEEP_SERVICES=1 keeps it running.
    pg_url (function): the SQLAlchemy URL (postgresql+psycopg://...) of a new, empty database
        made for this test alone and dropped after it.

When the server cannot start (not root, apt fails), the fixtures fail with the script's message
if CI is set and skip with it otherwise.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from tests.services import start_service, unavailable

SCRIPT = Path(__file__).resolve().with_name("server.sh")
DEFAULT_DIR = "/tmp/wirewise-pg"
WHAT = "PostgreSQL test server"


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
    proc, users = start_service(WHAT, SCRIPT, env, folder)
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        users.leave(stop=lambda: _stop(env))
        unavailable(WHAT, f"psycopg is not installed ({exc}); pip install 'psycopg[binary]'")
    from sqlalchemy.engine import make_url

    url = proc.stdout.strip().splitlines()[-1]
    parsed = make_url(url)
    try:
        yield PgServer(url=url, host=parsed.host, port=parsed.port, folder=folder)
    finally:
        users.leave(stop=lambda: _stop(env))


def _stop(env: dict[str, str]) -> None:
    subprocess.run([str(SCRIPT), "stop"], env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A new empty database for this test; dropped afterwards."""
    url = pg_server.create_database()
    yield url
    pg_server.drop_database(url.rsplit("/", 1)[1])
