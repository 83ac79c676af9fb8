"""`fleet status --format prometheus`: the fleet as node_exporter textfile-collector metrics
(the text exposition format 0.0.4, https://prometheus.io/docs/instrumenting/exposition_formats/),
written whole or not at all (wirewise.atomic), so a scrape never reads half a file.

Per node: its verdict (one series per verdict, 1 for the node's), its open findings by rule, its
Slurm drain (only where Slurm was asked: a missing series, not a 0, where it was not), the time of
its latest check, and each collective case's latest busbw (labelled with the case's fields, wirewise.case) beside the imported baseline of that
case where one is stored. Label values are escaped as the format says (backslash, quote, newline).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

VERDICTS = ("healthy", "flagged", "confirmed", "unknown")
PREFIX = "wirewise_"


def label_value(value: Any) -> str:
    text = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _series(name: str, labels: dict[str, Any], value: float) -> str:
    inner = ",".join(f'{key}="{label_value(v)}"' for key, v in labels.items())
    return f"{PREFIX}{name}{{{inner}}} {value!r}"


def _family(name: str, kind: str, help_text: str, lines: list[str]) -> list[str]:
    return [f"# HELP {PREFIX}{name} {help_text}", f"# TYPE {PREFIX}{name} {kind}", *lines]


def exposition(rows: list[dict[str, Any]], busbw: list[dict[str, Any]]) -> str:
    """The metrics of `rows` (fleet_status) and `busbw` (latest_busbw) as exposition text."""
    verdict, findings, drained, checked = [], [], [], []
    for row in rows:
        node = row["node"]
        verdict += [_series("node_verdict", {"node": node, "verdict": v}, float(row["verdict"] == v)) for v in VERDICTS]
        for rule, count in sorted(Counter(f["rule"] for f in row["findings"]).items()):
            findings.append(_series("node_open_findings", {"node": node, "rule": rule}, float(count)))
        if row["state"] is not None:
            drained.append(_series("node_drained", {"node": node, "state": row["state"]}, float(row["drained"])))
        if row["checked_at"] is not None:
            checked.append(_series("node_last_check_timestamp_seconds", {"node": node}, _epoch(row["checked_at"])))
    latest = [_series("node_busbw_gbs", _case_labels(b), b["busbw_gbs"]) for b in busbw]
    baseline = [_series("node_busbw_baseline_gbs", _case_labels(b), b["baseline_gbs"]) for b in busbw if b["baseline_gbs"] is not None]
    lines = [
        *_family("node_verdict", "gauge", "1 for the node's verdict (healthy, flagged, confirmed, unknown: never judged), 0 for the others.", verdict),
        *_family("node_open_findings", "gauge", "Open findings of the node by rule (wirewise fleet status shows the evidence).", findings),
        *_family("node_drained", "gauge", "1 when Slurm has a drain set on the node (drained or draining); absent where Slurm could not be asked.", drained),
        *_family("node_last_check_timestamp_seconds", "gauge", "Unix time of the node's latest check (doctor, health check, prolog).", checked),
        *_family("node_busbw_gbs", "gauge", "Bus bandwidth in GB/s of the node's latest ok result of each collective case.", latest),
        *_family("node_busbw_baseline_gbs", "gauge", "The imported baseline's median busbw in GB/s of the same case and wiring, where one is stored.", baseline),
    ]
    return "\n".join(lines) + "\n"


def _case_labels(found: dict[str, Any]) -> dict[str, Any]:
    return {"node": found["node"], **found["case"]}


def _epoch(when) -> float:
    from wirewise.clock import as_utc

    return as_utc(when).timestamp()


def latest_busbw(store, nodes: list[str]) -> list[dict[str, Any]]:
    """Each node's latest ok result of each GPU collective case, with the imported baseline of
    the case on the node's wiring (None where none is stored)."""
    from wirewise.orchestrator.health.baseline import case_of, group_by_case, imported
    from wirewise.orchestrator.results.rows import result_rows
    from wirewise.orchestrator.store.results import Filters

    found = []
    for node in nodes:
        cases = group_by_case(result_rows(store, Filters(node=node, workload="collective", status="ok")))
        baselines = imported(store, {key[0] for key in cases})
        for key, members in sorted(cases.items(), key=lambda item: str(item[0])):
            last = max(members, key=lambda f: (str(f["started_at"]), f["id"]))
            stored = baselines.get(key)
            found.append({"node": node, "case": case_of(last), "busbw_gbs": last["busbw_gbs"],
                          "baseline_gbs": stored.median if stored else None, "at": last["started_at"]})
    return found


__all__ = ["exposition", "label_value", "latest_busbw"]
