"""`wirewise report`: the figures as PNG files and one self-contained HTML page.

The page (index.html) needs nothing beside it: the figures are embedded as base64 data URIs,
the styles inline, no script. Under each figure, the numbers it drew; at the end, the wiring
of every node the results came from. Every user string is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from wirewise.atomic import write_text_atomic
from wirewise.errors import UserError
from wirewise.orchestrator.report.draw import draw
from wirewise.orchestrator.report.aggregate import Aggregate
from wirewise.orchestrator.report.figures import Figure, FigureCases, Panel, build_figures, figure_cases
from wirewise.orchestrator.report.query import resolve
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import Filters, result_wirings
from wirewise.orchestrator.store.topology import node_wirings
from wirewise.units import human_bytes


def write_report(store: Store, filters: Filters, out: Path) -> dict[str, Any]:
    """Draw every figure the matching results have into `out`, then index.html; returns what
    was written and the series of every figure."""
    filters = resolve(store, filters)
    found = figure_cases(store, filters)
    cases = found.cases
    results = sum(case["count"] for case in cases)
    left_out = left_out_of(found)
    if not results:
        why = "; ".join(f"{e['results']} left out: {e['why']} ({e['show']} shows them)" for e in left_out)
        raise UserError(f"no results match: nothing to report ({why or 'wirewise results lists what is stored'})")
    _check_out(out)
    figures = build_figures(cases)
    imported = sum(case["count"] for case in cases if case["source"] == "nccl-tests")
    wirings = wirings_of(store, result_wirings(store, filters))
    index = out / "index.html"
    try:
        out.mkdir(parents=True, exist_ok=True)
        drawn = [(figure, draw(figure, out)) for figure in figures]
        write_text_atomic(index, page(filters, (results, imported), drawn, wirings, left_out))
    except OSError as exc:  # full, read-only, or changed under us since _check_out
        where = f" ({exc.filename})" if exc.filename else ""
        raise UserError(f"--out {str(out)!r}: cannot write the report there: {exc.strerror or exc}{where}") from None
    return {
        "out": str(out),
        "index": str(index),
        "results": results,
        "left_out": left_out,
        "figures": [{**figure.to_json(), "file": str(path)} for figure, path in drawn],
        "nodes": wirings,
    }


def left_out_of(found: FigureCases) -> list[dict[str, Any]]:
    """The matching results no figure draws, by reason: CPU-rank runs (without --include-cpu),
    and collective runs that did not end ok (the figures draw successful runs; a training run
    that failed is drawn as its status, in its strategy's slot)."""
    left = Aggregate([], found.cpu_left_out).left_out()
    failed = sum(c["count"] for c in found.cases if c["workload"] == "collective" and c["status"] != "ok")
    if failed:
        left.append({"results": failed, "why": "collective runs that did not end ok (the figures draw successful runs)",
                     "show": "wirewise results --status failed (or oom, timeout, cancelled)"})
    return left


def _check_out(out: Path) -> None:
    """A folder wirewise may write the report into, checked before anything is drawn."""
    import os

    if out.is_symlink() and not out.exists():
        raise UserError(f"--out {str(out)!r} is a link to {os.readlink(out)!r}, which does not exist")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {str(out)!r} is a file, not a folder")
    if not out.exists() and not out.parent.is_dir():
        raise UserError(f"--out {str(out)!r}: its folder {str(out.parent)!r} does not exist")
    if (out / "index.html").is_dir():
        raise UserError(f"--out {str(out)!r}: index.html there is a folder; move it away or give another --out")
    folder = out if out.exists() else out.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"--out {str(out)!r}: {str(folder)!r} is not writable")


def wirings_of(store: Store, pairs: set[tuple[str | None, str]]) -> list[dict[str, Any]]:
    """The stored wiring of each (node, fingerprint) the results name, in the node's numbering,
    by node name."""
    seen = node_wirings(store, fingerprints={fingerprint for _node, fingerprint in pairs})
    return [
        {
            "node": w.node, "fabric": w.fabric, "switched": w.switched, "fingerprint": w.fingerprint,
            "gpu_model": w.gpu_model, "groups": w.groups, "links": w.links,
        }
        for w in sorted(seen, key=lambda w: w.node)
        if (w.node, w.fingerprint) in pairs
    ]


# -- the page -------------------------------------------------------------------------------
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1300px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
img { max-width: 100%; border: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.scroll { overflow-x: auto; }
.imported { color: #8a4b00; }
.note { color: #a00; }
"""


def page(filters: Filters, counts: tuple[int, int], drawn: list[tuple[Figure, Path]], wirings: list[dict[str, Any]],
         left_out: list[dict[str, Any]] = ()) -> str:
    """The page of the figures drawn; `counts`: how many results match, how many of them
    imported; `left_out`: what matched but is not drawn, and why."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    asked = ", ".join(f"{k} {v}" for k, v in filters.asked().items()) or "none"
    results, imported = counts
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>wirewise report</title>", f"<style>{_STYLE}</style></head><body>",
        "<h1>wirewise report</h1>",
        f"<p>{results} results ({imported} imported from nccl-tests, marked "
        '<span class="imported">[nccl-tests]</span> and drawn dashed); filters: '
        f"{_e(asked)}; written {when}. Figures show medians over repeats of successful runs.</p>",
    ]
    parts += [f"<p>{entry['results']} results left out: {_e(entry['why'])}; {_e(entry['show'])} shows them.</p>"
              for entry in left_out]
    if not drawn:
        parts.append("<p>The matching results hold nothing these figures draw.</p>")
    for figure, path in drawn:
        parts += _figure_section(figure, path)
    parts += _wiring_section(wirings)
    parts.append("</body></html>")
    return "\n".join(parts)


def _e(value: Any) -> str:
    return html.escape(str(value))


def _figure_section(figure: Figure, path: Path) -> list[str]:
    data = base64.b64encode(path.read_bytes()).decode()
    parts = [f'<h2 id="{_e(figure.name)}">{_e(figure.title)}</h2>',
             f'<img alt="{_e(figure.title)}" src="data:image/png;base64,{data}">']
    for panel in figure.panels:
        parts += _panel_table(panel)
    return parts


def _panel_table(panel: Panel) -> list[str]:
    """Rows are x values, columns the series: the numbers the panel drew."""
    xs = list(dict.fromkeys(x for series in panel.series for x in series.x))
    if panel.kind != "bars":
        xs.sort()
    head = "".join(f'<th class="{"imported" if s.source == "nccl-tests" else ""}">{_e(s.label)}</th>' for s in panel.series)
    rows = []
    for x in xs:
        cells = []
        for series in panel.series:
            value = dict(zip(series.x, series.y)).get(x)
            note = dict(zip(series.x, series.notes)).get(x) if series.notes else None
            cells.append(f'<td class="note">{_e(note)}</td>' if value is None and note else f"<td>{_number(value)}</td>")
        rows.append(f"<tr><td>{_e(_x_text(panel, x))}</td>{''.join(cells)}</tr>")
    caption = f"{_e(panel.title + ': ' if panel.title else '')}{_e(panel.ylabel)} by {_e(panel.xlabel)}"
    return [f'<div class="scroll"><table><caption>{caption}</caption>',
            f"<tr><th>{_e(panel.xlabel)}</th>{head}</tr>", *rows, "</table></div>"]


def _x_text(panel: Panel, x: Any) -> str:
    return human_bytes(x) if panel.kind == "size" else str(x)


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3g}"


def _wiring_section(wirings: list[dict[str, Any]]) -> list[str]:
    parts = ["<h2>Wiring of the nodes</h2>"]
    if not wirings:
        parts.append("<p>No stored wiring for these results (give --topology-file when measuring or importing).</p>")
    for wiring in wirings:
        groups = " ".join("[" + ",".join(map(str, g)) + "]" for g in wiring["groups"] or []) or "-"
        parts.append(
            f"<h3>{_e(wiring['node'])}: {_e(wiring['fabric'])}</h3><p>{_e(wiring['gpu_model'] or 'GPU model unknown')}, "
            f"NVLink groups {_e(groups)}, NVSwitch {_e({True: 'yes', False: 'no', None: 'unknown'}[wiring['switched']])}, "
            f"fingerprint <code>{_e(wiring['fingerprint'])}</code></p>"
        )
        links = wiring["links"] or []
        head = "".join(f"<th>GPU{i}</th>" for i in range(len(links)))
        rows = "".join(f"<tr><td>GPU{i}</td>{''.join(f'<td>{_e(label)}</td>' for label in row)}</tr>" for i, row in enumerate(links))
        parts.append(f'<div class="scroll"><table><tr><th></th>{head}</tr>{rows}</table></div>')
    return parts
