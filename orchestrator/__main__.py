"""`python -m orchestrator` = the `wirewise` command (where the console script is not installed)."""

from orchestrator.cli.main import run

run()
