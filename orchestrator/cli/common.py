"""Options and output helpers every command shares."""

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

def command_group(help: str, **settings) -> typer.Typer:
    """A Typer app with wirewise's settings. Plain help text (as pip, uv and gh print it):
    typer's rich help imports rich.markdown and friends, about half of `wirewise --help`'s time."""
    return typer.Typer(
        help=help, no_args_is_help=True, rich_markup_mode=None, add_completion=False,
        context_settings={"help_option_names": ["-h", "--help"]}, **settings,
    )


DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Database URL [default: the setting db: WIREWISE_DB, the configuration files, else wirewise.db in ~/.local/share/wirewise; `wirewise config show`]."),
]
JunitOption = Annotated[Path | None, typer.Option("--junit", help="Also write a JUnit XML report to this file (replaced whole) for CI.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of tables.")]


def print_json(obj: Any) -> None:
    """JSON on stdout, as wirewise.atomic.json_text writes it (strict, times with their zone)."""
    from wirewise.atomic import json_text

    sys.stdout.write(json_text(obj, indent=2) + "\n")


def print_lines(lines: list[str]) -> None:
    """Lines on stdout at once, flushed: a pipe or `tee` gets each row as it is measured, not
    when Python's block buffer fills at the end."""
    if lines:
        sys.stdout.write("".join(f"{line}\n" for line in lines))
        sys.stdout.flush()


def warn(lines: list[str]) -> None:
    for line in lines:
        sys.stderr.write(f"wirewise: warning: {line}\n")


def end_run(exit_code: int, lines: list[str]) -> None:
    """A run's last lines on stderr (stdout stays the table or the JSON), then its exit code."""
    for line in lines:
        sys.stderr.write(f"wirewise: {line}\n")
    if exit_code:
        raise typer.Exit(exit_code)


def console():
    """A rich console on stdout (imported lazily: rich costs start-up time)."""
    from rich.console import Console

    return Console()


def output_width() -> int | None:
    """The width tables print at: on a terminal its width; piped to a file or another program,
    COLUMNS where it is set (as ls and git honour it), else None: as wide as they need (rich
    would cut cells at 80 columns there)."""
    import os

    out = console()
    return out.width if out.is_terminal or os.environ.get("COLUMNS", "").isdigit() else None


def print_tables(tables) -> None:
    """Rich tables on stdout at output_width()."""
    out = console()
    width = output_width()
    for table in tables:
        if width is None:
            out.width = 10_000  # measure unconstrained, then print at the table's own width
            out.width = max(80, out.measure(table).maximum)
        out.print(table)


@contextmanager
def survey_progress(quiet: bool):
    """The bar of a survey's nodes answering (`topo survey`, and a fleet campaign's nodes
    without a stored wiring, probed before it is planned); yields the survey's on_progress
    callback. Shown from its first call on, once the survey's jobs are submitted:
    a submission with every wiring stored probes nothing and shows nothing."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    shown: list = []

    def on_progress(done: int, total: int) -> None:
        if quiet:
            return
        if not shown:
            progress = Progress(TextColumn("[bold]probing wiring: nodes answered"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), transient=True)
            progress.start()
            shown.extend([progress, progress.add_task("survey", total=total)])
        shown[0].update(shown[1], completed=done, total=total)

    try:
        yield on_progress
    finally:
        if shown:
            shown[0].stop()


def err_console():
    from rich.console import Console

    return Console(stderr=True)


# The options of the commands that decide for a new job (place, estimate, run, launch).
TopologyFileOption = Annotated[
    Path | None, typer.Option("--topology-file", "-f", help="A saved `nvidia-smi topo -m` of the node (default: this machine's, through NVML; for place and run --node, that node's stored wiring).")
]
ModelOption = Annotated[str | None, typer.Option("--model", "-m", help="A registry model (mistral-7b, ...) or a transformers config.json: what the advised strategy is sized for.")]
BatchOption = Annotated[int, typer.Option("--batch-size", help="Micro-batch per GPU.")]
SeqOption = Annotated[int | None, typer.Option("--seq-len", help="Tokens per sample (default: the model's).")]
AccountingOption = Annotated[str, typer.Option("--accounting", help="article: 12 B/param (bf16 params+grads, fp32 moments); zero: 16 B/param (plus fp32 master).")]
def _gpu_memory(value: float | None) -> float | None:
    """--gpu-mem-gb checked as it is parsed, by the check the estimate uses, whether or not the
    command goes on to need it (`run` without --model)."""
    if value is not None:
        from wirewise.orchestrator.advise.estimate import card_memory

        card_memory(value, None)
    return value


def host_name(value: str | None) -> str | None:
    """A node name typed to be stored (`topo save --node`, `import nccl-tests --node`): one
    Slurm host name, as `wirewise run --node` takes (wirewise.orchestrator.slurm.values.HOST),
    since the stored name is handed back to Slurm by `place --node`, `run` and fleet jobs."""
    if value is not None:
        from wirewise.orchestrator.slurm.values import HOST

        HOST.check(value, "--node")
    return value


def folder_path(value: str, option: str, example: str) -> Path:
    """A folder option as typed: typer would turn '' into Path('.'), the current folder, so
    the text is read and an empty one refused."""
    if not value.strip():
        from wirewise.errors import UserError

        raise UserError(f"{option} '': give a folder, e.g. {option} {example}")
    return Path(value)


GpuMemOption = Annotated[float | None, typer.Option("--gpu-mem-gb", callback=_gpu_memory, help="Memory of one GPU in GB (default: from the GPU's name, else probed).")]
GpuNameOption = Annotated[str | None, typer.Option("--gpu-name", help="The GPUs' model as nvidia-smi -L prints it (e.g. 'NVIDIA H200'), for a saved matrix without names.")]


def emit(result: Any, json: bool, table) -> None:
    """JSON for scripts, else the command's table for people."""
    if json:
        print_json(result)
    else:
        table(result)


# Which nodes (`fleet pairs`, `topo survey`): any of a partition, a node list, a feature expression.
PartitionOption = Annotated[str | None, typer.Option("--partition", "-p", help="Every node of this Slurm partition [default: the setting partition, when no nodes are named].")]
NodelistOption = Annotated[str | None, typer.Option("--nodelist", "-w", help="These nodes (a Slurm node list such as gpu[01-16]).")]
ConstraintOption = Annotated[str | None, typer.Option("--constraint", "-C", help="The nodes with these features (a100&ib, [rack1|rack2]).")]


def site_partition(partition: str | None, *nodes: object) -> str | None:
    """--partition as typed, else the setting partition where the command names no nodes
    (--node, --nodelist, --constraint choose for themselves)."""
    if partition is not None or any(nodes):
        return partition
    from wirewise.settings import setting

    return setting("partition").value


def scope_options(partition: str | None, nodelist: str | None, constraint: str | None):
    """The nodes named by --partition / --nodelist / --constraint (checked: Slurm's character sets)."""
    from wirewise.orchestrator.executor.core import Scope
    from wirewise.orchestrator.slurm.values import CONSTRAINT, NODELIST, WORD

    labels = {"partition": "--partition", "nodelist": "--nodelist", "constraint": "--constraint"}
    partition = site_partition(partition, nodelist, constraint)
    for value, pattern, key in ((partition, WORD, "partition"), (nodelist, NODELIST, "nodelist"), (constraint, CONSTRAINT, "constraint")):
        if value is not None:
            pattern.check(value, labels[key])
    return Scope(partition, nodelist, constraint, labels)
