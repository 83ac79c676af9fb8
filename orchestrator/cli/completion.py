"""`wirewise completion SHELL`: the shell's completion script, from typer's own completion
(bash, zsh, fish). The script calls `wirewise` back with _WIREWISE_COMPLETE set; only then does
wirewise.orchestrator.cli.main load typer's completion classes, so `wirewise --help` pays
nothing for them (tests/benchmarks/bench_cli.py)."""

from typing import Annotated

import typer

PROG = "wirewise"
COMPLETE_VAR = "_WIREWISE_COMPLETE"  # click's name for it: _{PROG}_COMPLETE
SHELLS = ("bash", "zsh", "fish")


def completion(
    shell: Annotated[str, typer.Argument(metavar="SHELL", help="bash, zsh or fish.")],
) -> None:
    """Print the completion script for SHELL: `eval "$(wirewise completion bash)"` in ~/.bashrc,
    `wirewise completion zsh > "${fpath[1]}/_wirewise"`, `wirewise completion fish >
    ~/.config/fish/completions/wirewise.fish`."""
    from typer._completion_shared import get_completion_script

    from wirewise.errors import UserError

    if shell not in SHELLS:
        raise UserError(f"completion {shell!r}: choose {', '.join(SHELLS)}")
    typer.echo(get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell))


def answering_completion() -> bool:
    """True when a shell's completion script is asking (COMPLETE_VAR set): typer's completion
    classes are then registered with click before the command line is read."""
    import os

    if COMPLETE_VAR not in os.environ:
        return False
    from typer._completion_classes import completion_init

    completion_init()
    return True
