"""What the verdicts keep jobs off, for placement (`wirewise place`, `wirewise run`; joined to
the pair tests' standing in decide.nodes_measured):

    keep_off(store, names)      node -> why: drained or down in Slurm (with the reason set), or an
                                open finding about the node as a whole (a pair test's, a failed task)
    flagged_gpus(store, node)   GPU index -> why: the GPUs an open finding names (an inactive
                                NVLink, a degraded PCIe link, the GPU set a collective fell on)

An open finding counts whether or not a repeat has confirmed it yet: until `fleet drain`
confirms or clears it, placing a job there is betting against the evidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wirewise.orchestrator.slurm.nodes import SlurmNode


def keep_off(store, names: Iterable[str] | None = None, slurm_nodes: dict[str, SlurmNode] | None = None) -> dict[str, str]:
    """`slurm_nodes`: the nodes as Slurm showed them to the caller already (else asked here)."""
    from wirewise.orchestrator.slurm.nodes import states_if_slurm
    from wirewise.orchestrator.store.health import findings

    wanted = None if names is None else list(names)
    why: dict[str, str] = {}
    shown = states_if_slurm(wanted) if slurm_nodes is None else slurm_nodes
    for name, state in shown.items():  # no Slurm here: the findings still count
        if not state.available:
            why[name] = f"{state.unavailable} in Slurm ({state.reason or 'no reason'})"
    if store is not None:
        for row in findings(store, wanted):
            if row["gpus"] is None:
                why.setdefault(row["node"], f"open finding {row['rule']} ({row['metric']} {row['delta']}): {row['evidence']}")
    return why


def flagged_gpus(store, node: str | None) -> dict[int, str]:
    from wirewise.orchestrator.store.health import findings

    if store is None or not node:
        return {}
    flagged: dict[int, str] = {}
    for row in findings(store, [node]):
        for gpu in row["gpus"] or []:
            flagged.setdefault(gpu, f"open finding {row['rule']} ({row['metric']} {row['delta']})")
    return flagged


def leave_out_gpus(free: list[int], flagged: dict[int, str]) -> tuple[list[int], list[str]]:
    """(the free GPUs without the flagged ones, a reason per GPU left out)."""
    out = [g for g in free if g in flagged]
    return [g for g in free if g not in flagged], [f"GPU {g} left out: {flagged[g]} (`wirewise fleet status`)" for g in out]
