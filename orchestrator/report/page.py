"""`wirewise report`: the figures as PNG files and one self-contained HTML page.

The page (index.html) needs nothing beside it: the figures are embedded as base64 data URIs,
the styles inline, no script. Under each figure, the numbers it drew; at the end, the wiring
of every node the results came from. Every user string is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from collections.abc import Callable
from typing import Any

from wirewise.atomic import write_text_atomic
from wirewise.clock import utcnow
from wirewise.errors import UserError
from wirewise.orchestrator.report.draw import draw, wire_colours
from wirewise.orchestrator.report.aggregate import Aggregate, aggregate
from wirewise.orchestrator.report.figures import READING, Figure, FigureCases, Panel, build_figures, figure_cases
from wirewise.orchestrator.results.filters import resolve
from wirewise.orchestrator.report.summary import Num, Section, summarize
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import Filters, Span, result_wirings, span_of
from wirewise.orchestrator.store.topology import node_wirings
from wirewise.units import bytes_text


def write_report(store: Store, filters: Filters, out: Path, card_memory: Callable[[str], float | None] | None = None,
                 doctor: Callable[[Store, Filters], dict[str, Any] | None] | None = None) -> dict[str, Any]:
    """Draw every figure the matching results have into `out`, then index.html, then remove
    what an earlier report wrote there and this one did not (MANIFEST); returns what was
    written, the summary and the series of every figure. `card_memory`: one GPU's memory in GB
    from its model name; `doctor`: what doctor says of the history (both from later stages:
    the command passes them in)."""
    filters = resolve(store, filters)
    found = figure_cases(store, filters)
    cases = found.cases
    results = sum(case["count"] for case in cases)
    left_out = left_out_of(found)
    if not results:
        why = "; ".join(f"{e['results']} left out: {e['why']} ({e['show']} shows them)" for e in left_out)
        raise UserError(f"no results match: nothing to report ({why or 'wirewise results lists what is stored'})")
    _check_out(out)
    wirings = wirings_of(store, result_wirings(store, filters))
    memory = gpu_memory_of(wirings, card_memory) if card_memory else {}
    span = span_of(store, filters)
    figures = build_figures(cases, memory, span.memory_caps)
    judged = doctor(store, filters) if doctor and results <= LIVE_DOCTOR_MOST else stored_verdicts(store, span.nodes)
    sections = summarize(aggregate(store, filters).rows, wirings, span, memory, judged)
    index = out / "index.html"
    try:
        out.mkdir(parents=True, exist_ok=True)
        colours = wire_colours(figures)
        drawn = [(figure, draw(figure, out, colours)) for figure in figures]
        write_text_atomic(index, page(filters, span, sections, drawn, wirings, left_out))
        removed = tidy(out, [index, *(path for _figure, path in drawn)])
    except OSError as exc:  # full, read-only, or changed under us since _check_out
        where = f" ({exc.filename})" if exc.filename else ""
        raise UserError(f"--out {str(out)!r}: cannot write the report there: {exc.strerror or exc}{where}") from None
    return {
        "out": str(out),
        "index": str(index),
        "results": results,
        "left_out": left_out,
        "summary": [{"title": section.title, "sentences": section.text(),
                     "numbers": [part.to_json() for sentence in section.sentences for part in sentence if isinstance(part, Num)]}
                    for section in sections],
        "figures": [{**figure.to_json(), "file": str(path)} for figure, path in drawn],
        "removed": removed,
        "nodes": wirings,
    }


MANIFEST = ".wirewise-report.json"  # the files the last report wrote into its folder
# doctor reads every result of the nodes' wirings one by one: over 100,000 (the benchmark's)
# that was 7 s of CPU, most of the report's 10 s target; past this many matching results the
# summary gives the verdicts doctor last recorded instead, and says when it ran.
LIVE_DOCTOR_MOST = 20_000


def stored_verdicts(store: Store, nodes: list[str]) -> dict[str, Any]:
    """What doctor last recorded of each node (wirewise doctor, its health check, fleet actions):
    its verdict, open findings and when; a node it never checked is 'not checked'."""
    from wirewise.orchestrator.store.health import findings, latest_checks

    checks = latest_checks(store, nodes)
    open_rows = findings(store, nodes)
    flagged = {row["node"] for row in open_rows}
    return {
        "stored": True,
        "verdicts": {node: "flagged" if node in flagged else "healthy" if node in checks else "not checked" for node in nodes},
        "findings": [{"node": row["node"], "check": row["rule"], "evidence": row["evidence"]} for row in open_rows],
        "checked_at": {node: check["checked_at"] for node, check in checks.items()},
    }


def tidy(out: Path, written: list[Path]) -> list[str]:
    """Remove the files an earlier report listed in the folder's MANIFEST that this one did not
    write (a figure whose data is gone), then list this one's. Only plain files of the folder
    itself that a report wrote are ever removed: a user's own files there are never touched."""
    import json

    names = sorted(path.name for path in written)
    before: list[str] = []
    try:
        listed = json.loads((out / MANIFEST).read_text())
        before = [name for name in listed.get("files", []) if isinstance(name, str)]
    except (OSError, ValueError, AttributeError):  # none yet, or not one of ours: remove nothing
        pass
    removed = []
    for name in sorted(set(before) - set(names)):
        path = out / name
        if Path(name).name == name and name not in (".", "..", MANIFEST) and path.is_file() and not path.is_symlink():
            path.unlink()
            removed.append(name)
    write_text_atomic(out / MANIFEST, json.dumps({"written_by": "wirewise report", "files": names}, indent=1) + "\n")
    return removed


def gpu_memory_of(wirings: list[dict[str, Any]], card_memory: Callable[[str], float | None]) -> dict[str, float]:
    """One card's memory in GB per fabric, from its nodes' GPU model, where they agree and the
    model is known."""
    models: dict[str, set] = {}
    for wiring in wirings:
        models.setdefault(wiring["fabric"], set()).add(wiring["gpu_model"])
    found = {}
    for fabric, names in models.items():
        sizes = {card_memory(name) if name else None for name in names}
        if len(sizes) == 1 and None not in sizes:
            found[fabric] = sizes.pop()
    return found


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
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1300px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.3em; }
.lede { color: #555; margin-top: 0; }
.summary p { max-width: 62em; margin: 0.3em 0; }
nav > ol { columns: 2; max-width: 62em; } nav li { break-inside: avoid; }
img { max-width: 100%; border: 1px solid #ddd; }
figure { margin: 0.5em 0 1em; } figcaption { max-width: 62em; color: #444; margin: 0.3em 0; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
caption { text-align: left; font-weight: 600; }
details summary { cursor: pointer; color: #245; }
.scroll { overflow-x: auto; }
.imported { color: #8a4b00; }
.note { color: #a00; }
.num { font-variant-numeric: tabular-nums; }
@media print {
  body { max-width: none; margin: 0; font-size: 10pt; }
  nav, .noprint { display: none; }
  h2 { break-before: page; } h2.first { break-before: avoid; }
  figure, table, h3 { break-inside: avoid; }
  img { max-width: 100%; border: none; }
  details > *:not(summary) { display: block; } details summary { display: none; }
  a { color: inherit; text-decoration: none; }
}
"""


def page(filters: Filters, span: Span, sections: list[Section], drawn: list[tuple[Figure, Path]],
         wirings: list[dict[str, Any]], left_out: list[dict[str, Any]] = ()) -> str:
    """The page: the summary first, a contents list, then a section per figure (its caption,
    the image, the numbers it drew in a table to open), the wiring of the nodes, and notes."""
    when = utcnow().strftime("%Y-%m-%d %H:%M UTC")
    asked = ", ".join("CPU-rank runs included" if k == "include_cpu" else f"{k} {v}" for k, v in filters.asked().items())
    fabrics = ", ".join(sorted({w["fabric"] for w in wirings}))
    heading = f"What the wiring did: {fabrics}" if fabrics else "What the measurements show (no wiring stored)"
    contents = [("summary", "Summary", [(_anchor(section.title), section.title) for section in sections]),
                ("figures", "Figures", [(figure.name, figure.title) for figure, _path in drawn]),
                ("wiring", "Wiring of the nodes", []), ("notes", "Notes", [])]
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>wirewise report: {_e(fabrics or 'no wiring stored')}</title>", f"<style>{_STYLE}</style></head><body>",
        f"<h1>{_e(heading)}</h1>",
        f'<p class="lede">wirewise report, written {when}' + (f"; {_e(asked)}" if asked else "") + ".</p>",
        '<nav><h2 class="first">Contents</h2><ol>',
        *(f'<li><a href="#{_e(anchor)}">{_e(title)}</a>' + _sublist(entries) + "</li>" for anchor, title, entries in contents),
        "</ol></nav>",
        '<h2 id="summary" class="first">Summary</h2><div class="summary">',
    ]
    for section in sections:
        parts.append(f'<h3 id="{_e(_anchor(section.title))}">{_e(section.title)}</h3>')
        parts += [f"<p>{''.join(_part(part) for part in sentence)}</p>" for sentence in section.sentences]
    parts.append("</div>")
    parts.append(f'<h2 id="figures">Figures</h2><p>{_e(READING)}</p>')
    if not drawn:
        parts.append("<p>The matching results hold nothing these figures draw.</p>")
    for figure, path in drawn:
        parts += _figure_section(figure, path)
    parts += _wiring_section(wirings)
    parts += ['<h2 id="notes">Notes</h2>',
              "<p>Figures and numbers are medians over the repeats of one case (every setting that decides the figure: "
              "<code>wirewise results</code> lists them); bandwidth is nccl-tests' bus bandwidth (busbw), which is "
              "comparable to the wire's line rate per direction. Memory is in GB (10<sup>9</sup> bytes), as GPU datasheets "
              "count it.</p>"]
    parts += [f"<p>{entry['results']} results left out: {_e(entry['why'])}; {_e(entry['show'])} shows them.</p>"
              for entry in left_out]
    parts.append("</body></html>")
    return "\n".join(parts)


def _sublist(entries: list[tuple[str, str]]) -> str:
    if not entries:
        return ""
    return "<ol>" + "".join(f'<li><a href="#{_e(anchor)}">{_e(title)}</a></li>' for anchor, title in entries) + "</ol>"


def _anchor(title: str) -> str:
    return "s-" + "-".join(title.lower().split())


def _part(part: Any) -> str:
    """A sentence's text, or a number with where it comes from (tests/report check it against
    `results --json`)."""
    if not isinstance(part, Num):
        return _e(part)
    import json

    data = f' data-value="{part.value!r}"'
    if part.row is not None:
        data += f" data-row='{_e(json.dumps(part.row, sort_keys=True))}' data-metric=\"{_e(part.metric)}\" data-scale=\"{part.scale!r}\""
    if part.of is not None:
        data += f" data-of='{_e(json.dumps([p.to_json() for p in part.of]))}'"
    return f'<span class="num"{data}>{_e(part.text)}</span>'


def _e(value: Any) -> str:
    return html.escape(str(value))


def _figure_section(figure: Figure, path: Path) -> list[str]:
    import json

    data = base64.b64encode(path.read_bytes()).decode()
    spec = [{"kind": p.kind, "xs": len({x for s in p.series for x, y in zip(s.x, s.y) if y is not None or (s.notes and s.notes[s.x.index(x)])}),
             "series": len(p.series), "title": p.title} for p in figure.panels]
    parts = [f'<h3 id="{_e(figure.name)}">{_e(figure.title)}</h3>', "<figure>",
             f'<img alt="{_e(figure.title)}" data-figure="{_e(figure.name)}" data-panels=\'{_e(json.dumps(spec))}\' '
             f'src="data:image/png;base64,{data}">',
             f"<figcaption>{_e(figure.caption)}</figcaption></figure>" if figure.caption else "</figure>",
             '<details><summary>The numbers drawn</summary>']
    for panel in figure.panels:
        parts += _panel_table(panel)
    parts.append("</details>")
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
    return bytes_text(x) if panel.kind == "size" else str(x)


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3g}"


def _wiring_section(wirings: list[dict[str, Any]]) -> list[str]:
    parts = ['<h2 id="wiring">Wiring of the nodes</h2>']
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
