"""A training benchmark's record as a table: throughput, MFU, memory per rank, model state."""

from __future__ import annotations

from wirewise.units import bytes_text


def _mfu(mfu: float | None, extra: dict) -> str:
    """The MFU on its basis (the datasheet's peak), and against a measured peak where one was given."""
    shown = f"{mfu:.1%} (peak: {extra.get('peak_source')})" if mfu is not None else "-"
    if extra.get("mfu_measured_peak") is not None:
        shown += f"; {extra['mfu_measured_peak']:.1%} against {extra.get('measured_peak_source')}"
    return shown


SIZES_PER_LINE = 3  # per-rank sizes, so a line never outgrows an 80-column table's value column


def _sizes(values) -> str:
    """Per-rank sizes, a few per line: a table wraps between values, never inside one."""
    if not values:
        return "-"
    texts = [bytes_text(v, "memory") for v in values]
    return ",\n".join(", ".join(texts[i : i + SIZES_PER_LINE]) for i in range(0, len(texts), SIZES_PER_LINE))


def summary_table(record):
    """A rich Table of one training record, ok or not."""
    from rich.markup import escape
    from rich.table import Table

    extra = record.extra
    ok = record.status == "ok"
    title = f"train {escape(record.model)} / {record.strategy} x{record.world_size}: [{'green' if ok else 'red'}]{record.status}[/]"
    table = Table(title=title, show_header=False)
    table.add_column("what", no_wrap=True)
    table.add_column("value")
    rows = [
        ("micro-batch / seq len", f"{record.micro_batch} / {record.seq_len or '-'}"),
        ("precision / engine", f"{extra.get('precision', '-')} / {record.params.get('engine', '-')}"),
    ]
    if ok:
        rows += [
            ("step time", f"{record.step_time_s * 1000:.1f} ms"),
            ("samples/s", f"{record.samples_per_s:,.1f}"),
            ("tokens/s", f"{record.tokens_per_s:,.0f}" if record.tokens_per_s else "-"),
            ("MFU", _mfu(record.mfu, extra)),
            ("peak memory per rank", _sizes(record.peak_mem_bytes)),
            ("model state per rank", _sizes(record.model_state_bytes)),
            ("  params", _sizes(extra.get("param_bytes"))),
            ("  grads", _sizes(extra.get("grad_bytes"))),
            ("  optimizer state", _sizes(extra.get("optimizer_bytes"))),
            ("loss first -> last", f"{extra['losses'][0]:.4f} -> {extra['losses'][-1]:.4f}"),
        ]
    else:
        rows += [("peak memory per rank", _sizes(record.peak_mem_bytes)), ("error", (record.error or "")[-600:])]
    for name, value in rows:
        table.add_row(name, escape(value))  # values hold user strings (paths, error text)
    return table
