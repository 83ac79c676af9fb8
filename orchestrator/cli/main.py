"""Entry point of the `wirewise` console script.

Sub-command modules are imported here, but each imports its heavy dependencies
(sqlalchemy, pydantic, pynvml, torch) inside the command body, so `--help` stays fast.
"""

from typing import Annotated

import typer

from wirewise import __version__
from wirewise.orchestrator.cli import (
    baseline, bench, campaign, collect, completion, config, db, doctor, estimate, fleet, import_, launch, place, results, rules, topo,
)
from wirewise.orchestrator.cli import run as run_command
from wirewise.orchestrator.cli.common import command_group

app = command_group(
    "Measure GPU wiring, benchmark collectives and training strategies, and place jobs from the history.",
    name="wirewise",
    pretty_exceptions_enable=False,
)
app.add_typer(db.app, name="db")
app.add_typer(topo.app, name="topo")
app.add_typer(bench.app, name="bench")
app.add_typer(import_.app, name="import")
app.add_typer(campaign.app, name="campaign")
app.add_typer(fleet.app, name="fleet")
app.command("collect")(collect.collect)
app.command()(place.place)
app.command()(estimate.estimate)
run_command.register(app)
launch.register(app)
app.add_typer(results.app)
app.command()(doctor.doctor)
app.add_typer(baseline.app, name="baseline")
app.add_typer(rules.app, name="rules")
app.add_typer(config.app, name="config")
app.command()(completion.completion)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"wirewise {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """wirewise: which GPUs and which data-parallel strategy, measured."""


def run() -> None:
    """Console script: bad input becomes one line on stderr and exit code 2, whether the
    command found it (UserError) or click did while parsing (a missing or malformed option),
    so every check answers in one style. Ctrl-C exits 130; a reader that closes the pipe early
    (`wirewise results --csv | head -1`) ends it quietly, as it ends any Unix tool.

    The handlers are looked up once, before the command runs, and every name they match on
    exists whatever typer vendors: an `except` clause naming a missing attribute would raise
    AttributeError while matching any exception that reaches it, typer's own SystemExit too."""
    import sys

    from wirewise.errors import UserError
    from wirewise.orchestrator.health.stops import Stopped as stopped

    _tune_collector()
    completion.answering_completion()
    no_args_help, usage_error, click_error = _click_exceptions()
    try:
        code = app(standalone_mode=False)  # typer returns the exit code instead of exiting
        sys.stdout.flush()  # here, so a closed pipe is seen now, not at interpreter exit
    except UserError as exc:
        _error(str(exc), exc.exit_code)
    except no_args_help as exc:  # `wirewise bench`: its help, as click shows it
        exc.show()
        sys.exit(exc.exit_code)
    except usage_error as exc:
        command = exc.ctx.command_path if exc.ctx else "wirewise"
        _error(f"{exc.format_message()} (see {command} --help)", exc.exit_code)
    except click_error as exc:
        _error(exc.format_message(), exc.exit_code)
    except typer.Abort:  # every typer names it: its own class, or click's re-exported
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except stopped as exc:  # SIGTERM, SIGHUP (and SIGINT) where a command raises them as Stopped
        sys.exit(128 + exc.signum)
    except BrokenPipeError:
        _closed_pipe()
    except OSError as exc:  # a path the system refuses (too long, no permission, a full disk): its reason and the path
        where = f": {exc.filename}" if exc.filename else ""
        _error(f"{exc.strerror or exc}{where}", 2)
    sys.exit(code if isinstance(code, int) else 0)


def _closed_pipe() -> None:
    """The reader of stdout went away: nothing more to say to anyone. stdout is pointed at
    /dev/null so the interpreter's last flush does not fail again; exit 1, as typer and
    click end a command whose pipe closed."""
    import os
    import sys

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(1)


def _tune_collector() -> None:
    """A command allocates most of what it keeps while importing (SQLAlchemy, pydantic): at the
    default threshold of 700 allocations the cyclic collector ran 164 times during the start of
    `wirewise results`, 30 ms in all (gc.callbacks). Long commands still collect, every 20,000.
    At exit, all that lives is frozen, so the interpreter's last collection has nothing to scan.
    Together: 380 -> 300 ms for `wirewise results` on an empty store (median of 9, 2 cores)."""
    import atexit
    import gc

    gc.set_threshold(20_000)
    atexit.register(gc.freeze)  # registered first, so it runs after every other exit handler


def _click_exceptions() -> tuple[type, type, type]:
    """(NoArgsIsHelpError, UsageError, ClickException) as typer raises them: newer typer vendors
    click as typer._click (0.29.2 does, without Abort), older ones use click. A class one of them
    lacks is a class nothing raises, so its `except` clause never matches and never fails."""
    try:
        from typer._click import exceptions
    except ImportError:
        from click import exceptions

    class NeverRaised(Exception):
        pass

    return tuple(getattr(exceptions, name, NeverRaised) for name in ("NoArgsIsHelpError", "UsageError", "ClickException"))


def _error(message: str, exit_code: int) -> None:
    """The one error line. A value typed or stored at great length (a 5,000-digit number, a
    10,000-character name) is shown by its two ends, so the line stays one readable line; a
    message of several lines (a parser's reason with its position below it, as PyYAML gives
    for a control character) is joined into one."""
    import re
    import sys

    message = " ".join(part.strip() for part in message.splitlines() if part.strip())
    message = re.sub(r"\S{200,}", lambda m: f"{m[0][:60]}...({len(m[0])} characters)...{m[0][-20:]}", message)
    if _for_slurmd(sys.argv[1:]):  # slurmd drains a node for any other exit: the wrapper's mistake is not the node's
        sys.stderr.write(f"wirewise: note: not judged: {message}\n")
        if "--json" in sys.argv[1:]:
            print(_not_judged_json(sys.argv[1:], message))
        sys.exit(0)
    sys.stderr.write(f"wirewise: error: {message}\n")
    sys.exit(exit_code)


def _not_judged_json(args: list[str], message: str) -> str:
    """The outcome a health check or prolog prints with --json when its own command line or setup
    failed before it ran: not judged, nothing drained (a reader of its JSON sees why)."""
    from wirewise.atomic import json_text
    from wirewise.errors import UserError
    from wirewise.orchestrator.health.node import HEALTH_CHECK, PROLOG, NodeOutcome, this_node

    try:
        node = this_node()
    except UserError:  # the scheduler's variables themselves may be what failed
        node = "this node"
    mode = PROLOG if "--prolog" in args else HEALTH_CHECK
    return json_text(NodeOutcome(node, mode, not_judged=message).to_json())


def _for_slurmd(args: list[str]) -> bool:
    """`doctor --health-check` or `doctor --prolog`: what slurmd runs, where an error exits 0
    with a note (wirewise.orchestrator.health.node says why)."""
    return "doctor" in args[:1] and any(a in ("--health-check", "--prolog") for a in args)
