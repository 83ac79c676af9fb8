"""Open the database, apply migrations on first use, hand out readers and sessions.

SQLite (the embedded default) is opened in WAL mode with a busy timeout, and
every write transaction starts with BEGIN IMMEDIATE: many rank processes and
campaign tasks can then write at once without "database is locked" (a deferred
transaction that upgrades to a writer fails at once instead of waiting). Queries
(`Store.read`) begin deferred: in WAL mode a reader needs no lock, so a long report
does not stop campaigns from storing results.

Reads run SQL text on the driver's connection, sqlite3's or psycopg's (read.py says why);
writes and migrations go through SQLAlchemy, imported on the first write. A store that is up to date is recognised by
one SELECT of alembic_version, so a query command never imports SQLAlchemy or alembic.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import wirewise.db
from wirewise.db import HEAD
from wirewise.errors import UserError
from wirewise.settings import setting, user_file
from wirewise.orchestrator.store.read import (POSTGRESQL, SQLITE, Reader, libpq_uri, open_postgresql, open_sqlite,
                                              plain_sqlite_path, sqlite_pragmas)

if TYPE_CHECKING:
    from sqlalchemy.engine import URL, Engine
    from sqlalchemy.orm import Session

MIGRATIONS = Path(wirewise.db.__file__).parent
SQLITE_BUSY_TIMEOUT_S = 60
READ_ONLY = "wirewise_read_only"  # execution option of the engine's reading connections: a deferred BEGIN
WRITE_ATTEMPTS = 4
T = TypeVar("T")


class DatabaseBusy(Exception):
    """A write found the database locked by other writers for longer than the busy timeout."""


class DatabaseUnavailable(UserError):
    """The configured database cannot be used for reading: NoDatabase or DatabaseUnreachable.
    What a command that only reads catches to say so in its own way (the health check and the
    prolog exit 0 with a note); anywhere else it is the one error line, exit 2."""


class NoDatabase(DatabaseUnavailable):
    """The SQLite file the settings name does not exist: nothing was ever stored there, and a
    command that only reads does not create it (Store.existing)."""


class DatabaseUnreachable(DatabaseUnavailable):
    """A database server that does not answer, or refuses the connection."""


def db_wait_s() -> float:
    """How long a result waits for a busy database before wirewise gives up storing it (and
    says where its file is): the setting db_wait_s (WIREWISE_DB_WAIT_S), default 600 s."""
    return setting("db_wait_s").value


def busy_timeout_s() -> float:
    """How long one SQLite statement waits for a lock: never longer than the whole patience."""
    return min(SQLITE_BUSY_TIMEOUT_S, db_wait_s())


def resolve_url(url: str | None) -> str:
    """`--db` as typed, else the setting db (WIREWISE_DB, the user's file, the site's file, the
    SQLite file in the user's data folder: wirewise.settings)."""
    return setting("db", url).value


def display_url(url: str | None) -> str:
    """The database URL as shown to people: resolved, a SQLite file by its absolute path (the
    actual file, wherever the command ran), password hidden."""
    return _absolute(url).render_as_string(hide_password=True)


def absolute_url(url: str | None) -> str:
    """The database URL as every node of a job can open it: resolved, a relative SQLite path
    made absolute, the password kept (the job needs it)."""
    return _absolute(url).render_as_string(hide_password=False)


def _absolute(url: str | None) -> URL:
    parsed = parse_url(resolve_url(url))
    if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
        parsed = parsed.set(database=str(Path(parsed.database).expanduser().resolve()))
    return parsed


def parse_url(url: str) -> URL:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise UserError(f"not a database URL: {url!r} (try sqlite:///wirewise.db or postgresql+psycopg://user@host/db)") from None


def check_sqlite_file(url: str, database: str | None, memory: bool = False) -> None:
    """A SQLite database wirewise can keep: a file, in a folder that exists."""
    if not database or database == ":memory:" or memory:
        raise UserError(f"--db {url}: an in-memory SQLite database keeps nothing once wirewise exits; give a file, e.g. sqlite:///wirewise.db")
    path = Path(database).expanduser().resolve()
    if not path.parent.is_dir():
        raise UserError(f"database folder does not exist: {path.parent}")
    if path.exists() and not path.is_file():  # a folder, a device such as /dev/zero, a FIFO
        raise UserError(f"--db {url}: {path} is not a regular file; give a database file, e.g. sqlite:///wirewise.db")


def make_engine(url: str) -> Engine:
    """An engine for `url`; SQLite gets WAL, a busy timeout and BEGIN IMMEDIATE (the module's
    docstring says why). alembic's env (wirewise.db.env) uses it too."""
    from sqlalchemy import create_engine, event
    from sqlalchemy.exc import NoSuchModuleError

    parsed = parse_url(url)
    if parsed.get_backend_name() != "sqlite":
        try:
            return create_engine(url, pool_pre_ping=True)
        except (NoSuchModuleError, ImportError) as exc:
            raise no_driver(parsed.drivername, exc) from None
    check_sqlite_file(url, parsed.database, parsed.query.get("mode") == "memory")
    busy_s = busy_timeout_s()
    engine = create_engine(url, connect_args={"timeout": busy_s, "isolation_level": None})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:
        cur = dbapi_conn.cursor()
        for pragma in sqlite_pragmas(busy_s):
            cur.execute(pragma)
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get(READ_ONLY) else "BEGIN IMMEDIATE")

    return engine


def no_driver(drivername: str, exc: Exception) -> UserError:
    return UserError(f"no database driver for {drivername!r} ({exc}); use sqlite:///PATH or postgresql+psycopg://...")


def no_database_message(found, path: Path) -> str:
    return (f"no database at {path}{_from(found)}: nothing is stored there yet. A benchmark, `topo save` or "
            f"`import` creates it; to read another, give --db URL, or set WIREWISE_DB or `db` in "
            f"{user_file()} (`wirewise config show`)")


def _from(found) -> str:
    return f" ({found.origin})"


_RAW_PASSWORD = re.compile(r"^[^:/]+://[^:/@]*:([^@]*)@")  # a URL's password as typed, escapes and all
MIGRATION_LOCK_KEY = 0x77697265  # "wire": the PostgreSQL advisory lock migrations take


def _revision(conn) -> str | None:
    from sqlalchemy import inspect, text

    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _sqlite_state(conn) -> str:
    """idle (ready for a read) or busy (a read is under way on it)."""
    return "busy" if conn.in_transaction else "idle"


def _postgresql_state(conn) -> str:
    """idle, busy, or dead: closed, or no answer to a SELECT (the server restarted since the last
    read; what SQLAlchemy's pool_pre_ping asked before each use)."""
    import psycopg
    from psycopg.pq import TransactionStatus

    if conn.closed or conn.broken:
        return "dead"
    if conn.info.transaction_status != TransactionStatus.IDLE:
        return "busy"
    try:
        conn.execute("SELECT 1")
        conn.rollback()
    except psycopg.Error:
        conn.close()
        return "dead"
    return "idle"


class Store:
    """A database at a URL, migrated to the newest schema. A plain SQLite file and a psycopg
    PostgreSQL URL are read without SQLAlchemy; the engine is made on first use (a write, a
    migration, another kind of URL)."""

    def __init__(self, url: str | None = None, *, migrate: bool = True) -> None:
        self.setting = setting("db", url)
        self.url = self.setting.value
        self._file = plain_sqlite_path(self.url)
        self._libpq = libpq_uri(self.url)
        if self._file is not None and self.setting.is_default:
            Path(self._file).parent.mkdir(parents=True, exist_ok=True)  # the user's data folder, made on first write
        self._readers: dict[tuple[int, int], Any] = {}  # (pid, thread) -> its sqlite3 or psycopg connection
        self._engine: Engine | None = None
        if self._file is not None:
            check_sqlite_file(self.url, self._file)
        elif self._libpq is None:
            self._engine = make_engine(self.url)
        if migrate:
            self.upgrade()

    @classmethod
    def existing(cls, url: str | None = None) -> Store:
        """The store the settings name (`url`: --db as typed), which must exist: a command that
        only reads never creates a database. NoDatabase where its SQLite file does not exist,
        DatabaseUnreachable where its server does not answer; both are DatabaseUnavailable."""
        found = setting("db", url)
        database = plain_sqlite_path(found.value)
        if database is None and libpq_uri(found.value) is None:
            parsed = parse_url(found.value)
            database = parsed.database if parsed.get_backend_name() == "sqlite" else None
        if database not in (None, "", ":memory:") and not Path(database).expanduser().exists():
            raise NoDatabase(no_database_message(found, Path(database).expanduser().resolve()))
        return cls(url)

    @classmethod
    def open_existing(cls, url: str | None = None) -> Store | None:
        """The store the settings name, or None where its SQLite file does not exist: advice
        without history, and no database created."""
        try:
            return cls.existing(url)
        except NoDatabase:
            return None

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = make_engine(self.url)
        return self._engine

    @property
    def safe_url(self) -> str:
        return display_url(self.url)

    # -- schema ---------------------------------------------------------
    def _alembic_config(self):
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        cfg.attributes["connection_url"] = self.url
        return cfg

    def current_revision(self) -> str | None:
        try:  # the common case, a versioned store: one SELECT
            with self.read() as db:
                return db.scalar("SELECT version_num FROM alembic_version")
        except self._driver_errors():
            pass  # no alembic_version, or no database at all: the inspection below tells which
        from sqlalchemy.exc import DatabaseError

        try:
            with self.engine.execution_options(**{READ_ONLY: True}).connect() as conn:
                return _revision(conn)
        except DatabaseError as exc:  # not a database at all, or one that cannot be opened
            raise self._unreachable(exc.orig) from None

    def _unreachable(self, exc: Exception) -> DatabaseUnreachable:
        """The driver's first line, without the URL's password: libpq quotes the token it could
        not read, which may be the password itself."""
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        for secret in {parse_url(self.url).password, *_RAW_PASSWORD.findall(self.url)} - {None, ""}:
            first_line = first_line.replace(secret, "***")
        return DatabaseUnreachable(f"cannot open database {self.safe_url}{_from(self.setting)}: {first_line}")

    def _driver_errors(self) -> tuple[type[Exception], ...]:
        """What the driver raises for a failed statement or connection (PEP 249's Error)."""
        if self._file is not None:
            import sqlite3

            return (sqlite3.Error,)
        if self._libpq is not None:
            import psycopg

            return (psycopg.Error,)
        return (self.engine.dialect.loaded_dbapi.Error,)

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
        from sqlalchemy import text

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
        from sqlalchemy import inspect

        from wirewise.orchestrator.store.schema import METADATA

        ours = sorted(set(inspect(conn).get_table_names()) & set(METADATA.tables))
        if ours:
            raise UserError(
                f"database {self.safe_url} holds wirewise tables ({', '.join(ours)}) but no alembic_version, so its "
                "schema is unknown: give another --db, or move this one away"
            )

    # -- use ------------------------------------------------------------
    @contextmanager
    def read(self) -> Iterator[Reader]:
        """A Reader for queries, in one transaction (one snapshot). On SQLite it begins deferred,
        without the write lock session() takes at once: a report reading for seconds leaves
        campaigns free to store results meanwhile. (A write here could fail at once, busy,
        instead of waiting its turn: write through session() or write().)"""
        keep = False
        if self._file is not None:
            (conn, keep), dialect = self._kept_connection(self._open_sqlite, _sqlite_state), SQLITE
        elif self._libpq is not None:
            (conn, keep), dialect = self._kept_connection(self._open_postgresql, _postgresql_state), POSTGRESQL
        else:
            conn = self.engine.raw_connection()
            dialect = SQLITE if self.engine.dialect.name == "sqlite" else POSTGRESQL
        try:
            if dialect.sqlite:
                conn.cursor().execute("BEGIN")
            yield Reader(conn, dialect)
        finally:
            try:
                conn.rollback()
            finally:
                if not keep:
                    conn.close()

    def _kept_connection(self, open_new: Callable[[], Any], state: Callable[[Any], str]) -> tuple[Any, bool]:
        """(a driver connection, whether it is kept): this process's and thread's own, kept between
        reads, so that a command that reads several times (results 4 times, compare and report
        more) connects once: SQLite's page cache and memory map stay warm (each page mapped
        once), and PostgreSQL's connection is made once (37 ms of wall time each at load 20 on
        the shared 2-core machine, 8 ms for a SELECT on a kept one). A fresh one, closed after,
        for a read begun inside another (`state` busy); a kept one that is dead is replaced."""
        key = (os.getpid(), threading.get_ident())
        kept = self._readers.get(key)
        now = state(kept) if kept is not None else "dead"
        if now == "idle":
            return kept, True
        conn = open_new()
        if now == "busy":
            return conn, False
        self._readers[key] = conn
        return conn, True

    def _open_sqlite(self):
        return open_sqlite(self._file, busy_timeout_s())

    def _open_postgresql(self):
        try:
            import psycopg
        except ImportError as exc:
            raise no_driver("postgresql+psycopg", exc) from None
        try:
            return open_postgresql(self._libpq)
        except psycopg.Error as exc:  # refused, no such host or database, bad password, a malformed URI
            raise self._unreachable(exc) from None

    @contextmanager
    def session(self) -> Iterator[Session]:
        """An ORM session for writes, committed on success, rolled back on error."""
        from sqlalchemy.orm import Session

        with Session(self.engine, expire_on_commit=False) as session, session.begin():
            yield session

    def write(self, work: Callable[[Session], T]) -> T:
        """Run `work(session)` as one transaction: all of it is stored or none. A concurrent
        writer may insert the same unique row (a wiring, a node, their pair) between our read
        and our write: the transaction is then run again, and each retry finds one more of
        those rows in place (8 writers of one new wiring on PostgreSQL needed more than two).
        A database still locked after the busy timeout raises DatabaseBusy."""
        from sqlalchemy.exc import IntegrityError, OperationalError

        try:
            for _ in range(WRITE_ATTEMPTS - 1):
                try:
                    with self.session() as session:
                        return work(session)
                except IntegrityError:
                    continue
            with self.session() as session:
                return work(session)
        except OperationalError as exc:
            if "locked" in str(exc).lower() or "busy" in str(exc).lower():
                raise DatabaseBusy(str(exc.orig)) from exc
            raise

    def row_counts(self) -> dict[str, int]:
        from wirewise.orchestrator.store.schema import METADATA

        with self.read() as db:
            return {name: db.scalar(f"SELECT count(*) FROM {name}") for name in METADATA.tables}
