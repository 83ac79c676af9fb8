"""A PostgreSQL read opens psycopg alone (store/read.py: libpq_uri), writes and migrations go
through SQLAlchemy's engine: both must reach the same database as the same user with the same
options, whatever the URL spells (percent escapes, query options, a service file), and a URL
that cannot be used must still be one line and exit 2 (issue 33)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import wirewise
from wirewise.orchestrator.store import Store

pytestmark = pytest.mark.postgres
WHO = ("SELECT current_database(), current_user, current_setting('application_name'), "
       "current_setting('statement_timeout')")


def _both(url: str) -> tuple[tuple, tuple]:
    """WHO through the read path (psycopg alone) and through the engine (SQLAlchemy)."""
    from sqlalchemy import text

    store = Store(url)
    with store.read() as db:
        read = tuple(db.rows(WHO)[0])
    with store.engine.connect() as conn:
        engine = tuple(conn.execute(text(WHO)).one())
    return read, engine


def test_the_read_and_the_engine_reach_the_same_database_with_the_same_options(pg_url):
    """A user spelt with a percent escape, options in the query: SQLAlchemy hands them to libpq
    as keywords, the read path as libpq's own URI; libpq decodes both the same way."""
    host_and_db = pg_url.split("@", 1)[1]
    url = f"postgresql+psycopg://post%67res@{host_and_db}?application_name=wirewise%20reads&options=-c%20statement_timeout%3D12345"
    read, engine = _both(url)
    assert read == engine == (host_and_db.rsplit("/", 1)[1], "postgres", "wirewise reads", "12345ms")


def test_a_service_file_url_reads_and_writes_one_database(pg_url, pg_server, tmp_path, monkeypatch):
    """docs/operators.md's `postgresql+psycopg://?service=wirewise`: the connection's details
    live in a pg_service.conf, read by libpq on both paths."""
    database = pg_url.rsplit("/", 1)[1]
    services = tmp_path / "pg_service.conf"
    services.write_text(f"[wirewise]\nhost={pg_server.host}\nport={pg_server.port}\nuser=postgres\ndbname={database}\n")
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    read, engine = _both("postgresql+psycopg://?service=wirewise")
    assert read[:2] == engine[:2] == (database, "postgres")


def test_a_query_on_postgresql_imports_no_sqlalchemy(pg_url):
    """`wirewise results` on an up-to-date PostgreSQL store reads through psycopg alone: importing
    SQLAlchemy with its psycopg dialect cost 0.37 s of CPU on the shared 2-core machine (against
    0.23 s for psycopg and 0.13 s for a whole `wirewise --help`), which kept PostgreSQL's
    selective lookups at 3.9 to 5.9x `--help` (docs/scale.md)."""
    Store(pg_url)  # migrated first: that does load SQLAlchemy, in this process
    script = Path(sys.executable).with_name("wirewise")
    for args in (["results", "--json"], ["results", "--node", "n1", "--since", "7d"], ["campaign", "list"], ["topo", "list"]):
        out = subprocess.run([sys.executable, "-X", "importtime", str(script), *args, "--db", pg_url],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, (args, out.stderr[-2000:])
        loaded = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
        assert "psycopg" in loaded and not {"sqlalchemy", "pydantic"} & loaded, (args, sorted(loaded & {"sqlalchemy", "pydantic"}))


@pytest.mark.parametrize("spelt, why", [
    ("postgresql+psycopg://u@127.0.0.1:1/x", "cannot open database postgresql+psycopg://u@127.0.0.1:1/x (--db): connection failed"),
    ("postgresql+psycopg://u@127.0.0.1:notaport/x", "not a database URL"),
    ("postgresql+psycopg://u@[::1/x", "not a database URL"),
    ("postgresql+psycopg://u:secret%ZZ@127.0.0.1:1/x", "invalid percent-encoded token"),
    ("postgresql+psycopg://u@127.0.0.1:1/x?no_such_option=1", 'invalid URI query parameter: "no_such_option"'),
    ("{server}/wirewise_no_such_database", 'database "wirewise_no_such_database" does not exist'),
])
def test_a_postgresql_url_that_cannot_be_read_is_one_line_and_exit_2(pg_server, spelt, why):
    """The server refuses, the URL does not parse, libpq rejects an escape or an option, the
    database does not exist on a live server: one line, exit 2, no password shown."""
    url = spelt.format(server=pg_server.url.rsplit("/", 1)[0])
    proc = wirewise("results", "--db", url, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("wirewise: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert why in proc.stderr and "secret" not in proc.stderr, proc.stderr


def test_a_read_keeps_its_connection_and_replaces_one_the_server_closed(pg_url, pg_server):
    """A command's reads share one connection (this process's and thread's); a read begun inside
    another gets its own; a kept connection whose server session ended (a restart, an
    administrator's pg_terminate_backend) is found by its ping and replaced, not a failed read."""
    store = Store(pg_url)
    session = "SELECT pg_backend_pid()"
    with store.read() as db:
        kept = db.scalar(session)
        with store.read() as inner:
            assert inner.scalar(session) != kept
    with store.read() as db:
        assert db.scalar(session) == kept
    with pg_server._admin() as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s, 10000)", (kept,)).fetchone() == (True,)
    with store.read() as db:
        assert db.scalar(session) != kept
        assert db.scalar("SELECT count(*) FROM alembic_version") == 1
