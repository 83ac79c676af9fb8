"""`wirewise estimate`: memory per GPU for each data-parallel strategy, as a table or JSON. The
work is in wirewise.orchestrator.advise."""

from typing import Annotated

import typer

from wirewise.orchestrator.cli.common import (
    AccountingOption, BatchOption, DbOption, GpuMemOption, JsonOption, SeqOption, console, emit,
)


def estimate(
    model: Annotated[str, typer.Option("--model", "-m", help="A registry model (mistral-7b, ...) or a transformers config.json / model folder.")],
    gpus: Annotated[int, typer.Option("--gpus", "-k", help="Data-parallel ranks.")] = 1,
    strategy: Annotated[str | None, typer.Option("--strategy", "-s", help="One of ddp, zero1, zero2, zero3, fsdp (default: all).")] = None,
    batch_size: BatchOption = 1,
    seq_len: SeqOption = None,
    accounting: AccountingOption = "article",
    gpu_mem_gb: GpuMemOption = None,
    gpu_name: Annotated[str | None, typer.Option("--gpu-name", help="The GPU's model (e.g. 'NVIDIA H200'): its memory, where --gpu-mem-gb is not given.")] = None,
    db: DbOption = None,
    json: JsonOption = False,
) -> None:
    """Memory per GPU for each strategy: model states by the ZeRO formulas, activations, and whether it fits."""
    from wirewise.orchestrator.advise import estimate as estimate_memory
    from wirewise.orchestrator.store import Store

    result = estimate_memory(
        model, gpus, [strategy] if strategy is not None else None, batch_size, seq_len, accounting, gpu_mem_gb,
        gpu_name=gpu_name, store=Store.open_existing(db),
    )
    emit(result, json, print_estimate)


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
            notes.append(f"{row['strategy']}: calibrated x{cal['factor']:g} on {cal['results']} measured peak(s) "
                         f"(median {cal['measured_peak_gb']:g} GB; source {', '.join(cal['sources'])})")
    for note in notes:
        out.print(f"- {note}", markup=False, highlight=False)


