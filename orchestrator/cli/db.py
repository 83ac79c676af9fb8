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


@app.command()
def prune(
    before: Annotated[str, typer.Option("--before", help="Remove what started before this: 2026-06-01, 2026-06-01T12:00, or an age: 180d.")],
    keep_baselines: Annotated[bool, typer.Option("--keep-baselines", help="Also keep each wiring's newest results of every case, which its baseline rests on (doctor and the prolog judge it as before).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would be removed; remove nothing.")] = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Remove results (and node checks) older than a date, in one transaction. Kept: imported
    baselines, findings and the results they rest on, each node's latest check, the audit trail
    of drains and re-tests, campaigns and wirings."""
    from wirewise.orchestrator.health.baseline import BASELINE_RESULTS
    from wirewise.orchestrator.results.filters import parse_since
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.prune import prune as remove

    when = parse_since(before, option="--before")  # a bad date is refused before the database is opened
    done = remove(Store.existing(db), when, BASELINE_RESULTS if keep_baselines else None, dry_run)
    if json:
        print_json(done)
        return
    verb = "would remove" if dry_run else "removed"
    kept = done["kept"]
    typer.echo(f"{verb} {done['removed']['results']} results and {done['removed']['node_checks']} node checks from before "
               f"{done['before']}; kept {kept['results_older_kept_for_findings']} older results findings rest on"
               + (f" and {kept['results_older_kept_for_baselines']} baselines rest on" if keep_baselines else "")
               + f"; {done['results_remaining']} results remain")
