"""The local PostgreSQL test server: its URLs work with SQLAlchemy, each test gets its own
database, and the script's start is idempotent."""

from __future__ import annotations

import subprocess

import pytest
import sqlalchemy as sa

from tests.pg.fixture import SCRIPT, PgServer

pytestmark = pytest.mark.postgres


def test_url_works_with_sqlalchemy(pg_url: str) -> None:
    assert pg_url.startswith("postgresql+psycopg://postgres@127.0.0.1:")
    engine = sa.create_engine(pg_url)
    meta = sa.MetaData()
    runs = sa.Table(
        "runs", meta, sa.Column("id", sa.Integer, primary_key=True), sa.Column("name", sa.String(50))
    )
    try:
        meta.create_all(engine)
        with engine.begin() as conn:
            conn.execute(runs.insert(), [{"name": "ddp"}, {"name": "zero3"}])
        with engine.connect() as conn:
            names = conn.execute(sa.select(runs.c.name).order_by(runs.c.id)).scalars().all()
        assert names == ["ddp", "zero3"]
    finally:
        engine.dispose()


def test_each_test_gets_an_empty_database_of_its_own(pg_url: str, pg_server: PgServer) -> None:
    assert pg_url != pg_server.url
    engine = sa.create_engine(pg_url)
    try:
        assert sa.inspect(engine).get_table_names() == []  # the previous test's table is not here
    finally:
        engine.dispose()


def test_start_again_is_a_noop(pg_server: PgServer) -> None:
    env = {"WIREWISE_PG_DIR": str(pg_server.folder), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "already running" in proc.stderr
    assert proc.stdout.strip() == pg_server.url
    url = subprocess.run([str(SCRIPT), "url"], env=env, capture_output=True, text=True, timeout=60)
    assert url.stdout.strip() == pg_server.url
    engine = sa.create_engine(pg_server.url)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT current_database()")).scalar() == "wirewise_test"
    finally:
        engine.dispose()
