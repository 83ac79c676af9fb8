"""Aggregated rows (report.aggregate) as rich tables for people: one table per workload, the
key fields, then each metric as 'median [min-max] ±spread'. User strings are not markup."""

from __future__ import annotations

from typing import Any

from wirewise.orchestrator.report.aggregate import GROUP_FIELDS, METRICS
from wirewise.units import bytes_text

_SHOWN = {  # metric -> (heading, formatter of one value)
    "busbw_gbs": ("busbw GB/s", lambda v: _bandwidth(v)),
    "algbw_gbs": ("algbw GB/s", lambda v: _bandwidth(v)),
    "time_us": ("time us", lambda v: f"{v:.1f}"),
    "tokens_per_s": ("tokens/s", lambda v: f"{v:,.0f}"),
    "step_time_s": ("step ms", lambda v: f"{v * 1000:.1f}"),
    "peak_mem_bytes": ("peak GB", lambda v: bytes_text(v, "GB")),
    "mfu": ("MFU", lambda v: f"{v:.1%}"),
}
_COMPARED = {**_SHOWN, "samples_per_s": ("samples/s", lambda v: f"{v:,.1f}")}  # compare's, for models without tokens


def _bandwidth(gbs: float) -> str:
    """Two decimals as nccl-tests prints, three digits below 1 GB/s (CPU ranks, small sizes)."""
    return f"{gbs:.2f}" if gbs >= 1 else f"{gbs:.3g}"


SHAPE = ("ranks", "node_count", "ranks_per_node")  # shown as one column: nodes x GPUs per node
HEADINGS = {"shape": "nodes x GPUs", "in_place": "place", "micro_batch": "batch", "seq_len": "seq"}  # no wider than their values
WHOLE = ("source", "model", "strategy", "op", "transport", "status", "n")  # names never cut or wrapped in a narrow table


def results_tables(rows: list[dict[str, Any]], width: int | None = None) -> list:
    """One table per workload; a key field with one value in every row goes into the title. A
    run's ranks, nodes and ranks per node are one column, 'nodes x GPUs per node' (1 x 4, 2 x 2).
    Where a column per varying field would not fit `width` (a training table varies in up to
    eight), the fields are one 'case' column that wraps between fields, each as field=value."""
    tables = []
    for workload in dict.fromkeys(row["workload"] for row in rows):
        mine = [row for row in rows if row["workload"] == workload]
        keys = [*_shaped([name for name in GROUP_FIELDS if any(name in row for row in mine)]), "status"]
        same = [name for name in keys if len({cell_text(name, _cell(row, name)) for row in mine}) == 1]
        varying = [name for name in keys if name not in same]
        common = ", ".join(f"{_heading(name)} {cell_text(name, _cell(mine[0], name))}" for name in same)
        title = f"{workload}: {sum(r['count'] for r in mine)} results" + (f"; {common}" if common else "")
        metrics = [m for m in METRICS[workload] if m in _SHOWN]
        cells = [[cell_text(name, _cell(row, name)) for name in varying] for row in mine]
        if width is None or _least_width(varying, cells, mine, metrics) <= width:
            table = _columns_table(title, mine, varying, metrics)
        else:
            table = _case_column_table(title, mine, varying, metrics)
        tables.append(table)
    return tables


def _columns_table(title: str, rows: list[dict[str, Any]], varying: list[str], metrics: list[str]):
    """A column per varying field; names are never cut or wrapped (WHOLE), the figures wrap at
    their line break (metric_text)."""
    table = _table(title)
    for name in [*varying, "n"]:
        table.add_column(_heading(name), justify="right" if name in ("bytes", "shape", "n") else "left",
                         no_wrap=name in WHOLE, overflow="fold")
    for metric in metrics:
        table.add_column(_SHOWN[metric][0], justify="right", overflow="fold")
    for row in rows:
        table.add_row(*(cell_text(name, _cell(row, name)) for name in varying), str(row["count"]),
                      *(metric_text(row, m) for m in metrics))
    return table


def _case_column_table(title: str, rows: list[dict[str, Any]], varying: list[str], metrics: list[str]):
    """The varying fields as one 'case' column ('mistral-1b ddp precision=bf16 batch=8 ...'),
    each field=value one word so that a line breaks only between fields; a figure's range
    stays on its own line (metric_text), and figures are never cut."""
    table = _table(title)
    table.add_column("case", overflow="fold")
    for name in ("status", "n") if "status" in varying else ("n",):
        table.add_column(name, justify="right" if name == "n" else "left", no_wrap=True)
    for metric in metrics:
        table.add_column(_SHOWN[metric][0], justify="right", no_wrap=True)
    fields = sorted((name for name in varying if name != "status"), key=lambda name: name not in WHOLE)  # names first
    for row in rows:
        case = " ".join(_case_word(name, _cell(row, name)) for name in fields)
        status = [cell_text("status", row["status"])] if "status" in varying else []
        table.add_row(case, *status, str(row["count"]), *(metric_text(row, m) for m in metrics))
    return table


def _case_word(name: str, value: Any) -> str:
    """A field as one word: a name's value alone (mistral-1b, ddp), others field=value, the
    shape as nodes×GPUs=2×4."""
    text = cell_text(name, value)
    if name in WHOLE:
        return text
    if name == "shape":
        return "nodes×GPUs=" + text.replace(" x ", "×").replace(" ", "_")
    return f"{name}={text.replace(' ', '_')}"


def _table(title: str):
    from rich import box
    from rich.table import Table

    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 0))


def _least_width(varying: list[str], cells: list[list[str]], rows: list[dict[str, Any]], metrics: list[str]) -> int:
    """The narrowest a column per field can be with no field cut: each field as wide as its
    heading and values, each figure as its longest word or line (its heading wraps between
    words), one space between columns."""
    fields = [max(len(_heading(name)), *(len(row[i]) for row in cells)) for i, name in enumerate(varying)]
    counts = max(len(str(row["count"])) for row in rows)
    figures = [max(*(len(word) for word in _SHOWN[m][0].split()), *(len(line) for row in rows for line in metric_text(row, m).split("\n")))
               for m in metrics]
    columns = [*fields, counts, *figures]
    return sum(columns) + len(columns) - 1


def _shaped(keys: list[str]) -> list[str]:
    """The key fields with the rank count, nodes and ranks per node as one 'shape' where all three are keys."""
    if not all(name in keys for name in SHAPE):
        return keys
    at = keys.index("ranks")
    rest = [name for name in keys if name not in SHAPE]
    return [*rest[:at], "shape", *rest[at:]]


def _cell(row: dict[str, Any], name: str) -> Any:
    return tuple(row.get(part) for part in SHAPE) if name == "shape" else row.get(name)


def _heading(name: str) -> str:
    return HEADINGS.get(name, name)


def left_out_lines(left_out: list[dict[str, Any]], where: str = "") -> list[str]:
    """One line per reason results were left out: how many, why, how to show them."""
    return [f"{where}{entry['results']} result(s) left out: {entry['why']}; {entry['show']} shows them" for entry in left_out]


def cell_text(name: str, value: Any) -> str:
    """A key field as text: sizes in K/M/G, fingerprints shortened, absent values '-'."""
    from rich.markup import escape

    if name == "shape":
        return _shape_text(*value)
    if value is None:
        return "unknown" if name in SHAPE else "-"  # an imported log without its rank or node count
    if name == "bytes":
        return bytes_text(value)
    if name == "fingerprint":
        return value[:12]
    if name == "in_place":
        return "in" if value else "out"
    if name == "cuda_graph":
        return "graph" if value else "eager"
    if name == "compile":
        return "compiled" if value else "eager"
    if name == "nodes":  # empty: a record that names none
        return escape(",".join(value)) or "-"
    return escape(str(value))


def _shape_text(ranks: int | None, nodes: int | None, per_node: int | None) -> str:
    """'2 x 4' (nodes x GPUs per node); '8 ranks, nodes unknown' where the nodes went unsaid."""
    if nodes is not None and per_node is not None:
        return f"{nodes} x {per_node}"
    if ranks is None:
        return "unknown"
    return f"{ranks} ranks, nodes unknown" if nodes is None else f"{ranks} ranks on {nodes} nodes"


def metric_text(row: dict[str, Any], metric: str) -> str:
    """'median ±spread%' over '[min-max]', or '-' where the row has no figure (not ok, or not measured)."""
    if f"{metric}_median" not in row:
        return "-"
    fmt = _SHOWN[metric][1]
    text = fmt(row[f"{metric}_median"])
    if row[f"{metric}_count"] > 1:
        spread = row[f"{metric}_spread"]
        text += f" ±{spread / 2:.0%}" if spread is not None else ""
        # the range on a line of its own: a narrow table wraps it whole, not mid-figure
        text += f"\n[{fmt(row[f'{metric}_min'])}-{fmt(row[f'{metric}_max'])}]"
    return text


def compare_tables(result: dict[str, Any]) -> list:
    """compare's dict (report.compare) as tables: the matching cases, then each side's own."""
    from rich.markup import escape
    from rich.table import Table

    a, b = escape(result["a"]), escape(result["b"])
    tables = []
    for workload, metric in dict.fromkeys((row["workload"], row["metric"]) for row in result["cases"]):
        rows = [row for row in result["cases"] if (row["workload"], row["metric"]) == (workload, metric)]
        fields = _varying(rows)
        table = Table(title=f"{workload}: {_COMPARED[metric][0]}, A = {a}, B = {b}" + _same_text(rows, fields))
        for name in [*fields, "A", "B", "A/B", "verdict"]:
            table.add_column(_heading(name), justify="left" if name in ("verdict", "op", "model", "strategy", "source") else "right")
        for row in rows:
            sides = [_side_text(row[side], row[f"{side}_not_ok"], metric) for side in ("a", "b")]
            ratio = f"{row['ratio']:.3f}" if row["ratio"] is not None else "-"
            table.add_row(*(cell_text(name, _cell(row, name)) for name in fields), *sides, ratio,
                          verdict_text(row, result["alpha"]))
        tables.append(table)
    for side, label in (("only_a", a), ("only_b", b)):
        if result[side]:
            fields = _varying(result[side])
            table = Table(title=f"only in {label}: {len(result[side])} cases" + _same_text(result[side], fields))
            for name in ["workload", *fields]:
                table.add_column(_heading(name))
            for row in result[side]:
                table.add_row(row["workload"], *(cell_text(name, _cell(row, name)) for name in fields))
            tables.append(table)
    return tables


def compare_notes(result: dict[str, Any]) -> list[str]:
    """What compare says beside its tables: no case in common, and what each side left out."""
    notes = []
    if not result["cases"]:
        notes.append(f"no case in common: {result['a']} and {result['b']} measured nothing alike "
                     f"({len(result['only_a'])} case(s) only in A, {len(result['only_b'])} only in B)")
    for side in ("a", "b"):
        notes += left_out_lines(result[f"left_out_{side}"], f"{result[side]}: ")
    return notes


def _varying(rows: list[dict[str, Any]]) -> list[str]:
    """The case fields whose value differs between the rows (the shape as one column)."""
    keys = _shaped([name for name in GROUP_FIELDS if any(name in row for row in rows)])
    return [name for name in keys if len({cell_text(name, _cell(row, name)) for row in rows}) > 1]


def _same_text(rows: list[dict[str, Any]], varying: list[str]) -> str:
    keys = _shaped([name for name in GROUP_FIELDS if any(name in row for row in rows)])
    same = [name for name in keys if name not in varying and _cell(rows[0], name) not in (None, (None, None, None))]
    return "; " + ", ".join(f"{_heading(name)} {cell_text(name, _cell(rows[0], name))}" for name in same) if same else ""


def _side_text(stats: dict[str, Any] | None, not_ok: dict[str, int], metric: str) -> str:
    fmt = _COMPARED[metric][1]
    text = "-" if stats is None else fmt(stats["median"]) + (f" [{fmt(stats['min'])}-{fmt(stats['max'])}]" if stats["count"] > 1 else "")
    failures = ", ".join(f"{count} {status}" for status, count in not_ok.items())
    return f"{text} ({failures})" if failures else text


def verdict_text(row: dict[str, Any], alpha: float) -> str:
    """'+12.0% different (p=0.008)', '+1.0% no difference shown (p=0.41)', or why none can be."""
    if row["ratio"] is None:
        return "no ok runs on a side"
    change = f"{row['pdiff']:+.1%}"
    if row["different"]:
        return f"{change} different (p={row['p']:.2g} <= {alpha:g})"
    if row["different"] is None:
        runs = f"{row['a']['count']} and {row['b']['count']} runs"
        return f"{change} not judged: {runs} cannot show a difference at {alpha:g} (repeat both sides)"
    return f"{change} no difference shown (p={row['p']:.2g} > {alpha:g})"


def doctor_table(found: dict[str, Any]):
    """doctor's findings (it has some): node, check, evidence, what to check."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(f"{len(found['findings'])} finding(s) on {', '.join(found['nodes'])}"))
    for name in ("node", "check", "evidence", "what to check"):
        table.add_column(name, overflow="fold", max_width=70)
    for f in found["findings"]:  # node names and evidence come from the store and NVML: text, never markup
        table.add_row(*(escape(str(f[key])) for key in ("node", "check", "evidence", "advice")))
    return table
