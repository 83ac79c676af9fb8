"""`wirewise baseline export` / `import`: a node type's expected figures, to a file and back.
Parsing and printing only: the work is in wirewise.orchestrator.health.baseline."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import DbOption, JsonOption, command_group, print_json, warn

app = command_group("Baselines per node type (fingerprint): export them to a file, import them on another cluster.")


@app.command("export")
def export(
    out: Annotated[str, typer.Option("--out", "-o", help="The file to write (JSON; replaced whole, never half-written), a device or FIFO, or - for stdout.")],
    fingerprint: Annotated[str | None, typer.Option("--fingerprint", help="Only this wiring (a fingerprint or a unique prefix).")] = None,
    include_cpu: Annotated[bool, typer.Option("--include-cpu", help="Include CPU-rank (gloo) runs, which measure the host, not the fabric.")] = False,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Median and scaled MAD per case (op, size, GPU-set shape, ...; model and strategy for training)
    over repeats and nodes, with how many results and nodes each rests on."""
    from wirewise.atomic import json_text, write_text_atomic
    from wirewise.errors import UserError
    from wirewise.orchestrator.health.baseline import export_baselines
    from wirewise.orchestrator.store import Store

    to_stdout = out == "-"
    if to_stdout and json:
        raise UserError("--out - writes the baselines to stdout: leave out --json")
    if not to_stdout and not Path(out).parent.is_dir():
        raise UserError(f"--out {out!r}: folder {str(Path(out).parent)!r} does not exist")
    notes: list[str] = []
    document = export_baselines(Store.existing(db), fingerprint, include_cpu, notes)
    if not document["baselines"]:
        raise UserError("no ok results to make baselines of" + (f" for --fingerprint {fingerprint}" if fingerprint else "")
                        + " (wirewise results lists what is stored)")
    text = json_text(document, indent=1)
    if to_stdout:
        sys.stdout.write(text + "\n")
    else:
        try:
            write_text_atomic(Path(out), text)
        except OSError as exc:  # a link to a missing folder, a full or read-only disk
            raise UserError(f"--out {out!r}: cannot write it ({exc.strerror or exc}); nothing written") from None
    warn(notes)
    summary = {"file": out, "baselines": len(document["baselines"]), "fingerprints": sorted(document["wirings"]),
               "results": sum(b["results"] for b in document["baselines"])}
    if json:
        print_json(summary)
    elif not to_stdout:
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
