"""The one error type for bad input: one line on stderr, exit code 2, no traceback."""

from __future__ import annotations

from typing import Any


class UserError(Exception):
    """Input the user can fix; the message says how. `wirewise.orchestrator.cli.main.run` prints it."""

    exit_code = 2


class AdviceError(UserError, ValueError):
    """What `wirewise.advice()` raises for anything its caller can fix (an argument of the wrong
    type or range, an environment or wiring it cannot read): a ValueError whose message is the
    one line the CLI prints for the same input."""


def first_error(exc: Any, flags: dict[str, str] | None = None, raw: dict[str, Any] | None = None) -> UserError:
    """A pydantic ValidationError as one line: its first problem, named by the option the user
    typed (`flags` maps field -> option, `raw` holds what was typed), else by its field path."""
    error = exc.errors()[0]
    message = error["msg"].removeprefix("Value error, ")
    loc = error["loc"]
    field = loc[0] if loc else None
    flags, raw = flags or {}, raw or {}
    if field in flags:
        value = raw.get(field)
        if error["type"] == "value_error" and repr(value) in message:
            return UserError(f"{flags[field]}: {message}")
        return UserError(f"{flags[field]} {value!r}: {message}")
    if loc and not flags:
        return UserError(first_problem(exc))
    return UserError(message)  # a check across options: its message names them


def first_problem(exc: Any, section: str = "", unknown: str | None = None) -> str:
    """The first problem of a pydantic ValidationError as 'where: what', where its field path
    under `section` (a file's part, such as 'records[3]'); with `unknown`, the words for a key
    the model does not have. One formatter for specs, result files and options."""
    error = exc.errors()[0]
    message = unknown if unknown and error["type"] == "extra_forbidden" else error["msg"].removeprefix("Value error, ")
    where = ".".join(part for part in (section, field_path(error["loc"])) if part)
    return f"{where}: {message}" if where else message


def field_path(loc: tuple) -> str:
    """('workloads', 1, 'strategies', 2) -> 'workloads[1].strategies[2]'."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
