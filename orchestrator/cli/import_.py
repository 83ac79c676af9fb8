"""`wirewise import`: store results measured by other tools next to wirewise's own."""

from pathlib import Path
from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import DbOption, JsonOption, command_group, host_name, print_json, warn

app = command_group("Store results of other tools (nccl-tests).\n\nImported rows have the same form as wirewise's own, marked with their source.")


@app.command("nccl-tests")
def nccl_tests(
    log: Annotated[Path, typer.Argument(help="An nccl-tests *_perf output (stdout saved to a file).", show_default=False)],
    topology_file: Annotated[Path | None, typer.Option("--topology-file", help="`nvidia-smi topo -m` of the node it ran on: gives the rows its fingerprint.")] = None,
    node: Annotated[str | None, typer.Option("--node", callback=host_name, help="Node name to record (default: the first host in the log's Rank lines).")] = None,
    op: Annotated[list[str] | None, typer.Option("--op", metavar="[LINE:]OP", help="The collective of runs the log does not name (no 'Collective test starting' line, no command naming the binary, a file name that does not say); LINE:OP for the run starting at LINE (as the summary numbers runs). Repeatable.")] = None,
    transport: Annotated[list[str] | None, typer.Option("--transport", metavar="[LINE:]NAME", help="How it ran, as `bench collectives --transport`: default, or pcie (NCCL_P2P_DISABLE=1). Default: what the run's own command line or NCCL INFO lines set, else default. LINE:NAME for the run starting at LINE. Repeatable.")] = None,
    env: Annotated[list[str] | None, typer.Option("--env", metavar="KEY=VALUE", help="A variable it ran with (NCCL_ALGO, NCCL_PROTO, ...); repeat for more. Recorded like a native run's environment.")] = None,
    ranks: Annotated[list[str] | None, typer.Option("--ranks", metavar="[LINE:]N", help="The rank count, for runs whose log shows no rank lines (an excerpt); checked against those that do. LINE:N for the run starting at LINE. Repeatable.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Store an nccl-tests log as collective results marked source=nccl-tests (importing it again adds nothing)."""
    from wirewise.orchestrator.record.nccl_tests import HowItRan, read_log_file
    from wirewise.orchestrator.store import Store

    how = HowItRan.from_options(transport, env or [])
    imported = read_log_file(log, op=op, node=node, topology_file=topology_file, how=how, ranks=ranks)
    store = Store(db)  # opened only once the input is known to be good
    summary = imported.summary(imported.store(store))
    warn([f"{why}; not stored" for why in imported.skipped])
    if json:
        print_json(summary)
        return
    for section in summary["sections"]:
        typer.echo(_section_line(section))
    fingerprint = f"fingerprint {summary['fingerprint'][:12]}" if summary["fingerprint"] else "no fingerprint (give --topology-file)"
    typer.echo(
        f"stored {summary['new']} new of {summary['rows']} rows from {log.name} "
        f"(node {summary['node'] or 'unknown'}, {fingerprint}) "
        f"in {store.safe_url}"
    )


def _section_line(section: dict) -> str:
    """One run of the log: its op and rows, or how it failed; ranks as the log shows them."""
    if section["ranks"] is None:
        ranks = f"ranks unknown (give --ranks {section['line']}:N)"
    else:
        ranks = f"{'' if section['ranks_exact'] else 'at least '}{section['ranks']} ranks"
    hosts = f" on {len(section['hosts'])} host(s)" if section["hosts"] else ""
    head = f"line {section['line']}: {section['op']}, {ranks}{hosts}"
    if section["rows"] == 0:
        return f"{head}: FAILED, stored as a failed run: {section['error']}"
    text = (
        f"{head}: {section['rows']} rows, peak busbw {section['peak_busbw_gbs']:g} GB/s at {section['peak_bytes']} B, "
        f"avg {'not logged' if section['avg_busbw_gbs'] is None else str(section['avg_busbw_gbs']) + ' GB/s (as logged)'}; "
        f"transport {section['transport']}, "
        f"{'CUDA graph (-G)' if section['cuda_graph'] else 'eager'}"
    )
    if section["zero_size_rows"]:
        text += f"; {section['zero_size_rows']} zero-size rows not stored"
    return text + (f"; FAILED: {section['error']}" if section["status"] == "failed" else "")
