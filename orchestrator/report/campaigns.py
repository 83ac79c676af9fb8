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


def plan_table(plan):
    """Tasks per (workload, GPUs, placement, transport) with the cases they cover, then what
    was skipped and why (once per reason). A fleet plan: its node types first, with how many
    nodes each has, then each type's tasks, then the nodes left out and why."""
    if hasattr(plan, "groups"):
        return fleet_plan_table(plan)
    return _tasks_table(plan, plan.topology, plan.tasks, plan.skipped)


def fleet_plan_table(plan):
    from rich.console import Group
    from rich.text import Text

    types = Table(title=f"campaign {escape(plan.campaign)}: {len(plan.tasks)} tasks on "
                        f"{sum(len(g.nodes) for g in plan.groups)} node(s) of {len(plan.groups)} type(s)", title_justify="left")
    for column in ("fingerprint", "fabric", "GPUs", "model", "nodes", "names", "tasks per node"):
        types.add_column(column, overflow="fold")
    shown = [types]
    for group in plan.groups:
        row = group.to_json()
        names = ", ".join(group.nodes[:6]) + (f" ... ({len(group.nodes) - 6} more)" if len(group.nodes) > 6 else "")
        types.add_row((row["fingerprint"] or "-")[:12], row["fabric"], str(row["gpus"]), escape(row["gpu_model"] or "-"),
                      str(row["count"]), escape(names), str(row["tasks_per_node"]))
    for group in plan.groups:
        first = group.nodes[0]
        tasks = [t for t in plan.tasks if t.spec.hosts == [first]]
        shown.append(_tasks_table(plan, group.topology, tasks, group.skipped, f"each of the {len(group.nodes)} node(s) like {first}"))
    for node, reason in plan.left_out.items():
        shown.append(Text(f"left out: {node}: {reason}", style="yellow"))
    return Group(*shown)


def _tasks_table(plan, node, tasks, skipped, who: str | None = None) -> Table:
    where = f"{node.gpus} x {escape(node.gpu_model or 'GPU')}, {node.fabric}, {node.fingerprint[:12]}" if node else "CPU ranks"
    title = f"{escape(who)}: {len(tasks)} tasks on {where}" if who else f"campaign {escape(plan.campaign)}: {len(tasks)} tasks on {where}"
    table = Table(title=title, title_justify="left")
    for column in ("workload", "GPUs", "placement", "transport", "cases", "tasks"):
        table.add_column(column, overflow="fold")
    groups: dict[tuple, list] = {}
    for t in tasks:
        gpus = format_ranges(t.spec.gpus) if t.spec.gpus else f"{t.spec.nproc_per_node} CPU ranks"
        groups.setdefault((t.spec.workload, gpus, t.placement, t.transport), []).append(t)
    for (workload, gpus, placement, transport), tasks in groups.items():
        cases = len({_case(t.spec.params) for t in tasks})
        table.add_row(workload, gpus, placement, transport, str(cases), str(len(tasks)))
    reasons = Counter((s.workload, s.placement, s.transport, s.reason) for s in skipped)
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
        arrays = report["arrays"]
        listed = ", ".join(arrays) if len(arrays) <= 8 else f"{', '.join(arrays[:3])} ... {arrays[-1]} ({len(arrays)})"
        lines.append(f"campaign {name}: {report['tasks']} task(s) in {report['bundles']} array element(s), "
                     f"arrays {listed}; folder {report['folder']}")
        lines.append(f"follow it: wirewise campaign status {name} --watch")
    else:
        counts = ", ".join(f"{k} {v}" for k, v in report.get("counts", {}).items())
        lines.append(f"campaign {name}: ran {report['ran']} task(s) here ({counts}); "
                     f"{report['stored_records']} record(s) stored; folder {report['folder']}")
    if report.get("dry_run") and report.get("max_array_size"):
        sizes = report["array_elements"]
        shown = ", ".join(map(str, sizes)) if len(sizes) <= 12 else f"{', '.join(map(str, sizes[:6]))}, ..."
        why = "one or more per node set" if report.get("pinned") else "MaxArraySize splits them"
        lines.append(f"  {len(sizes)} array(s) of {shown} element(s) ({why})")
    if report.get("dry_run") and report.get("parameters"):
        lines.append("  submitit parameters: " + ", ".join(f"{k}={v}" for k, v in report["parameters"].items()))
    if report.get("pinned"):
        lines.append(f"  pinned: each of {report['pinned']} node set(s) gets arrays of its own (--nodelist)")
    for left in report.get("left_out", []):
        lines.append(f"  left out: {left['node']}: {left['reason']}")
    if report.get("excluded"):
        lines.append(f"  kept off nodes Slurm reports down or drained: {report['excluded']}")
    return lines


def status_table(state, by_node: bool = False):
    """A line saying where the campaign stands, then its tasks per state; `by_node`: then each
    node's tasks per state (a fleet campaign's progress node by node)."""
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
    if not by_node:
        return Group(header, table)
    nodes = state.by_node
    if not nodes:
        return Group(header, table, Text("no task of this campaign is pinned to a node (not a fleet campaign)"))
    per_node = Table(title="per node", title_justify="left")
    per_node.add_column("node")
    states = [s for s in STATE_STYLES if any(s in counts for counts in nodes.values())]
    for status in states:
        per_node.add_column(f"[{STATE_STYLES[status]}]{status}[/]", justify="right")
    for node, counts in nodes.items():
        per_node.add_row(escape(node), *(str(counts.get(status, "")) for status in states))
    return Group(header, table, per_node)


def campaigns_table(rows: list[dict[str, Any]]) -> Table:
    table = Table()
    for column in ("campaign", "executor", "tasks", "states", "created"):
        table.add_column(column)
    for row in rows:
        states = escape(" ".join(f"{k} {v}" for k, v in sorted(row["counts"].items())))
        table.add_row(escape(row["name"]), escape(row["executor"] or "-"), str(row["tasks"]), states,
                      f"{row['created_at']:%Y-%m-%d %H:%M}")
    return table
