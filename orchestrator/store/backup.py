"""`wirewise db backup DEST`: a consistent copy of a SQLite store, WAL included.

A SQLite store in WAL mode keeps its newest transactions in `wirewise.db-wal` until a
checkpoint moves them into `wirewise.db`: copying the .db file alone loses them (seen: a 4 KB
.db beside a 325 KB -wal; the copy read 0 rows). SQLite's online backup API copies the database
as a reader sees it, WAL included, page by page in one read transaction, while other
processes go on writing (https://www.sqlite.org/backup.html). The copy is written beside DEST
and renamed onto it once complete and checked, so DEST is never half a database.

PostgreSQL has its own tool for this, pg_dump; the command to run is named instead.
"""

from __future__ import annotations

import os
import shlex
import sqlite3
from pathlib import Path
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.store.engine import Store, parse_url

PAGES_PER_STEP = 1024  # 4 MB at SQLite's default page size: writers get the lock between steps


def backup(store: Store, dest: Path) -> dict[str, Any]:
    """Copy the store to `dest` (a new file); what was copied: the file, its rows per table."""
    parsed = parse_url(store.url)
    if parsed.get_backend_name() != "sqlite":
        raise UserError(f"db backup copies SQLite files; back up PostgreSQL with pg_dump: {pg_dump_command(store.url, dest)}")
    source = Path(parsed.database).expanduser().resolve()
    dest = dest.expanduser().absolute()
    if dest.exists() or dest.is_symlink():
        raise UserError(f"{dest} exists: give a new file (db backup never overwrites)")
    if not dest.parent.is_dir():
        raise UserError(f"folder does not exist: {dest.parent}")
    if dest.resolve() == source:
        raise UserError(f"{dest} is the database itself: give another file")
    partial = dest.with_name(f".{dest.name}.partial-{os.getpid()}")
    try:
        _copy(source, partial)
        rows = _rows(partial)
        os.link(partial, dest)  # fails where DEST appeared meanwhile, instead of replacing it
    except sqlite3.Error as exc:
        raise UserError(f"cannot back up {source}: {exc}") from None
    except FileExistsError:
        raise UserError(f"{dest} exists: give a new file (db backup never overwrites)") from None
    finally:
        partial.unlink(missing_ok=True)
    return {"database": str(source), "backup": str(dest), "revision": store.current_revision(), "rows": rows}


def _copy(source: Path, partial: Path) -> None:
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(partial)
    try:
        src.backup(dst, pages=PAGES_PER_STEP)
        dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
    finally:
        dst.close()
        src.close()


def _rows(path: Path) -> dict[str, int]:
    """Rows per table of the copy, after SQLite's own check of its pages and indexes."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        problem = conn.execute("PRAGMA quick_check").fetchone()[0]
        if problem != "ok":
            raise sqlite3.DatabaseError(f"the copy failed SQLite's check: {problem}")
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {name: conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in tables}
    finally:
        conn.close()


def pg_dump_command(url: str, dest: Path) -> str:
    """The pg_dump command for the database at `url`, password left to libpq (~/.pgpass or
    PGPASSFILE, PGSERVICE), since a command line is seen by every user of the machine."""
    parsed = parse_url(url)
    libpq = parsed.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    return f"pg_dump --format=custom --file={shlex.quote(str(dest))} {shlex.quote(libpq)}"
