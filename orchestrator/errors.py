"""The one error type for bad input: one line on stderr, exit code 2, no traceback."""

from __future__ import annotations


class UserError(Exception):
    """Input the user can fix; the message says how. `orchestrator.cli.main.run` prints it."""

    exit_code = 2
