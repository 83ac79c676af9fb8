"""`wirewise db`: the results database."""

from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import DbOption, JsonOption, command_group, console, print_json

app = command_group("The results database: schema, contents, backup.")


@app.command()
def info(db: DbOption = None, json: JsonOption = False) -> None:
    """Show the database URL, schema revision and row counts (exit 2 where there is no database)."""
    from wirewise.orchestrator.store import HEAD
    from wirewise.orchestrator.store import Store

    store = Store.existing(db)
    info = {"url": store.safe_url, "revision": store.current_revision(), "head": HEAD, "rows": store.row_counts()}
    if json:
        print_json(info)
        return
    from rich.table import Table

    typer.echo(f"{info['url']}  (schema {info['revision']})")  # one line, never wrapped: it names the file
    table = Table(show_header=True)
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, count in info["rows"].items():
        table.add_row(name, str(count))
    console().print(table)


@app.command()
def upgrade(db: DbOption = None) -> None:
    """Apply pending schema migrations (also done automatically on first use)."""
    from wirewise.orchestrator.store import Store

    store = Store(db, migrate=False)
    before = store.current_revision()
    store.upgrade()
    after = store.current_revision()
    typer.echo(f"{store.safe_url}: schema {before or 'empty'} -> {after}" if before != after else f"{store.safe_url}: schema {after} is current")


@app.command()
def backup(
    dest: Annotated[str, typer.Argument(help="The new file to write the copy to.")],
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Copy the SQLite database to DEST, consistent and whole (SQLite's backup API: the rows still
    in the write-ahead log too) while others go on writing; for PostgreSQL, the pg_dump command."""
    from pathlib import Path

    from wirewise.errors import UserError
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.backup import backup as copy

    if not dest.strip():
        raise UserError("db backup '': give the file to write, e.g. wirewise db backup wirewise-backup.db")
    done = copy(Store.existing(db), Path(dest))
    if json:
        print_json(done)
        return
    typer.echo(f"backed up {done['database']} to {done['backup']}: {sum(done['rows'].values())} rows in "
               f"{len(done['rows'])} tables, schema {done['revision']}")
    typer.echo(f"to use it: --db sqlite:///{done['backup']} (or copy it over the database while no wirewise runs)")
