"""`wirewise config show`: each site setting, its value and where it came from (wirewise.settings
resolves them; this module prints)."""

from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import JsonOption, command_group, print_json, print_tables

app = command_group(
    "Site settings: the site's file (/etc/wirewise/config.toml), the user's (~/.config/wirewise/config.toml), "
    "environment variables, flags, each over the one before (docs/configuration.md)."
)


@app.command()
def show(
    keys: Annotated[list[str] | None, typer.Argument(help="Only these settings (db, rules, partition, runs, db_wait_s, guardrails).")] = None,
    json: JsonOption = False,
) -> None:
    """Print each setting, its value and where it came from: a flag's place is the command line,
    so what shows here is what a command run now without flags would use."""
    from wirewise.errors import UserError
    from wirewise.settings import BY_KEY, data_dir, every_setting, site_file, user_file

    known = [*BY_KEY, "guardrails"]
    for key in keys or []:
        if key not in known:
            raise UserError(f"config show {key!r}: not a setting; choose from {', '.join(known)}")
    rows = [{"key": v.key, "value": v.value, "from": v.origin} for v in every_setting()]
    if not keys or "guardrails" in keys:
        rows += _guardrails()
    if keys:
        rows = [row for row in rows if row["key"].split(".")[0] in keys]
    files = [{"file": str(path), "role": role, "exists": path.is_file()} for role, path in (("site", site_file()), ("user", user_file()))]
    if json:
        print_json({"settings": rows, "files": files, "data_dir": str(data_dir())})
        return
    from rich.table import Table

    table = Table(title="wirewise settings", title_justify="left")
    for name in ("setting", "value", "from"):
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(row["key"], "" if row["value"] is None else str(row["value"]), row["from"])
    print_tables([table])
    for row in files:
        typer.echo(f"{row['role']} file: {row['file']}{'' if row['exists'] else ' (none)'}")


def _guardrails() -> list[dict]:
    """The guardrails in force: they live in the rules (one home), read from the rules file the
    settings name or the shipped one."""
    from wirewise.orchestrator.health.rules import load_rules

    rules = load_rules(None)
    origin = f"rules file {rules.file}" if rules.file else "the shipped rules"
    return [{"key": f"guardrails.{name}", "value": value, "from": origin} for name, value in rules.guardrails.model_dump().items()]
