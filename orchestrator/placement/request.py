"""A placement request as the commands state it: which node's wiring (a file, a stored node,
or this machine), which GPUs are free, which policy, and optionally a model to advise on."""

from __future__ import annotations

from pathlib import Path

from wirewise.errors import UserError
from wirewise.orchestrator.placement import POLICIES
from wirewise.orchestrator.placement.free import free_gpus, parse_free_list
from wirewise.orchestrator.placement.place import place
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.topology import load_topology
from wirewise.topology import Topology, node_name, read_topology


def node_topology(topology_file: Path | None, node: str | None, store) -> tuple[Topology, bool]:
    """(the wiring, whether it is this machine's, probed live)."""
    if topology_file is not None:
        return read_topology(topology_file), False
    if node:
        if store is None:
            raise UserError(f"unknown node {node!r}: no database with stored topologies (run `wirewise topo save` there)")
        return load_topology(store, node=node), False
    try:
        return read_topology(None), True
    except UserError as exc:
        raise UserError(f"{str(exc).split(';')[0]}; give --topology-file or --node") from None


def parse_policy(policy: str, gpus: int) -> str | list[int]:
    if policy in POLICIES:
        return policy
    if policy and policy[0].isdigit():
        return parse_free_list(policy, gpus)
    raise UserError(f"--policy {policy!r}: use one of {', '.join(POLICIES)} or GPU indices such as 0,1")


def placement_for(
    k: int | None,
    topology_file: Path | None = None,
    node: str | None = None,
    free: str | None = None,
    policy: str = "packed",
    model: str | None = None,
    batch_size: int = 1,
    seq_len: int | None = None,
    accounting: str = "article",
    gpu_mem_gb: float | None = None,
    db: str | None = None,
) -> dict:
    """The `wirewise place --json` object."""
    store = Store.open_existing(db)
    topo, live = node_topology(topology_file, node, store)
    given = parse_free_list(free, topo.gpus) if free is not None else None
    free_list, free_source = free_gpus(topo.gpus, given, node, live)
    label = node or (topology_file.name if topology_file else node_name(topo))
    result = {"node": label, **place(topo, k, parse_policy(policy, topo.gpus), free_list, store, free_source)}
    if model:
        add_advice(result, topo, model, store, batch_size, seq_len, accounting, gpu_mem_gb)
    return result


def placement_across_nodes(k: int | None, db: str | None) -> dict:
    """`wirewise place --across-nodes --json`: nodes of one wiring from the store, each with the
    GPUs Slurm has free, under the fewest leaf switches Slurm's network topology names."""
    from wirewise.orchestrator.placement.nodes import NodeState, choose_nodes, slurm_leaf_switches
    from wirewise.orchestrator.store.topology import list_topologies

    store = Store.open_existing(db)
    names = sorted({row["node"] for row in list_topologies(store)}) if store is not None else []
    if not names:
        raise UserError("no stored nodes to place across (run `wirewise topo save` on each node)")
    nodes = []
    for name in names:
        topo = load_topology(store, node=name)
        nodes.append(NodeState(name, topo, free_gpus(topo.gpus, None, name, False)[0]))
    return choose_nodes(nodes, k or 0, slurm_leaf_switches()).as_dict()


def add_advice(result: dict, topo: Topology, model: str, store, *options) -> None:
    """The advised strategy for the placement, its per-strategy table and its reasons."""
    from wirewise.orchestrator.advise import advise_placement

    advice = advise_placement(topo, result["gpus"], result["predicted_busbw_gbs"], model, store, *options)
    result["strategy"] = advice["strategy"]
    result["advice"] = advice
    result["reasons"] += [f"strategy: {reason}" for reason in advice["reasons"]]


def run_for(request, topology_file: Path | None, node: str | None, db: str | None, gpu_mem_gb: float | None = None) -> dict:
    """The `wirewise run --json` object: place on the node's wiring (a whole-node job may use
    any GPU; a shared one compares against the GPUs free now), advise, submit, record."""
    from wirewise.orchestrator.placement.submit import run_command

    if not request.command:
        raise UserError("give the command to run after `--`, e.g. wirewise run --gpus 2 -- python train.py")
    topo, live = node_topology(topology_file, node, Store.open_existing(db))
    store = Store(db)  # the job is recorded: create the database once the request is sound
    free_list, free_source = (
        (list(range(topo.gpus)), "the whole node") if request.whole_node else free_gpus(topo.gpus, None, node, live)
    )
    placement = place(topo, request.gpus, "packed", free_list, store, free_source)
    if request.model:
        add_advice(placement, topo, request.model, store, 1, None, "article", gpu_mem_gb)
    result = run_command(request, topo, node, placement, placement.get("strategy"), store)
    result["reasons"] = placement["reasons"]
    return result
