"""`wirewise collect PATH...`: store result files left on disk (a run whose database was busy,
a campaign folder copied from a cluster). Idempotent: collecting twice adds nothing."""

from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import DbOption, JsonOption, print_json


def collect(
    paths: Annotated[list[str], typer.Argument(metavar="PATH...", help="Result files (a result.json, or result records as JSON lines), or folders to search for them.")],
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Store result files (and the wiring they ran on) in the database."""
    from wirewise.orchestrator.record.collect import collect_paths

    summary, where = collect_paths(paths, db)
    if json:
        print_json({"files": summary.files, "records": summary.records, "new_records": summary.new,
                    "statuses": summary.statuses, "db": where})
        return
    typer.echo(summary.summary(where))
