"""The store's read path: SQL text run on the database driver's own connection, no SQLAlchemy.

Why not SQLAlchemy here: a query command must start within 3x of `wirewise --help` (issue 21,
item 10), and importing SQLAlchemy's Core alone costs about 100 ms, 1.7x a whole `--help` (60
ms; both on the quiet 2-core machine, `python -X importtime`). Writes and migrations keep
SQLAlchemy (schema.py, orm.py, alembic); the reads are a dozen statements (results.py,
topology.py, campaigns.py), written once for both databases. What differs between SQLite and
PostgreSQL is Dialect's: placeholders, JSON fields, string aggregation, exact float text, NaN,
and the values SQLite keeps as text (JSON, timestamps) or integers (booleans).

A plain SQLite file URL (`sqlite:///PATH`, the default) is opened with the sqlite3 module and the
pragmas every wirewise connection gets (sqlite_pragmas); a PostgreSQL URL of the psycopg driver
(`postgresql+psycopg://...`) with psycopg alone, through libpq's own URI of the same text
(libpq_uri): borrowing the connection from SQLAlchemy's engine imported SQLAlchemy for every
lookup, which kept `results` with a selective filter at 3.9 to 5.9x `--help` on PostgreSQL at
1,250 and 12,500 nodes, against 1.6 to 2.2x on SQLite (docs/scale.md). Any other URL (another
driver, SQLite with query options) borrows a connection from the store's SQLAlchemy engine.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from wirewise.clock import as_utc

MMAP_BYTES = 4 << 30  # address space only; SQLite maps no more than the file holds
_PLAIN_SQLITE = re.compile(r"^sqlite:///(?P<path>[^?#%]+)$")
_PSYCOPG = re.compile(r"^postgresql\+psycopg(?P<rest>://.*)$", re.DOTALL)
# A list longer than this is bound as one parameter (Params.among): well under SQLite's 32,766
# variables and PostgreSQL's 65,535 even with several lists in one statement.
LIST_PLACEHOLDERS = 1000
UPPERMOST = "\uffff"  # after every character of a name: `x >= prefix AND x < prefix + UPPERMOST` is "starts with"


def sqlite_pragmas(busy_s: float) -> list[str]:
    """What every SQLite connection of wirewise runs first (engine.py's module docstring says why)."""
    return [
        "PRAGMA journal_mode=WAL",
        f"PRAGMA busy_timeout={int(busy_s * 1000)}",
        "PRAGMA foreign_keys=ON",
        "PRAGMA synchronous=NORMAL",
        # Read pages straight from the OS cache instead of copying each through read(): a
        # results query over a large history reads tens of thousands of rows at random
        # (34,000 rows from the 1 GB store of tests/benchmarks/bench_results.py: 190 -> 131 ms
        # through sqlite3 alone).
        f"PRAGMA mmap_size={MMAP_BYTES}",
    ]


def plain_sqlite_path(url: str) -> str | None:
    """The file of a `sqlite:///PATH` URL without query options (the sqlite3 module opens it as
    SQLAlchemy would); None for any other URL."""
    match = _PLAIN_SQLITE.match(url)
    return match.group("path") if match else None


def libpq_uri(url: str) -> str | None:
    """The libpq connection URI of a `postgresql+psycopg://...` URL: the same text under libpq's
    own scheme. SQLAlchemy's psycopg dialect hands libpq the same host, port, user, password,
    database and query options (service, sslmode, host=/socket/folder) as keywords; libpq reads
    them from its URI itself, percent-escapes included. None for any other URL."""
    match = _PSYCOPG.match(url)
    return f"postgresql{match.group('rest')}" if match else None


def open_postgresql(uri: str):
    """A psycopg connection (psycopg's default: the first statement begins a transaction)."""
    import psycopg

    return psycopg.connect(uri)


def open_sqlite(path: str, busy_s: float):
    """A sqlite3 connection in autocommit mode (the reader begins its own transaction)."""
    import sqlite3

    conn = sqlite3.connect(path, timeout=busy_s, isolation_level=None)
    try:
        for pragma in sqlite_pragmas(busy_s):
            conn.execute(pragma)
    except sqlite3.Error:
        conn.close()
        raise
    return conn


@dataclass(frozen=True)
class Dialect:
    """The SQL and the values that differ between SQLite and PostgreSQL."""

    name: str  # sqlite | postgresql
    placeholder: str  # the driver's paramstyle: qmark (sqlite3) or format (psycopg)

    @property
    def sqlite(self) -> bool:
        return self.name == "sqlite"

    def json_text(self, column: str, key: str) -> str:
        """A JSON object's field as text (`key` is ours, never user input)."""
        return f"json_extract({column}, '$.{key}')" if self.sqlite else f"({column} ->> '{key}')"

    def gather(self, text: str, separator: str) -> str:
        """A group's non-NULL texts joined by `separator`."""
        return f"group_concat({text}, '{separator}')" if self.sqlite else f"string_agg({text}, '{separator}')"

    def number(self, column: str) -> str:
        """A float column with NaN as NULL: PostgreSQL stores NaN (where NaN = NaN holds);
        SQLite has stored it as NULL already."""
        return column if self.sqlite else f"NULLIF({column}, CAST('NaN' AS DOUBLE PRECISION))"

    def exact_text(self, column: str) -> str:
        """A float column as text that reads back as the same float, NULL where the value is
        missing: SQLite's CAST keeps only 15 digits, its printf 17 (what a double needs) but
        prints NULL as '0.0'; PostgreSQL's text is already the shortest exact form."""
        if self.sqlite:
            return f"CASE WHEN {column} IS NULL THEN NULL ELSE printf('%!.17g', {column}) END"
        return f"CAST({self.number(column)} AS TEXT)"

    def seldom(self, condition: str) -> str:
        """A condition few rows meet, said so to SQLite's planner (unlikely()). Its statistics
        keep one average of rows per value of an index, so a label few rows carry looks as
        common as the one nearly every row carries: the pair tests' `placement = 'pair'` (12,500
        of 2,512,500 results of the 12,500-node fleet of docs/scale.md) looked like half the
        table, and the pair tests were read by walking every result in ended_at order (11.4 s,
        0.08 s through the placement index). PostgreSQL keeps each column's most common values
        and needs no hint."""
        return f"unlikely({condition})" if self.sqlite else condition

    # -- values ------------------------------------------------------------------------
    def moment(self, value: datetime) -> Any:
        """A timestamp as a parameter, in UTC (wirewise.clock): SQLite holds the text
        SQLAlchemy's DateTime writes (the UTC wall time, microseconds always), so a zoned time
        is converted before its wall time is written; PostgreSQL takes the zoned datetime (a
        naive one it would read in the session's TimeZone, not UTC)."""
        value = as_utc(value)
        if not self.sqlite:
            return value
        return (f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
                f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond:06d}")

    def when(self, value: Any) -> datetime | None:
        """A timestamp read back, in UTC: SQLite keeps the text SQLAlchemy's DateTime wrote, the
        UTC wall time without a zone; PostgreSQL's timestamptz comes back in the session's
        TimeZone (the server's `timezone`, or PGTZ), which need not be UTC. Every stored time
        read goes through here, so every one printed is UTC and says so."""
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        return as_utc(value) if isinstance(value, datetime) else value

    def json(self, value: Any) -> Any:
        """A JSON column read back: text on SQLite, decoded already by psycopg."""
        return json.loads(value) if isinstance(value, str) else value

    def flag(self, value: Any) -> bool | None:
        """A boolean read back: SQLite keeps 0 and 1."""
        return None if value is None else bool(value)


SQLITE = Dialect("sqlite", "?")
POSTGRESQL = Dialect("postgresql", "%s")


def in_chunks(values: list) -> list[list]:
    """`values` in slices of at most LIST_PLACEHOLDERS: for SQLAlchemy's `column.in_(...)` in a
    write, which binds a parameter per value (Params.among says why a fleet's list must not)."""
    return [values[start:start + LIST_PLACEHOLDERS] for start in range(0, len(values), LIST_PLACEHOLDERS)]


def _array_text(values: list) -> str:
    """A list as PostgreSQL's text of an array, every element quoted (a quote or backslash in it
    escaped). Bound as a parameter of no type (psycopg sends a str so), it takes the array type of
    the column it is compared with: an array of another type (BIGINT[] against an INTEGER id)
    compares across types, which PostgreSQL does not hash, and it searched the 40,000 ids of
    tests/store/test_fleet_lists.py one by one for each row (24 s, 2.9 s with the column's own type)."""
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TypeError(f"no PostgreSQL array text for {type(value).__name__} {value!r}")
    quoted = (str(value).replace("\\", "\\\\").replace('"', '\\"') for value in values)
    return "{" + ",".join(f'"{text}"' for text in quoted) + "}"


class Params:
    """The parameters of one statement, in the order their placeholders are written."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.values: list[Any] = []

    def __call__(self, value: Any) -> str:
        self.values.append(value)
        return self.dialect.placeholder

    def among(self, column: str, values) -> str:
        """The condition `column IN values`, for a list of any length (empty: no row).

        A short list gets a placeholder per value, which both planners read best. Beyond
        LIST_PLACEHOLDERS the list is bound as one parameter: SQLite binds at most 32,766
        variables per statement and PostgreSQL 65,535, so one placeholder per node fails at
        100,000 nodes. SQLite reads it back as rows, `IN (SELECT value FROM json_each(?))`, which
        it builds into a temporary index once. PostgreSQL gets the array itself, `column =
        ANY(%s)` of the column's own type (_array_text): a hashed lookup in a scan's filter, or
        an index scan's array, whatever its statistics say. Read back as rows there (`IN (SELECT
        unnest(...))`), the list became a join whose sizes the planner guesses, and with no
        statistics yet (the first `fleet status` after 40,000 nodes were recorded) it took the
        actions' side for one row and joined them in a nested loop: 40,000 x 40,000
        comparisons, `health.actions(last=1)` cancelled at 120 s where the array takes 4 to 6 s
        (tests/store/test_fleet_lists.py, the shared 2-core machine)."""
        return self._listed(column, values, negated=False)

    def not_among(self, column: str, values) -> str:
        """The condition `column NOT IN values` (empty: every row), written as `among` says."""
        return self._listed(column, values, negated=True)

    def _listed(self, column: str, values, negated: bool) -> str:
        values = list(values)
        if not values:
            return "1 = 1" if negated else "1 = 0"
        keyword = "NOT IN" if negated else "IN"
        if len(values) <= LIST_PLACEHOLDERS:
            return f"{column} {keyword} ({', '.join(self(value) for value in values)})"
        if self.dialect.sqlite:
            return f"{column} {keyword} (SELECT value FROM json_each({self(json.dumps(values))}))"
        array = self(_array_text(values))
        return f"{column} <> ALL({array})" if negated else f"{column} = ANY({array})"


class Reader:
    """One read transaction on a driver connection (Store.read)."""

    def __init__(self, connection, dialect: Dialect) -> None:
        self.connection = connection
        self.dialect = dialect

    def params(self) -> Params:
        return Params(self.dialect)

    def rows(self, sql: str, params: Params | None = None) -> list[tuple]:
        cursor = self.connection.cursor()
        try:
            if params is None or not params.values:
                cursor.execute(sql)
            else:
                cursor.execute(sql, params.values)
            return cursor.fetchall()
        finally:
            cursor.close()

    def column(self, sql: str, params: Params | None = None) -> list:
        return [row[0] for row in self.rows(sql, params)]

    def scalar(self, sql: str, params: Params | None = None) -> Any:
        rows = self.rows(sql, params)
        return rows[0][0] if rows else None

