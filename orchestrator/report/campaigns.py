"""Campaigns as people read them: the plan by workload and placement, what was submitted, the
tasks per state. Every string from a spec or the database is escaped before rich sees it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.markup import escape
from rich.table import Table

from wirewise.ranges import format_ranges

STATE_STYLES = {"ok": "green", "running": "cyan", "pending": "white", "oom": "magenta", "failed": "red",
                "timeout": "yellow", "cancelled": "yellow", "missing": "red"}


def plan_table(plan) -> Table:
    """Tasks per (workload, GPUs, placement, transport) with the cases they cover, then what
    was skipped and why (once per reason)."""
    node = plan.topology
    where = f"{node.gpus} x {escape(node.gpu_model or 'GPU')}, {node.fabric}, {node.fingerprint[:12]}" if node else "CPU ranks"
    table = Table(title=f"campaign {escape(plan.campaign)}: {len(plan.tasks)} tasks on {where}", title_justify="left")
    for column in ("workload", "GPUs", "placement", "transport", "cases", "tasks"):
        table.add_column(column, overflow="fold")
    groups: dict[tuple, list] = {}
    for t in plan.tasks:
        gpus = format_ranges(t.spec.gpus) if t.spec.gpus else f"{t.spec.nproc_per_node} CPU ranks"
        groups.setdefault((t.spec.workload, gpus, t.placement, t.transport), []).append(t)
    for (workload, gpus, placement, transport), tasks in groups.items():
        cases = len({_case(t.spec.params) for t in tasks})
        table.add_row(workload, gpus, placement, transport, str(cases), str(len(tasks)))
    reasons = Counter((s.workload, s.placement, s.transport, s.reason) for s in plan.skipped)
    for (workload, placement, transport, reason), count in reasons.items():
        table.add_row(workload, "", placement, transport, str(count), f"[yellow]skipped: {escape(reason)}[/]")
    return table


def _case(params: dict[str, Any]) -> str:
    if "model" in params:
        return f"{params['model']} {params['strategy']}"
    return ",".join(params.get("ops", []))


def submitted_lines(report: dict[str, Any]) -> list[str]:
    name = report["campaign"]
    lines = []
    if report.get("dry_run"):
        lines.append(f"dry run: campaign {name} would submit {report['tasks']} task(s) in {report['bundles']} bundle(s) "
                     f"({report['executor']}); {report['skipped']} combination(s) skipped")
    elif "arrays" in report:  # queued elsewhere (Slurm); else it ran here
        lines.append(f"campaign {name}: {report['tasks']} task(s) in {report['bundles']} array element(s), "
                     f"arrays {', '.join(report['arrays'])}; folder {report['folder']}")
        lines.append(f"follow it: wirewise campaign status {name} --watch")
    else:
        counts = ", ".join(f"{k} {v}" for k, v in report.get("counts", {}).items())
        lines.append(f"campaign {name}: ran {report['ran']} task(s) here ({counts}); "
                     f"{report['stored_records']} record(s) stored; folder {report['folder']}")
    if report.get("dry_run") and report.get("max_array_size"):
        sizes = report["array_elements"]
        lines.append(f"  {len(sizes)} array(s) of {', '.join(map(str, sizes))} element(s) (MaxArraySize splits them)")
    if report.get("dry_run") and report.get("parameters"):
        lines.append("  submitit parameters: " + ", ".join(f"{k}={v}" for k, v in report["parameters"].items()))
    return lines


def status_table(state):
    """A line saying where the campaign stands, then its tasks per state."""
    from rich.console import Group
    from rich.text import Text

    info = state.campaign
    total = len(state.tasks)
    header = Text(f"campaign {info.name} ({info.executor}): {total} task(s), {'done' if state.done else 'in progress'}")
    table = Table()
    table.add_column("state")
    table.add_column("tasks", justify="right")
    table.add_column("share", justify="right")
    for status, count in state.counts.items():
        table.add_row(f"[{STATE_STYLES.get(status, 'white')}]{escape(status)}[/]", str(count), f"{count / total:.0%}")
    return Group(header, table)


def campaigns_table(rows: list[dict[str, Any]]) -> Table:
    table = Table()
    for column in ("campaign", "executor", "tasks", "states", "created"):
        table.add_column(column)
    for row in rows:
        states = escape(" ".join(f"{k} {v}" for k, v in sorted(row["counts"].items())))
        table.add_row(escape(row["name"]), escape(row["executor"] or "-"), str(row["tasks"]), states,
                      f"{row['created_at']:%Y-%m-%d %H:%M}")
    return table
