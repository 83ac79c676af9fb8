"""`wirewise bench`: run a benchmark now on this machine and record it."""

from __future__ import annotations

import typer

from orchestrator.cli.bench_collectives import collectives
from orchestrator.cli.bench_train import train

app = typer.Typer(help="Run a benchmark now on this machine (ranks spawned locally) and store the results.", no_args_is_help=True)
app.command("collectives")(collectives)
app.command("train")(train)
