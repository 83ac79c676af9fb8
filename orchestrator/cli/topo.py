"""`wirewise topo`: a node's GPU wiring: show, save, list, and Slurm gres.conf lines."""

from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import (
    ConstraintOption, DbOption, JsonOption, NodelistOption, PartitionOption, command_group, console, err_console, host_name,
    print_json, scope_options, survey_progress,
)

app = command_group("GPU wiring: show, save, survey, list, Slurm config.\n\nProbe this node (NVML) or read a saved `nvidia-smi topo -m`, classify the fabric, fingerprint it, store it, and emit gres.conf lines; `survey` probes every node of a partition through Slurm.")

FromFileOption = Annotated[
    list[str] | None,
    typer.Option(
        "--from-file", "-f", metavar="PATH",
        help="Read one node's saved files instead of probing this machine ('-' for stdin): `nvidia-smi topo -m`, "
             "and/or `nvidia-smi -q` (text or -q -x XML) or the fabric CSV of --query-gpu; give it twice for both.",
    ),
]
NodeOption = Annotated[str | None, typer.Option("--node", callback=host_name, help="Node name (default: this host's short name; needed with --from-file for slurm).")]

# Link classes from fast to slow: NVLink green (brighter with more links), PCIe paths
# grey (one switch) through yellow (host bridge) to red (across sockets).
PCIE_STYLES = {"PIX": "grey85", "PXB": "grey62", "PHB": "yellow", "NODE": "dark_orange", "SYS": "red"}
NVLINK_STYLES = ("green4", "green3", "bold bright_green")


def _read(from_file: list[str] | None):
    """The files' topology, else this machine's; a machine without a GPU or driver to probe
    says how to read a saved one instead."""
    from wirewise.errors import UserError
    from wirewise.topology import read_topology

    if from_file:
        return read_topology(from_file)
    try:
        return read_topology(None)
    except UserError as exc:
        raise UserError(f"{exc}; read a saved `nvidia-smi topo -m` output with --from-file") from None


@app.command()
def show(from_file: FromFileOption = None, json: JsonOption = False) -> None:
    """The pair matrix coloured by link class, the NVLink groups, the fabric class and the fingerprint."""
    from wirewise.topology.node_files import WiringUnknown

    try:
        topo = _read(from_file)
    except WiringUnknown as unknown:
        _show_unwired(unknown, json)
        return
    notes = topo.details.get("notes") or []
    if json:
        for note in notes:
            err_console().print(f"note: {note}", style="yellow", markup=False, highlight=False)
        print_json({**topo.contract(), "nvlink_domain": _domain_json([gpu.get("fabric") for gpu in topo.details.get("gpus") or []])})
        return
    from rich.markup import escape

    out = console()
    out.print(_matrix_table(topo))
    for line in _summary(topo):
        out.print(line, highlight=False)
    for note in notes:
        out.print(f"[yellow]note:[/] {escape(note)}", highlight=False)


def _show_unwired(unknown, json: bool) -> None:
    """A node whose files name its GPUs and fabric but prove no wiring: those, and why no matrix."""
    from wirewise.topology.fabric import fabric_problems

    gpus = [{"name": gpu.get("name"), "uuid": gpu.get("uuid"), "fabric": gpu.get("fabric"),
             "fabric_problems": fabric_problems(gpu.get("fabric"))} for gpu in unknown.gpus]
    if json:
        typer.echo(f"note: {unknown}", err=True)
        print_json({"gpus": len(gpus), "gpu_names": [g["name"] for g in gpus], "links": None, "wiring": "unknown",
                    "nvlink_domain": _domain_json([g["fabric"] for g in gpus]), "nvlink_fabric": gpus})
        return
    out = console()
    for k, gpu in enumerate(gpus):
        out.print(f"GPU{k} {gpu['name'] or '?'}: {_fabric_text(gpu['fabric'])}", markup=False, highlight=False)
    out.print(f"note: {unknown}", style="yellow", markup=False, highlight=False, soft_wrap=True)


def _domain_json(infos) -> dict | None:
    """The node's multi-node NVLink domain as --json writes it (null: in none)."""
    from wirewise.topology.fabric import domain_json, domain_of

    return domain_json(domain_of(infos))


def _fabric_text(info) -> str:
    from wirewise.topology.fabric import fabric_problems

    if not info:
        return "no NVLink fabric"
    where = f"domain {info.get('cluster_uuid')}/{info.get('clique_id')}"
    problems = fabric_problems(info)
    return f"{where}, " + ("; ".join(problems) if problems else "completed, healthy")


@app.command()
def save(from_file: FromFileOption = None, node: NodeOption = None, db: DbOption = None, json: JsonOption = False) -> None:
    """Store this node and its topology (saving the same one again adds nothing)."""
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.topology import save_topology
    from wirewise.topology import node_name as name_of

    topo = _read(from_file)
    store = Store(db)
    node_name = name_of(topo, node)
    fingerprint, created = save_topology(store, topo, node_name)
    if json:
        print_json({"node": node_name, "fingerprint": fingerprint, "created": created, "fabric": topo.fabric, "gpus": topo.gpus})
        return
    what = "saved" if created else "already stored, nothing added:"
    typer.echo(f"{what} node {node_name}: {topo.gpus} GPU(s), {topo.fabric}, fingerprint {fingerprint} ({store.safe_url})")


@app.command()
def survey(
    partition: PartitionOption = None,
    nodelist: NodelistOption = None,
    constraint: ConstraintOption = None,
    include_down: Annotated[bool, typer.Option("--include-down", help="Survey nodes Slurm reports down or drained too (their jobs wait for them).")] = False,
    time_min: Annotated[int, typer.Option("--time", "-t", min=1, help="Time limit of each node's job, in minutes.")] = 5,
    wait: Annotated[float, typer.Option("--wait", min=1.0, help="Seconds to wait for every node's answer; jobs not started by then are cancelled.")] = 600.0,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Probe and store the wiring of every node of a partition, node list or feature (one short Slurm job per node); print the node types with their counts."""
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.survey import survey as run_survey

    scope = scope_options(partition, nodelist, constraint)
    with survey_progress(quiet=json) as on_progress:
        found = run_survey(Store(db), scope, include_down=include_down, time_min=time_min, wait_s=wait,
                           on_progress=on_progress)
    if json:
        print_json(found.to_json())
        return
    report = found.to_json()
    console().print(_types_table(report))
    _print_domains(report["nvlink"])
    for what, rows in (("failed", found.failed), ("left out", found.left_out)):
        for node, reason in rows.items():
            console().print(f"{what}: {node}: {reason}", style="yellow", markup=False, highlight=False)


def _types_table(report: dict):
    from rich.table import Table
    from rich.text import Text

    types = report["types"]
    table = Table(title=f"{report['stored']} node(s) stored, {len(types)} type(s)", title_justify="left")
    for column in ("fingerprint", "fabric", "GPUs", "model", "nodes", "names"):
        table.add_column(column, overflow="fold")
    for row in types:
        names = ", ".join(row["nodes"][:6]) + (f" ... ({row['count'] - 6} more)" if row["count"] > 6 else "")
        table.add_row(row["fingerprint"][:12], row["fabric"], str(row["gpus"]), Text(row["gpu_model"] or "?"),
                      str(row["count"]), Text(names))
    return table


@app.command("list")
def list_(db: DbOption = None, json: JsonOption = False) -> None:
    """Stored nodes with their fabric class and fingerprint."""
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.topology import list_topologies

    rows = list_topologies(Store.existing(db))
    if json:
        print_json(rows)
        return
    if not rows:
        typer.echo("no topologies stored yet; run `wirewise topo save`")
        return
    console().print(_list_table(rows))
    from wirewise.topology.fabric import domain_summary

    _print_domains(domain_summary({row["node"]: row["fabrics"] for row in rows}))


def _print_domains(summary: dict) -> None:
    """The NVLink domains (nodes, GPUs, state), then the nodes in none and those with a degraded fabric."""
    from rich.table import Table
    from rich.text import Text

    out = console()
    if summary["domains"]:
        table = Table(title="NVLink domains", title_justify="left")
        for column in ("cluster UUID", "clique", "nodes", "GPUs", "state"):
            table.add_column(column, overflow="fold")
        for d in summary["domains"]:
            table.add_row(Text(d["cluster_uuid"]), str(d["clique_id"]), Text(", ".join(d["nodes"])), str(d["gpus"]), d["state"])
        out.print(table)
    if summary["outside"] and summary["domains"]:
        for row in summary["outside"]:
            out.print(f"in no NVLink domain: {row['node']}: {row['why']}", markup=False, highlight=False)
    for row in summary["degraded"]:
        out.print(f"fabric degraded: {row['node']}: {', '.join(row['problems'])}", style="yellow", markup=False, highlight=False)


# topo list at 80 columns: the whole fabric name, a 12-character fingerprint and the date
# never wrap; names, models and groups wrap inside their columns (at least this wide).
LIST_COLUMNS = (("node", 8), ("fabric", None), ("GPUs", None), ("model", 5), ("switch", None),
                ("groups", 9), ("fingerprint", None), ("last seen", None))


def _list_table(rows):
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, padding=0)
    for name, min_width in LIST_COLUMNS:
        table.add_column(name, overflow="fold", no_wrap=min_width is None, min_width=min_width)
    for row in rows:
        cells = (
            row["node"], row["fabric"], str(row["gpus"]), row["gpu_model"] or "?", _short_yes_no(row["switched"]),
            _groups_text(row["groups"], short=True), row["fingerprint"][:12], f"{row['last_seen']:%Y-%m-%d}",
        )
        table.add_row(*(Text(cell) for cell in cells))  # stored strings are data, never markup
    return table


@app.command()
def slurm(
    from_file: FromFileOption = None,
    node: NodeOption = None,
    blocks: Annotated[bool, typer.Option("--blocks", help="Instead: the block topology of every stored node, one block per NVLink domain (topology/block).")] = False,
    format_: Annotated[str, typer.Option("--format", metavar="conf|yaml", help="With --blocks: topology.conf lines (default) or topology.yaml (Slurm 25.05+).")] = "conf",
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """gres.conf lines (one per GPU, Links= from NVLink counts, Cores= from CPU affinity) and a
    slurm.conf Features= suggestion naming the fabric, for `--constraint`; with --blocks, the
    block topology of the stored nodes (no GPU or file needed)."""
    if blocks:
        from wirewise.errors import UserError
        from wirewise.orchestrator.slurm.blocks import plan_blocks, topology_conf, topology_yaml
        from wirewise.orchestrator.store import Store
        from wirewise.orchestrator.store.topology import node_domains

        if from_file or node is not None:
            raise UserError("--blocks writes every stored node's block: it takes no --from-file or --node")
        if format_ not in ("conf", "yaml"):
            raise UserError(f"--format {format_!r}: give conf (topology.conf lines) or yaml (topology.yaml)")
        store = Store.open_existing(db)
        plan = plan_blocks(node_domains(store) if store is not None else {})
        if json:
            print_json(plan.contract())
            return
        typer.echo(topology_conf(plan) if format_ == "conf" else topology_yaml(plan), nl=False)
        return
    from wirewise.orchestrator.slurm.gres import gres_conf, slurm_node

    topo = _read(from_file)
    typer.echo(gres_conf(topo, slurm_node(topo, node, bool(from_file))), nl=False)


def _matrix_table(topo):
    from rich import box
    from rich.table import Table
    from rich.text import Text

    most_links = max((topo.nvlinks(i, j) for i in range(topo.gpus) for j in range(topo.gpus)), default=0)
    table = Table(
        title=f"GPU wiring: {topo.fabric}", header_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False
    )
    table.add_column("")
    for gpu in range(topo.gpus):
        table.add_column(f"GPU{gpu}", justify="center")
    table.add_column("NUMA", justify="right")
    table.add_column("CPUs", overflow="fold")
    for i in range(topo.gpus):
        cells = [Text(label, style=_style(label, topo.nvlinks(i, j), most_links)) for j, label in enumerate(topo.links[i])]
        numa = topo.numa[i]
        table.add_row(f"GPU{i}", *cells, "" if numa is None else str(numa), Text(topo.cpu_affinity[i] or ""))
    return table


def _style(label: str, links: int, most_links: int) -> str:
    if links:
        step = min(len(NVLINK_STYLES) - 1, (links * len(NVLINK_STYLES) - 1) // most_links)
        return NVLINK_STYLES[step]
    return PCIE_STYLES.get(label, "dim")


def _summary(topo) -> list[str]:
    from rich.markup import escape

    names = sorted({escape(n) for n in topo.gpu_names if n}) or ["GPU model unknown (add `nvidia-smi -L` lines to the file)"]
    return [
        f"[bold]fabric[/] {topo.fabric}   [bold]switched[/] {_yes_no(topo.switched)}   "
        f"[bold]GPUs[/] {topo.gpus} x {', '.join(names)}",
        f"[bold]groups[/] {_groups_text(topo.groups)}",
        f"[bold]fingerprint[/] {topo.fingerprint}",
        *_domain_lines(topo),
        "[dim]NV# bonded NVLinks (brighter: more)  PIX/PXB one PCIe switch  PHB host bridge  "
        "NODE within a NUMA node  SYS across sockets[/]",
    ]


def _domain_lines(topo) -> list[str]:
    """The node's NVLink domain (or none, and why), and every GPU whose fabric has a problem."""
    from rich.markup import escape

    from wirewise.topology.fabric import domain_of, fabric_problems, why_no_domain

    infos = [gpu.get("fabric") for gpu in topo.details.get("gpus") or []]
    domain = domain_of(infos) if infos else None
    where = f"{domain[0]} clique {domain[1]}" if domain else f"none ({why_no_domain(infos)})"
    lines = [f"[bold]NVLink domain[/] {escape(where)}"]
    lines += [f"[yellow]GPU{k} fabric:[/] {escape('; '.join(fabric_problems(info)))}" for k, info in enumerate(infos)
              if fabric_problems(info)]
    return lines


def _yes_no(value: bool | None) -> str:
    return {True: "yes", False: "no", None: "cannot tell"}[value]


def _short_yes_no(value: bool | None) -> str:
    return {True: "yes", False: "no", None: "?"}[value]


def _groups_text(groups, short: bool = False) -> str:
    if groups is None:
        return "none" if short else "none (NVLink pairs do not form disjoint cliques)"
    return " ".join("[" + ",".join(map(str, g)) + "]" for g in groups)
