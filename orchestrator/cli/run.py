"""`wirewise run`: your own command submitted to Slurm on well-connected GPUs, with the advised
strategy exported; what was submitted, as lines or JSON. The work is in
wirewise.orchestrator.run."""

from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import (
    DbOption, GpuMemOption, GpuNameOption, JsonOption, ModelOption, TopologyFileOption, console, emit, folder_path, site_partition,
)


def register(app: typer.Typer) -> None:
    # Everything after the command's first word is the command's own (`-- python train.py -k 2`).
    app.command(context_settings={"allow_interspersed_args": False})(run)


def run(
    command: Annotated[list[str] | None, typer.Argument(help="The command and its arguments, after `--`; passed as a list, never through a shell.")] = None,
    gpus: Annotated[int, typer.Option("--gpus", "-k", help="How many GPUs (on each node, with --nodes).")] = 1,
    nodes: Annotated[int, typer.Option("--nodes", "-N", help="Nodes for the job, --gpus on each: stored nodes of one wiring, inside one NVLink domain when one has room (Slurm --segment where the cluster runs blocks, else the nodes by name); what Slurm gave is checked.")] = 1,
    model: ModelOption = None,
    whole_node: Annotated[bool, typer.Option("--whole-node", help="Hold the whole node (--exclusive) and pin the chosen GPUs with CUDA_VISIBLE_DEVICES; default: share the node, Slurm picks GPUs on a node of the right fabric.")] = False,
    topology_file: TopologyFileOption = None,
    node: Annotated[str | None, typer.Option("--node", help="Run on this node (Slurm --nodelist); its wiring from the store unless --topology-file.")] = None,
    partition: Annotated[str | None, typer.Option("--partition", "-p", help="Slurm partition [default: the setting partition, without --node].")] = None,
    time_min: Annotated[int, typer.Option("--time", "-t", help="Time limit in minutes.")] = 60,
    cpus_per_task: Annotated[int | None, typer.Option("--cpus-per-task", "-c", help="CPUs for the job.")] = None,
    folder: Annotated[str | None, typer.Option("--folder", help="submitit's folder for the job's script and logs [default: jobs/ in the setting runs].")] = None,
    start_timeout: Annotated[float, typer.Option("--start-timeout", help="Seconds to wait for a shared job to start, to read back its GPUs.")] = 60.0,
    gpu_mem_gb: GpuMemOption = None,
    gpu_name: GpuNameOption = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Submit your own command to Slurm on well-connected GPUs, with the advised strategy in WIREWISE_STRATEGY."""
    from wirewise.orchestrator.run import RunRequest, run_for
    from wirewise.runs import RunsRoot

    request = RunRequest(
        command=list(command or []), gpus=gpus, whole_node=whole_node, model=model, node=node, partition=site_partition(partition, node),
        time_min=time_min, cpus_per_task=cpus_per_task, folder=folder_path(folder, "--folder", "wirewise-runs") if folder is not None else RunsRoot.configured().jobs(),
        start_timeout_s=start_timeout, nodes=nodes,
    )
    emit(run_for(request, topology_file, db, gpu_mem_gb, gpu_name), json, print_run)


def print_run(result: dict) -> None:
    out = console()
    if "nodes" in result:
        _print_across_nodes(result)
        return
    gpus = result["cuda_visible_devices"] or "not known yet"
    out.print(f"submitted job {result['job_id']} ({result['mode']}) on GPUs {gpus}", markup=False, highlight=False)
    if result["strategy"]:
        out.print(f"WIREWISE_STRATEGY={result['strategy']}", markup=False, highlight=False)
    for warning in result["warnings"]:
        out.print(f"warning: {warning}", style="yellow", markup=False, highlight=False)
    out.print(f"logs: {result['folder']}", markup=False, highlight=False)




def _print_across_nodes(result: dict) -> None:
    out = console()
    domain = result["nvlink_domain"]
    where = f"NVLink domain {domain['cluster_uuid']} clique {domain['clique_id']}" if domain else "no one NVLink domain"
    lines = [f"submitted job {result['job_id']} ({result['mode']}): {len(result['nodes'])} node(s) x {result['per_node']} GPU(s), "
             f"asked {result['asked']}",
             f"placed on {', '.join(result['nodes'])} ({where})",
             f"Slurm gave {', '.join(result['given_nodes']) if result['given_nodes'] else 'no nodes yet'}: {result['allocation']}"]
    for line in lines:
        out.print(line, markup=False, highlight=False)
    for warning in result["warnings"]:
        out.print(f"warning: {warning}", style="yellow", markup=False, highlight=False)
    out.print(f"logs: {result['folder']}", markup=False, highlight=False)
