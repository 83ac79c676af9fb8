"""`wirewise baseline export` / `import`: a node type's expected figures, to a file and back.
Parsing and printing only: the work is in wirewise.orchestrator.health.baseline."""

from pathlib import Path
from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import DbOption, JsonOption, command_group, print_json

app = command_group("Baselines per node type (fingerprint): export them to a file, import them on another cluster.")


@app.command("export")
def export(
    out: Annotated[Path, typer.Option("--out", "-o", help="The file to write (JSON).")],
    fingerprint: Annotated[str | None, typer.Option("--fingerprint", help="Only this wiring (a fingerprint or a unique prefix).")] = None,
    include_cpu: Annotated[bool, typer.Option("--include-cpu", help="Include CPU-rank (gloo) runs, which measure the host, not the fabric.")] = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Median and spread per case (op, size, GPU-set shape, ...; model and strategy for training)
    over repeats and nodes, with how many results and nodes each rests on."""
    from wirewise.atomic import write_json_atomic
    from wirewise.errors import UserError
    from wirewise.orchestrator.health.baseline import export_baselines
    from wirewise.orchestrator.store import Store

    if not out.parent.is_dir():
        raise UserError(f"--out {str(out)!r}: folder {str(out.parent)!r} does not exist")
    document = export_baselines(Store(db), fingerprint, include_cpu)
    if not document["baselines"]:
        raise UserError("no ok results to make baselines of" + (f" for --fingerprint {fingerprint}" if fingerprint else "")
                        + " (wirewise results lists what is stored)")
    write_json_atomic(out, document)
    summary = {"file": str(out), "baselines": len(document["baselines"]), "fingerprints": sorted(document["wirings"]),
               "results": sum(b["results"] for b in document["baselines"])}
    if json:
        print_json(summary)
    else:
        typer.echo(f"{summary['baselines']} baselines of {len(summary['fingerprints'])} wiring(s), "
                   f"resting on {summary['results']} results, written to {out}")


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="A file written by `wirewise baseline export`.")],
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Store a file's baselines: doctor judges by them until this cluster's own history of a case
    rests on enough results (the rules' min_results)."""
    from wirewise.orchestrator.health.baseline import read_file
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.health import import_baselines

    baselines = read_file(file)  # checked before the database is opened: a bad file changes nothing
    done = {"file": str(file), "baselines": len(baselines), **import_baselines(Store(db), baselines),
            "fingerprints": sorted({b.fingerprint for b in baselines})}
    if json:
        print_json(done)
    else:
        typer.echo(f"imported {done['baselines']} baselines of {len(done['fingerprints'])} wiring(s) from {file} "
                   f"({done['added']} new, {done['replaced']} replaced)")
