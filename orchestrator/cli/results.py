"""`wirewise results`, `compare`, `report`: reading the stored results back (`doctor` is cli/doctor.py).

Top-level commands (registered without a group name). Parsing and printing only; the work is
in wirewise.orchestrator.report.
"""

from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import DbOption, JsonOption, command_group, folder_path, output_width, print_json, print_tables

app = command_group("Read stored results back: query, compare, report.")

Fabric = Annotated[str | None, typer.Option("--fabric", help="Fabric class or a unique prefix (nvlink-groups, pcie, ...).")]
Fingerprint = Annotated[str | None, typer.Option("--fingerprint", help="Topology fingerprint or a unique prefix.")]
Node = Annotated[str | None, typer.Option("--node", help="Node name.")]
Since = Annotated[str | None, typer.Option("--since", help="Started at or after: 2026-11-30, 2026-11-30T12:00, or an age: 7d, 12h.")]
Campaigns = Annotated[list[str] | None, typer.Option("--campaign", help="Campaign name (repeat for several).")]
Source = Annotated[str | None, typer.Option("--source", help="wirewise (benchmarks), nccl-tests (imported logs) or job (real jobs' own figures).")]
IncludeCpu = Annotated[bool, typer.Option("--include-cpu", help="Include CPU-rank (gloo) runs, which measure the host, not the fabric.")]
Workload = Annotated[str | None, typer.Option("--workload", help="collective or train.")]
Op = Annotated[str | None, typer.Option("--op", help="Collective op, e.g. all_reduce.")]


@app.command()
def results(
    fabric: Fabric = None,
    fingerprint: Fingerprint = None,
    node: Node = None,
    workload: Workload = None,
    op: Op = None,
    size: Annotated[str | None, typer.Option("--bytes", metavar="SIZE", help="Message size: 1G, 64M, 4096.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name.")] = None,
    strategy: Annotated[str | None, typer.Option("--strategy", help="ddp, zero1, zero2, zero3, fsdp.")] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", help="Rank count: GPUs over every node (CPU ranks, for CPU runs).")] = None,
    placement: Annotated[str | None, typer.Option("--placement", help="The placement asked for: packed, spread, all, explicit, cpu (a campaign's), pair (a pair test).")] = None,
    geometry: Annotated[str | None, typer.Option("--geometry", help="The placement got: packed (one NVLink group) or spread (across groups).")] = None,
    scope: Annotated[str | None, typer.Option("--scope", help="The fabric between the nodes: node (one node), nvlink-domain (one NVLink domain), network.")] = None,
    transport: Annotated[str | None, typer.Option("--transport", help="default or pcie.")] = None,
    source: Source = None,
    status: Annotated[str | None, typer.Option("--status", help="ok, oom, failed, timeout, cancelled.")] = None,
    since: Since = None,
    campaign: Campaigns = None,
    group_by: Annotated[str | None, typer.Option("--group-by", metavar="FIELDS", help="Comma-separated fields to aggregate by (default: the case).")] = None,
    include_cpu: IncludeCpu = False,
    csv: Annotated[bool, typer.Option("--csv", help="Print CSV (the same columns as --json).")] = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Stored results that match, aggregated over repeats: median, min, max, count and spread."""
    from wirewise.orchestrator.report.aggregate import aggregate, parse_group_by
    from wirewise.orchestrator.results.filters import parse_filters, resolve
    from wirewise.errors import UserError
    from wirewise.orchestrator.store import Store

    if json and csv:
        raise UserError("--json and --csv: give one of them (both print every row, as JSON or as CSV)")
    filters = parse_filters(
        fabric=fabric, fingerprint=fingerprint, node=node, workload=workload, op=op, bytes=size, model=model,
        strategy=strategy, gpus=gpus, placement=placement, geometry=geometry, scope=scope, transport=transport, source=source,
        status=status, since=since, campaigns=campaign, include_cpu=include_cpu,
    )
    fields = parse_group_by(group_by)
    store = Store.existing(db)
    found = aggregate(store, resolve(store, filters), fields)
    from wirewise.orchestrator.report.tables import left_out_lines, results_tables

    notes = left_out_lines(found.left_out())
    if json or csv:
        print_json(found.rows) if json else _print_csv(found.rows)
        for line in notes:  # beside the rows, which a script reads from stdout
            typer.echo(line, err=True)
        return
    print_tables(results_tables(found.rows, output_width()))
    if not found.rows:
        typer.echo("no results match")
    for line in notes:
        typer.echo(line)


def _print_csv(rows) -> None:
    """CSV as OWASP's guidance for CSV injection has it: every text cell quoted (the csv module
    doubles the quotes inside), and one that a spreadsheet would read as a formula (it starts
    with =, +, -, @, a tab or a carriage return) led by a single quote. Numbers stay numbers."""
    import csv as csv_module
    import sys

    from wirewise.orchestrator.report.aggregate import columns

    writer = csv_module.DictWriter(sys.stdout, fieldnames=columns(rows), lineterminator="\n",
                                   quoting=csv_module.QUOTE_NONNUMERIC)
    writer.writeheader()
    writer.writerows({key: _inert(value) for key, value in row.items()} for row in rows)


def _inert(value):
    if isinstance(value, tuple):  # a task's nodes: host names, which hold no comma
        value = ",".join(value)
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


@app.command()
def compare(
    a: Annotated[str, typer.Argument(help="campaign:NAME, node:NAME, fingerprint:PREFIX, fabric:PREFIX, or a name only one of them has.", show_default=False)],
    b: Annotated[str, typer.Argument(help="The other side, the same way.", show_default=False)],
    workload: Workload = None,
    op: Op = None,
    source: Source = None,
    since: Since = None,
    include_cpu: IncludeCpu = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Two campaigns, nodes, fingerprints or fabrics side by side: the ratio for every case both
    have, judged different or not by a rank-sum test at a 5% false-alarm rate; cases on one side only listed."""
    from wirewise.orchestrator.report.compare import compare as compare_sides
    from wirewise.orchestrator.report.compare import parse_side
    from wirewise.orchestrator.results.filters import parse_filters
    from wirewise.orchestrator.store import Store

    from wirewise.errors import UserError

    if a == b:
        raise UserError(f"compare {a!r} with itself: give two different sides (campaign:NAME, node:NAME, ...)")
    base = parse_filters(workload=workload, op=op, source=source, since=since, include_cpu=include_cpu)
    store = Store.existing(db)
    result = compare_sides(store, parse_side(store, a), parse_side(store, b), base)
    if json:
        print_json(result)
        return
    from wirewise.orchestrator.report.tables import compare_notes, compare_tables

    print_tables(compare_tables(result))
    for line in compare_notes(result):
        typer.echo(line)


def _doctor_says(store, filters):
    """What `doctor` says of the history, for the report: no verdict recorded, this machine not
    probed; None where it cannot judge (its rules file is not valid)."""
    from wirewise.errors import UserError
    from wirewise.orchestrator.health.doctor import doctor

    try:
        return doctor(store, include_cpu=filters.include_cpu, record=False)
    except UserError:
        return None


@app.command()
def report(
    out: Annotated[str, typer.Option("--out", help="Folder for the PNG figures and index.html (created if missing).", show_default=False)],
    campaign: Campaigns = None,
    fabric: Fabric = None,
    fingerprint: Fingerprint = None,
    node: Node = None,
    source: Source = None,
    since: Since = None,
    include_cpu: IncludeCpu = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """A short article of the results: a summary of the findings in sentences, then the figures
    (busbw by size and by GPU count, the strategy dial per wire) as PNG files, in one
    self-contained HTML page with their tables and wiring."""
    from wirewise.orchestrator.report.page import write_report
    from wirewise.orchestrator.results.filters import parse_filters
    from wirewise.orchestrator.store import Store

    filters = parse_filters(campaigns=campaign, fabric=fabric, fingerprint=fingerprint, node=node, source=source,
                            since=since, include_cpu=include_cpu)
    from wirewise.orchestrator.advise.estimate import memory_from_name

    folder = folder_path(out, "--out", "report")
    written = write_report(Store.existing(db), filters, folder, memory_from_name, _doctor_says)
    if json:
        print_json(written)
        return
    for figure in written["figures"]:
        typer.echo(f"{figure['file']}: {figure['title']}")
    typer.echo(f"{written['index']}: {len(written['figures'])} figures from {written['results']} results, "
               f"wiring of {len(written['nodes'])} node(s)")
    from wirewise.orchestrator.report.tables import left_out_lines

    for line in left_out_lines(written["left_out"]):
        typer.echo(line)
