"""Shell completion (`wirewise completion SHELL`, issue 31): each script sourced in the real
shell, asked to complete a command and an option as a user's Tab would. bash always runs
(CI has it); zsh and fish where installed (`apt-get install zsh fish` on Debian): skipped,
saying so, where they are not."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import wirewise

BIN = str(Path(sys.executable).parent)  # where `wirewise` is: the scripts call it back by name
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}


def shell(*argv: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=ENV)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_bash_completes_commands_and_options_from_the_sourced_script():
    script = """eval "$(wirewise completion bash)"
ask() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _wirewise_completion wirewise; printf '%s\\n' "${COMPREPLY[@]}"; echo --; }
ask wirewise fle
ask wirewise fleet pairs --ju
ask wirewise bench ''
"""
    fleet, junit, bench, _ = shell("bash", "--norc", "-c", script).split("--\n")
    assert fleet.split() == ["fleet"]
    assert junit.split() == ["--junit"]
    assert set(bench.split()) >= {"collectives", "train"}


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed here (apt-get install fish)")
def test_fish_completes_from_the_sourced_script():
    out = shell("fish", "--no-config", "-c", "wirewise completion fish | source; complete -C 'wirewise fle'; "
                "complete -C 'wirewise fleet pairs --ju'")
    assert [line.split("\t")[0] for line in out.splitlines()] == ["fleet", "--junit"], out


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed here (apt-get install zsh)")
def test_zsh_registers_the_script_and_its_callback_answers():
    """zsh completes only inside its line editor: here the script is loaded under compinit as a
    user's .zshrc loads it (the function registered for wirewise), and the call it makes is
    answered with the candidates it hands to _arguments."""
    out = shell("zsh", "-f", "-c", 'autoload -U compinit; compinit -u -D; eval "$(wirewise completion zsh)"; '
                "print -r -- ${_comps[wirewise]}; "
                "env _TYPER_COMPLETE_ARGS='wirewise fleet pairs --ju' _WIREWISE_COMPLETE=complete_zsh wirewise")
    registered, answer = out.splitlines()
    assert registered == "_wirewise_completion" and answer.startswith("_arguments") and '"--junit"' in answer, out


def test_an_unknown_shell_is_one_line_and_exit_2():
    proc = wirewise("completion", "tcsh")
    assert (proc.returncode, proc.stderr) == (2, "wirewise: error: completion 'tcsh': choose bash, zsh, fish\n")
