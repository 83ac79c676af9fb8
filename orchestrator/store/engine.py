"""Open the database, apply migrations on first use, hand out sessions.

SQLite (the embedded default) is opened in WAL mode with a busy timeout, and
every write transaction starts with BEGIN IMMEDIATE: many rank processes and
campaign tasks can then write at once without "database is locked" (a deferred
transaction that upgrades to a writer fails at once instead of waiting). Queries
(`Store.read`) begin deferred: in WAL mode a reader needs no lock, so a long report
does not stop campaigns from storing results.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from sqlalchemy import create_engine, event, func, inspect, select, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, IntegrityError, NoSuchModuleError
from sqlalchemy.orm import Session, sessionmaker

import wirewise.db
from wirewise.db import HEAD
from wirewise.errors import UserError

DEFAULT_URL = "sqlite:///wirewise.db"
MIGRATIONS = Path(wirewise.db.__file__).parent
SQLITE_BUSY_TIMEOUT_S = 60
MMAP_BYTES = 4 << 30  # address space only; SQLite maps no more than the file holds
READ_ONLY = "wirewise_read_only"  # execution option of Store.read's connections: a deferred BEGIN
WAIT_ENV = "WIREWISE_DB_WAIT_S"  # how long storing results waits for a busy database in all (default 600 s)


def db_wait_s() -> float:
    """How long a result waits for a busy database before wirewise gives up storing it (and
    says where its file is): $WIREWISE_DB_WAIT_S, default 600 s."""
    try:
        return max(0.0, float(os.environ.get(WAIT_ENV, "600")))
    except ValueError:
        raise UserError(f"{WAIT_ENV}={os.environ[WAIT_ENV]!r}: give a number of seconds") from None
T = TypeVar("T")
WRITE_ATTEMPTS = 4


def resolve_url(url: str | None) -> str:
    """`--db`, else WIREWISE_DB, else the SQLite file in the current folder."""
    return url or os.environ.get("WIREWISE_DB") or DEFAULT_URL


def display_url(url: str | None) -> str:
    """The database URL as shown to people: resolved, password hidden."""
    return make_url(resolve_url(url)).render_as_string(hide_password=True)


def make_engine(url: str) -> Engine:
    """An engine for `url`; SQLite gets WAL, a busy timeout and BEGIN IMMEDIATE (the module's
    docstring says why). alembic's env (wirewise.db.env) uses it too."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise UserError(f"not a database URL: {url!r} (try sqlite:///wirewise.db or postgresql+psycopg://user@host/db)")
    if parsed.get_backend_name() != "sqlite":
        try:
            return create_engine(url, pool_pre_ping=True)
        except (NoSuchModuleError, ImportError) as exc:
            raise UserError(f"no database driver for {parsed.drivername!r} ({exc}); use sqlite:///PATH or postgresql+psycopg://...") from None
    if not parsed.database or parsed.database == ":memory:" or parsed.query.get("mode") == "memory":
        raise UserError(f"--db {url}: an in-memory SQLite database keeps nothing once wirewise exits; give a file, e.g. sqlite:///wirewise.db")
    path = Path(parsed.database).expanduser().resolve()
    if not path.parent.is_dir():
        raise UserError(f"database folder does not exist: {path.parent}")
    if path.exists() and not path.is_file():  # a folder, a device such as /dev/zero, a FIFO
        raise UserError(f"--db {url}: {path} is not a regular file; give a database file, e.g. sqlite:///wirewise.db")
    busy_s = min(SQLITE_BUSY_TIMEOUT_S, db_wait_s())  # one wait never outlasts the whole patience
    engine = create_engine(
        url,
        connect_args={"timeout": busy_s, "isolation_level": None},
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={int(busy_s * 1000)}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        # Read pages straight from the OS cache instead of copying each through read(): a
        # results query over a large history reads tens of thousands of rows at random
        # (34,000 rows from the 1 GB store of tests/benchmarks/bench_results.py: 190 -> 131 ms
        # through sqlite3 alone).
        cur.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get(READ_ONLY) else "BEGIN IMMEDIATE")

    return engine


MIGRATION_LOCK_KEY = 0x77697265  # "wire": the PostgreSQL advisory lock migrations take


def _revision(conn) -> str | None:
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


class Store:
    """A database at a URL, migrated to the newest schema."""

    def __init__(self, url: str | None = None, *, migrate: bool = True) -> None:
        self.url = resolve_url(url)
        self.engine = make_engine(self.url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._readers = sessionmaker(self.engine.execution_options(**{READ_ONLY: True}), expire_on_commit=False)
        if migrate:
            self.upgrade()

    # -- schema ---------------------------------------------------------
    def _alembic_config(self):
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        cfg.attributes["connection_url"] = self.url
        return cfg

    def current_revision(self) -> str | None:
        try:
            with self.engine.execution_options(**{READ_ONLY: True}).connect() as conn:
                return _revision(conn)
        except DatabaseError as exc:  # not a database at all, or one that cannot be opened
            first_line = str(exc.orig).strip().splitlines()[0]
            raise UserError(f"cannot open database {self.safe_url}: {first_line}") from None

    def upgrade(self) -> None:
        """Apply pending migrations; a no-op (no alembic import) when the schema is current.
        A schema this wirewise cannot migrate is a one-line UserError, never a half-migrated store.

        Migrating holds the database's write lock from the first look to the last statement
        (SQLite: BEGIN IMMEDIATE; PostgreSQL: a transaction-scoped advisory lock, and its DDL is
        transactional), the way concurrent imports take turns: two commands opening a new
        database at once find it unmigrated, one migrates, the other waits and then finds it
        current, instead of seeing the first one's tables without their alembic_version."""
        if self.current_revision() == HEAD:
            return
        from alembic import command
        from alembic.script import ScriptDirectory

        config = self._alembic_config()
        known = {script.revision for script in ScriptDirectory.from_config(config).walk_revisions()}
        with self.engine.connect() as conn, conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            revision = _revision(conn)  # again, under the lock: another command may have migrated meanwhile
            if revision == HEAD:
                return
            if revision is None:
                self._check_unversioned(conn)
            elif revision not in known:
                raise UserError(
                    f"database {self.safe_url} has schema revision {revision!r}, newer than this wirewise knows "
                    f"(up to {HEAD}): upgrade wirewise"
                )
            config.attributes["connection"] = conn  # wirewise.db.env migrates inside this transaction
            command.upgrade(config, "head")

    def _check_unversioned(self, conn) -> None:
        """wirewise's tables without alembic_version: made some other way; migrating would fail."""
        from wirewise.orchestrator.store.models import Base

        ours = sorted(set(inspect(conn).get_table_names()) & set(Base.metadata.tables))
        if ours:
            raise UserError(
                f"database {self.safe_url} holds wirewise tables ({', '.join(ours)}) but no alembic_version, so its "
                "schema is unknown: give another --db, or move this one away"
            )

    # -- use ------------------------------------------------------------
    @property
    def safe_url(self) -> str:
        return display_url(self.url)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session committed on success, rolled back on error."""
        with self._sessions() as session, session.begin():
            yield session

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session for queries only. On SQLite its transaction begins deferred, without the
        write lock session() takes at once: a report reading for seconds leaves campaigns
        free to store results meanwhile. (A write here could fail at once, busy, instead of
        waiting its turn: write through session() or write().)"""
        with self._readers() as session, session.begin():
            yield session

    def write(self, work: Callable[[Session], T]) -> T:
        """Run `work(session)` as one transaction: all of it is stored or none. A concurrent
        writer may insert the same unique row (a wiring, a node, their pair) between our read
        and our write: the transaction is then run again, and each retry finds one more of
        those rows in place (8 writers of one new wiring on PostgreSQL needed more than two)."""
        for _ in range(WRITE_ATTEMPTS - 1):
            try:
                with self.session() as session:
                    return work(session)
            except IntegrityError:
                continue
        with self.session() as session:
            return work(session)

    def row_counts(self) -> dict[str, int]:
        from wirewise.orchestrator.store.models import Base

        with self.read() as s:
            return {
                name: s.execute(select(func.count()).select_from(table)).scalar_one()
                for name, table in Base.metadata.tables.items()
            }
