"""`python -m wirewise.orchestrator` = the `wirewise` command (where the console script is not installed)."""

from wirewise.orchestrator.cli.main import run

run()
