"""`wirewise place`: GPUs for a new job on the node's wiring (and, given a model, the advised
strategy), as a table or JSON. The work is in wirewise.orchestrator.decide."""

from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import (
    AccountingOption, BatchOption, DbOption, GpuMemOption, GpuNameOption, JsonOption, ModelOption, SeqOption,
    TopologyFileOption,
    console, emit,
)

GpusOption = Annotated[int | None, typer.Option("--gpus", "-k", help="How many GPUs (ranks).")]
NodeOption = Annotated[str | None, typer.Option("--node", help="A node whose wiring is stored (`wirewise topo save`); its free GPUs come from Slurm.")]
FreeOption = Annotated[str | None, typer.Option("--free", help="The free GPUs, e.g. 2,3,4-7 (default: Slurm's or NVML's view, else all).")]
PolicyOption = Annotated[str, typer.Option("--policy", help="packed (best connected), spread (across NVLink groups), all, or GPU indices 0,1.")]


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
    gpu_name: GpuNameOption = None,
    across_nodes: Annotated[bool, typer.Option("--across-nodes", help="More GPUs than one node: choose stored nodes of one wiring first (fewest leaf switches), then GPUs on each.")] = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Choose GPUs for a job: the best-connected free set by predicted busbw (measured where stored, else the wiring model)."""
    from wirewise.orchestrator.decide import placement_across_nodes, placement_for

    if across_nodes:
        emit(placement_across_nodes(gpus, db), json, print_nodes)
        return
    result = placement_for(
        gpus, topology_file=topology_file, node=node, free=free, policy=policy, model=model,
        batch_size=batch_size, seq_len=seq_len, accounting=accounting, gpu_mem_gb=gpu_mem_gb, db=db,
        gpu_name=gpu_name,
    )
    emit(result, json, print_placement)


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
    if "advice" in result:
        out.print(_strategy_table(result["advice"]))
    if "strategy" in result:
        out.print(f"strategy: {result['strategy'] or 'none fits'}", markup=False, highlight=False)
    for reason in result["reasons"]:
        out.print(f"- {reason}", markup=False, highlight=False)
    out.print(f"CUDA_VISIBLE_DEVICES={result['cuda_visible_devices']}", markup=False, highlight=False)


def _strategy_table(advice: dict):
    from rich.table import Table

    table = Table(title=f"{advice['model']} on these GPUs", show_header=True)
    for column in ("strategy", "fits", "GB per GPU", "tokens/s", "basis"):
        table.add_column(column, justify="right")
    for row in advice["strategies"]:
        fits = {True: "yes", False: "no", None: "?"}[row["fits"]]
        table.add_row(row["strategy"], fits, f"{row['total_gb']:g}", _num(row["predicted_tokens_per_s"]), row["basis"])
    return table


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
    if result["between_nodes_busbw_gbs"] is not None:
        out.print(f"- between the nodes ({result['scope']}): {result['between_nodes_busbw_gbs']:.3g} GB/s busbw, "
                  f"{result['between_nodes_basis']}", markup=False, highlight=False)
    for reason in result["reasons"]:
        out.print(f"- {reason}", markup=False, highlight=False)


def _num(value) -> str:
    return "-" if value is None else f"{value:g}"


def _basis(row: dict) -> str:
    return f"measured ({row['results']})" if row["basis"] == "measured" else "model"
