"""`wirewise place`, `wirewise estimate`, `wirewise run`: decisions for a new job from the wiring
and the stored history. Options in, the work in wirewise.orchestrator.placement / .advise, out
as a table or JSON."""

from pathlib import Path
from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import DbOption, JsonOption, console, print_json

GpusOption = Annotated[int | None, typer.Option("--gpus", "-k", help="How many GPUs (ranks).")]
TopologyFileOption = Annotated[
    Path | None, typer.Option("--topology-file", "-f", help="A saved `nvidia-smi topo -m` of the node (default: this machine, or --node's stored wiring).")
]
NodeOption = Annotated[str | None, typer.Option("--node", help="A node whose wiring is stored (`wirewise topo save`); its free GPUs come from Slurm.")]
FreeOption = Annotated[str | None, typer.Option("--free", help="The free GPUs, e.g. 2,3,4-7 (default: Slurm's or NVML's view, else all).")]
PolicyOption = Annotated[str, typer.Option("--policy", help="packed (best connected), spread (across NVLink groups), all, or GPU indices 0,1.")]
ModelOption = Annotated[str | None, typer.Option("--model", "-m", help="A registry model (mistral-7b, ...) or a transformers config.json: adds the advised strategy.")]
BatchOption = Annotated[int, typer.Option("--batch-size", help="Micro-batch per GPU.")]
SeqOption = Annotated[int | None, typer.Option("--seq-len", help="Tokens per sample (default: the model's).")]
AccountingOption = Annotated[str, typer.Option("--accounting", help="article: 12 B/param (bf16 params+grads, fp32 moments); zero: 16 B/param (plus fp32 master).")]
GpuMemOption = Annotated[float | None, typer.Option("--gpu-mem-gb", help="Memory of one GPU in GB (default: from the GPU's name, else probed).")]


def register(app: typer.Typer) -> None:
    app.command()(place)
    app.command()(estimate)
    app.command(context_settings={"allow_interspersed_args": False})(run)


def place(
    gpus: GpusOption = None,
    topology_file: TopologyFileOption = None,
    node: NodeOption = None,
    free: FreeOption = None,
    policy: PolicyOption = "packed",
    model: ModelOption = None,
    batch_size: BatchOption = 1,
    seq_len: SeqOption = None,
    accounting: AccountingOption = "article",
    gpu_mem_gb: GpuMemOption = None,
    across_nodes: Annotated[bool, typer.Option("--across-nodes", help="More GPUs than one node: choose stored nodes of one wiring first (fewest leaf switches), then GPUs on each.")] = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Choose GPUs for a job: the best-connected free set by predicted busbw (measured where stored, else the wiring model)."""
    from wirewise.orchestrator.placement.request import placement_across_nodes, placement_for

    if across_nodes:
        emit(placement_across_nodes(gpus, db), json, print_nodes)
        return
    result = placement_for(
        gpus, topology_file=topology_file, node=node, free=free, policy=policy, model=model,
        batch_size=batch_size, seq_len=seq_len, accounting=accounting, gpu_mem_gb=gpu_mem_gb, db=db,
    )
    emit(result, json, print_placement)


def estimate(
    model: Annotated[str, typer.Option("--model", "-m", help="A registry model (mistral-7b, ...) or a transformers config.json / model folder.")],
    gpus: Annotated[int, typer.Option("--gpus", "-k", help="Data-parallel ranks.")] = 1,
    strategy: Annotated[str | None, typer.Option("--strategy", "-s", help="One of ddp, zero1, zero2, zero3, fsdp (default: all).")] = None,
    batch_size: BatchOption = 1,
    seq_len: SeqOption = None,
    accounting: AccountingOption = "article",
    gpu_mem_gb: GpuMemOption = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Memory per GPU for each strategy: model states by the ZeRO formulas, activations, and whether it fits."""
    from wirewise.orchestrator.advise import estimate as estimate_memory
    from wirewise.orchestrator.placement.request import existing_store

    result = estimate_memory(
        model, gpus, [strategy] if strategy else None, batch_size, seq_len, accounting, gpu_mem_gb,
        store=existing_store(db),
    )
    emit(result, json, print_estimate)


def run(
    command: Annotated[list[str] | None, typer.Argument(help="The command and its arguments, after `--`; passed as a list, never through a shell.")] = None,
    gpus: Annotated[int, typer.Option("--gpus", "-k", help="How many GPUs.")] = 1,
    model: ModelOption = None,
    whole_node: Annotated[bool, typer.Option("--whole-node", help="Hold the whole node (--exclusive) and pin the chosen GPUs with CUDA_VISIBLE_DEVICES; default: share the node, Slurm picks GPUs on a node of the right fabric.")] = False,
    topology_file: TopologyFileOption = None,
    node: Annotated[str | None, typer.Option("--node", help="Run on this node (Slurm --nodelist); its wiring from the store unless --topology-file.")] = None,
    partition: Annotated[str | None, typer.Option("--partition", "-p", help="Slurm partition.")] = None,
    time_min: Annotated[int, typer.Option("--time", "-t", help="Time limit in minutes.")] = 60,
    cpus_per_task: Annotated[int | None, typer.Option("--cpus-per-task", "-c", help="CPUs for the job.")] = None,
    folder: Annotated[Path, typer.Option("--folder", help="submitit's folder for the job's script and logs.")] = Path("wirewise-runs"),
    start_timeout: Annotated[float, typer.Option("--start-timeout", help="Seconds to wait for a shared job to start, to read back its GPUs.")] = 60.0,
    gpu_mem_gb: GpuMemOption = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Submit your own command to Slurm on well-connected GPUs, with the advised strategy in WIREWISE_STRATEGY."""
    from wirewise.orchestrator.placement.request import run_for
    from wirewise.orchestrator.placement.submit import RunRequest

    request = RunRequest(
        command=list(command or []), gpus=gpus, whole_node=whole_node, model=model, partition=partition,
        time_min=time_min, cpus_per_task=cpus_per_task, folder=folder, start_timeout_s=start_timeout,
    )
    emit(run_for(request, topology_file, node, db, gpu_mem_gb), json, print_run)


def emit(result: dict, json: bool, table) -> None:
    """JSON for scripts, else the command's table for people."""
    if json:
        print_json(result)
    else:
        table(result)


def print_placement(result: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    out = console()
    table = Table(title=f"placement on {escape(result['node'])} ({result['fabric']})", show_header=True)
    for column in ("", "GPUs", "predicted busbw GB/s", "basis"):
        table.add_column(column)
    table.add_row("chosen", result["cuda_visible_devices"], _num(result["predicted_busbw_gbs"]), _basis(result))
    for alt in result["alternatives"]:
        table.add_row("otherwise", ",".join(map(str, alt["gpus"])), _num(alt["predicted_busbw_gbs"]), _basis(alt))
    out.print(table)
    if "strategy" in result:
        out.print(f"strategy: {result['strategy'] or 'none fits'}", markup=False, highlight=False)
    for reason in result["reasons"]:
        out.print(f"- {reason}", markup=False, highlight=False)
    out.print(f"CUDA_VISIBLE_DEVICES={result['cuda_visible_devices']}", markup=False, highlight=False)


def print_nodes(result: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"{len(result['nodes'])} node(s) x {result['per_node']} GPU(s)", show_header=True)
    table.add_column("node")
    table.add_column("GPUs")
    for row in result["nodes"]:
        table.add_row(escape(row["node"]), row["cuda_visible_devices"])
    out = console()
    out.print(table)
    for reason in result["reasons"]:
        out.print(f"- {reason}", markup=False, highlight=False)


def print_run(result: dict) -> None:
    out = console()
    gpus = result["cuda_visible_devices"] or "not known yet"
    out.print(f"submitted job {result['job_id']} ({result['mode']}) on GPUs {gpus}", markup=False, highlight=False)
    if result["strategy"]:
        out.print(f"WIREWISE_STRATEGY={result['strategy']}", markup=False, highlight=False)
    for warning in result["warnings"]:
        out.print(f"warning: {warning}", style="yellow", markup=False, highlight=False)
    out.print(f"logs: {result['folder']}", markup=False, highlight=False)


def print_estimate(result: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    out = console()
    memory = f"{result['gpu_mem_gb']:g} GB" if result["gpu_mem_gb"] else "unknown memory"
    table = Table(
        title=f"{escape(result['model'])}: {result['params'] / 1e9:.2f}B params, {result['gpus']} GPU(s) of {memory}",
        show_header=True,
    )
    table.caption = "GB per GPU (10^9 bytes)"
    for column in ("strategy", "params", "grads", "optim", "states", "activ", "total", "fits"):
        table.add_column(column, justify="right")
    for row in result["strategies"]:
        fits = {True: "yes", False: "no", None: "?"}[row["fits"]]
        total = f"{row['total_gb']:g}" + (" (calibrated)" if row["calibration"] else "")
        table.add_row(row["strategy"], *(f"{row[k]:g}" for k in ("params_gb", "grads_gb", "optimizer_gb", "model_state_gb", "activation_gb")), total, fits)
    out.print(table)
    notes = [f"accounting {result['accounting']}: {result['accounting_about']}",
             f"GPU memory: {result['gpu_mem_source']}", f"parameters: {result['counted_by']}"]
    for row in result["strategies"]:
        cal = row["calibration"]
        if cal:
            notes.append(f"{row['strategy']}: calibrated x{cal['factor']:g} on {cal['results']} measured peak(s) (median {cal['measured_peak_gb']:g} GB)")
    for note in notes:
        out.print(f"- {note}", markup=False, highlight=False)


def _num(value) -> str:
    return "-" if value is None else f"{value:g}"


def _basis(row: dict) -> str:
    return f"measured ({row['results']})" if row["basis"] == "measured" else "model"
