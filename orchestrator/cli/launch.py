"""`wirewise launch [--model M | --params N] [--strategy auto|ddp|...] [--gpus K] [--cpu] [--dry-run] -- SCRIPT ARGS`:
a training script started with the advice of the allocation it runs in. The work is in
wirewise.orchestrator.launch; this parses and prints."""

import json as json_module
import shlex
from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import (
    AccountingOption, BatchOption, DbOption, GpuMemOption, JsonOption, ModelOption, SeqOption, TopologyFileOption, print_json,
)


def register(app: typer.Typer) -> None:
    app.command(context_settings={"allow_interspersed_args": False})(launch)


def launch(
    script: Annotated[list[str] | None, typer.Argument(metavar="-- SCRIPT ARGS...", help="The training script and its arguments, after `--`, as accelerate launch takes them (train.py ARGS, or -m package.module ARGS); passed as a list, never through a shell.")] = None,
    model: ModelOption = None,
    params: Annotated[str | None, typer.Option("--params", help="Instead of --model: the parameter count (7e9); activations are then not counted.")] = None,
    strategy: Annotated[str, typer.Option("--strategy", "-s", help="auto (the advice), or ddp, zero1, zero2, zero3, fsdp or a plug-in's name to override it.")] = "auto",
    gpus: Annotated[int | None, typer.Option("--gpus", "-k", help="GPUs per node (default: every GPU the job holds, or every idle one here); CPU ranks where there is no GPU.")] = None,
    batch_size: BatchOption = 1,
    seq_len: SeqOption = None,
    accounting: AccountingOption = "article",
    gpu_mem_gb: GpuMemOption = None,
    cpu: Annotated[bool, typer.Option("--cpu", help="CPU ranks (gloo), --gpus of them per node, even where GPUs answer; placed on the wiring all the same.")] = False,
    topology_file: TopologyFileOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the choice, the configuration and the command; start nothing, write nothing.")] = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Start a training script with the advised GPUs, strategy and accelerate configuration: accelerate launch here, or once per node through srun."""
    from wirewise.errors import UserError
    from wirewise.orchestrator.launch.advice import advise_job
    from wirewise.orchestrator.launch.command import plan_launch, start

    if json and not dry_run:
        raise UserError("--json goes with --dry-run: a started job's output is the job's own")
    advice = advise_job(
        model, params=_count(params), batch_size=batch_size, seq_len=seq_len, gpus=gpus, strategy=strategy,
        topology_file=topology_file, db=db, accounting=accounting, gpu_mem_gb=gpu_mem_gb, cpu=cpu, option="--strategy",
    )
    planned = plan_launch(advice, list(script or []), db)
    if json:
        print_json(planned.to_dict())
        return
    print_plan(planned, to_stderr=not dry_run)
    if not dry_run:
        start(planned)


def _count(text: str | None) -> int | None:
    """'7e9', '7000000000', '1.5e9' -> an int; one line for anything else."""
    if text is None:
        return None
    from wirewise.errors import UserError

    try:
        value = float(text)
    except ValueError:
        raise UserError(f"--params {text!r}: give the parameter count as a number, e.g. --params 7e9") from None
    if not value.is_integer() or not 1 <= value < 1e15:
        raise UserError(f"--params {text!r}: give a whole number of parameters, e.g. --params 7e9")
    return int(value)


def print_plan(planned, to_stderr: bool) -> None:
    """What was chosen and why; with a dry run also the configuration and the command, on stdout."""
    from rich.console import Console
    from rich.table import Table

    out = Console(stderr=to_stderr)
    advice = planned.advice
    say = lambda text: out.print(text, markup=False, highlight=False, soft_wrap=True)  # noqa: E731
    where = (f"GPUs {advice.cuda_visible_devices}" if advice.device == "cuda"
             else f"{advice.processes_per_node} CPU rank(s)")
    nodes = advice.nodes[0] if len(advice.nodes) == 1 else f"{len(advice.nodes)} nodes ({','.join(advice.nodes)})"
    say(f"wirewise launch: {advice.strategy} on {where} of {nodes}, {advice.num_processes} process(es); "
        f"chosen by {advice.chosen_by}")
    for reason in advice.reasons:
        say(f"- {reason}")
    table = Table(show_header=True)
    for column in ("strategy", "fits", "GB per GPU", "tokens/s", "runs here"):
        table.add_column(column)
    for row in advice.strategies:
        memory = f"{row.memory_gb:g} ({row.memory_basis})" if row.memory_gb else f"<0.01 ({row.memory_basis})"
        tokens = "-" if row.tokens_per_s is None else f"{row.tokens_per_s:,.0f} ({_basis(row)})"
        table.add_row(row.strategy, {True: "yes", False: "no", None: "?"}[row.fits], memory, tokens,
                      "yes" if row.runs_here else "no")
    out.print(table)
    if not to_stderr:
        import yaml

        say(f"# {planned.file.accelerate_config_file}")
        say(yaml.safe_dump(advice.config_in(planned.run_dir), sort_keys=False).rstrip())
        if advice.deepspeed_config is not None:
            say(f"# {planned.run_dir / 'deepspeed.json'}")
            say(json_module.dumps(advice.deepspeed_config, indent=1))
        say("# environment: " + " ".join(f"{k}={v}" for k, v in planned.to_dict()["env"].items()))
    say(f"command: {shlex.join(planned.command)}")
    if planned.command != planned.node_command:
        say(f"on each node: {shlex.join(planned.node_command)}")


def _basis(row) -> str:
    return f"measured, {row.results} result(s) of {', '.join(row.sources)}" if row.tokens_basis == "measured" else "model"
