"""`wirewise import`: store results measured by other tools next to wirewise's own."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.common import DbOption, JsonOption, print_json
from orchestrator.errors import UserError

app = typer.Typer(help="Store results measured by other tools, in the same form as wirewise's own.", no_args_is_help=True)


@app.command("nccl-tests")
def nccl_tests(
    log: Annotated[Path, typer.Argument(help="An nccl-tests *_perf output (stdout saved to a file).", show_default=False)],
    topology_file: Annotated[Path | None, typer.Option("--topology-file", help="`nvidia-smi topo -m` of the node it ran on: gives the rows its fingerprint.")] = None,
    node: Annotated[str | None, typer.Option("--node", help="Node name to record (default: the first host in the log's Rank lines).")] = None,
    op: Annotated[str | None, typer.Option("--op", help="The collective, for old logs without a 'Collective test starting' line whose file name does not say.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Store an nccl-tests log as collective results marked source=nccl-tests (importing it again adds nothing)."""
    from orchestrator.record.ingest import store_records
    from orchestrator.record.nccl_tests import log_hosts, log_records
    from orchestrator.store import Store

    text = _read(log)
    node = node or next(iter(log_hosts(text)), None)
    topo = _topology(topology_file, node)
    logged_at = datetime.fromtimestamp(log.stat().st_mtime, timezone.utc)
    records = log_records(
        text, log.name, op=op, node=node, fingerprint=topo.fingerprint if topo else None,
        fabric=topo.fabric if topo else None, logged_at=logged_at,
    )
    _check_gpus_fit(records, topo, topology_file)

    store = Store(db)
    if topo is not None:
        from orchestrator.topology import save_topology

        save_topology(store, topo, node)
    new = store_records(store, records)
    summary = _summary(log, records, new, topo)
    if json:
        print_json(summary)
        return
    for section in summary["sections"]:
        typer.echo(
            f"{section['op']}: {section['rows']} rows, {section['ranks']} ranks, peak busbw "
            f"{section['peak_busbw_gbs']:g} GB/s at {section['peak_bytes']} B, avg {section['avg_busbw_gbs']} GB/s (as logged)"
        )
    fingerprint = f"fingerprint {summary['fingerprint'][:12]}" if summary["fingerprint"] else "no fingerprint (give --topology-file)"
    typer.echo(f"stored {new} new of {len(records)} rows from {log.name} (node {node}, {fingerprint}) in {store.safe_url}")


def _read(log: Path) -> str:
    if not log.is_file():
        raise UserError(f"{str(log)!r}: no such file")
    try:
        return log.read_text(errors="replace")
    except OSError as exc:
        raise UserError(f"{str(log)!r}: cannot read it ({exc.strerror})") from None


def _topology(topology_file: Path | None, node: str | None):
    if topology_file is None:
        return None
    if node is None:
        raise UserError("the log names no host: give --node with --topology-file, so the wiring is stored for a node")
    from orchestrator.topology import read_topology

    return read_topology(topology_file)


def _check_gpus_fit(records, topo, topology_file) -> None:
    """A log that used GPU 7 cannot have run on a node whose topology has 4 GPUs."""
    if topo is None or not records:
        return
    highest = max((g for r in records for g in r.gpus), default=-1)
    if highest >= topo.gpus:
        raise UserError(f"the log uses GPU {highest} but {topology_file} describes {topo.gpus} GPU(s): wrong --topology-file?")


def _summary(log: Path, records, new: int, topo) -> dict:
    sections: dict[int, list] = {}
    for record in records:
        sections.setdefault(record.params["section"], []).append(record)
    return {
        "file": str(log),
        "rows": len(records),
        "new": new,
        "fingerprint": topo.fingerprint if topo else None,
        "fabric": topo.fabric if topo else None,
        "sections": [
            {
                "op": rows[0].op,
                "rows": len(rows),
                "ranks": rows[0].world_size,
                "peak_busbw_gbs": max(r.busbw_gbs for r in rows),
                "peak_bytes": max(rows, key=lambda r: r.busbw_gbs).bytes,
                "avg_busbw_gbs": rows[0].extra.get("avg_busbw_gbs"),
            }
            for rows in sections.values()
        ],
    }
