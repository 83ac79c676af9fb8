"""`wirewise db`: the results database."""

import typer

from wirewise.orchestrator.cli.common import DbOption, JsonOption, command_group, console, print_json

app = command_group("The results database: schema and contents.")


@app.command()
def info(db: DbOption = None, json: JsonOption = False) -> None:
    """Show the database URL, schema revision and row counts (creates the database if missing)."""
    from wirewise.orchestrator.store import HEAD
    from wirewise.orchestrator.store import Store

    store = Store(db)
    info = {"url": store.safe_url, "revision": store.current_revision(), "head": HEAD, "rows": store.row_counts()}
    if json:
        print_json(info)
        return
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"{escape(info['url'])}  (schema {info['revision']})", show_header=True)
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
