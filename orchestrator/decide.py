"""Stage "decide": the answers `wirewise place` gives, and `wirewise run` builds on. Each flow
puts together what the stages below it know: which node's wiring (a saved file, a stored node,
or this machine live), which of its GPUs are free (--free, else Slurm for a named node, else
NVML here, else all), the placement (wirewise.orchestrator.placement) and, given a model, the
advised strategy (wirewise.orchestrator.advise). Placement and advice import nothing from
here; this module is where they meet.
"""

from __future__ import annotations

from pathlib import Path

from wirewise.errors import UserError
from wirewise.orchestrator.store import Store
from wirewise.ranges import GPU_INDICES, parse_ranges
from wirewise.topology import Topology, hardware, node_name, read_topology


def placement_wiring(topology_file: Path | None, node: str | None, store,
                     gpu_name: str | None = None) -> tuple[Topology, bool, str | None, str]:
    """The wiring to place on, its GPUs named where anything names them
    (wirewise.orchestrator.placement.naming): (the topology, whether it is this machine's, probed
    live, where the GPU model comes from or None, the reason that says the model and its rates or
    why it is unknown)."""
    from wirewise.orchestrator.placement.naming import unknown_model_text, with_gpu_model
    from wirewise.orchestrator.store.topology import load_topology

    if topology_file is not None:
        topo, live, where = read_topology(topology_file), False, str(topology_file)
    elif node:
        if store is None:
            raise UserError(f"unknown node {node!r}: no database with stored topologies (run `wirewise topo save` there)")
        topo, live, where = load_topology(store, node=node), False, f"stored node {node}"
    else:
        try:
            topo, live, where = read_topology(None), True, "this machine (NVML)"
        except UserError as exc:
            raise UserError(f"{exc}; give --topology-file or --node") from None
    named, source = with_gpu_model(topo, gpu_name, store, where)
    if source is None:
        return named, live, None, unknown_model_text(named, store, where)
    return named, live, source, f"GPU model {named.gpu_model} (from {source}): {hardware.rates_text(named.gpu_model)}"


def free_gpus(gpus: int, given: list[int] | None, node: str | None, live: bool,
              slurm_used: dict[str, set[int] | None] | None = None) -> tuple[list[int], str]:
    """(free GPU indices, where that comes from): --free, else Slurm for a named node (from
    `slurm_used` where the caller asked Slurm for many at once), else NVML on this machine,
    else all of them."""
    from wirewise.nvml import busy_gpus
    from wirewise.orchestrator.slurm.nodes import gpus_in_use

    if given is not None:
        return given, "--free"
    if node:
        used = gpus_in_use(node) if slurm_used is None else slurm_used.get(node)
        if used is not None:
            return [g for g in range(gpus) if g not in used], "slurm (scontrol show node -d)"
    if live:
        used = busy_gpus()
        if used is not None:
            return [g for g in range(gpus) if g not in used], "nvml (running processes)"
    return list(range(gpus)), "all (no --free, Slurm or NVML view)"


def parse_policy(policy: str) -> str | list[int]:
    from wirewise.orchestrator.placement import POLICIES

    if policy in POLICIES:
        return policy
    if policy and policy[0].isdigit():
        return parse_ranges(policy, GPU_INDICES, option="--policy", distinct=True)
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
    gpu_name: str | None = None,
) -> dict:
    """The `wirewise place --json` object."""
    store = Store.open_existing(db)
    given = sorted(parse_ranges(free, GPU_INDICES, option="--free")) if free is not None else None
    topo, live, model_source, model_said = placement_wiring(topology_file, node, store, gpu_name)
    free_list, free_source = free_gpus(topo.gpus, given, node, live)
    label = node or (topology_file.name if topology_file else node_name(topo))
    kept_off = nodes_measured(store, [node]).avoid.get(node) if node else None
    warnings = [f"warning: --node {node} is one placement avoids: {kept_off}"] if kept_off else []
    result = {"node": label, **place_on(topo, k, parse_policy(policy), free_list, free_source, store,
                                        node or (label if live else None), notes=warnings, model=model,
                                        batch_size=batch_size, seq_len=seq_len, accounting=accounting,
                                        gpu_mem_gb=gpu_mem_gb)}
    result.update(gpu_model=topo.gpu_model, gpu_model_source=model_source)
    result["reasons"].insert(1, model_said)
    return result


def place_on(topo: Topology, k: int | None, policy, free: list[int], free_source: str, store, node: str | None, *,
             notes: list[str] = (), model: str | None = None, batch_size: int = 1, seq_len: int | None = None,
             accounting: str = "article", gpu_mem_gb: float | None = None, history=None) -> dict:
    """What `place` and `run` both answer: the placement of `k` of the `free` GPUs by `policy`,
    less those an open finding names on `node`, its reasons (then `notes`), and given a model
    the advised strategy for that batch size, sequence length, accounting and GPU memory
    (add_advice). `history`: the command's History of the wiring, where it has one (else one
    is built here)."""
    from wirewise.orchestrator.placement.history import History
    from wirewise.orchestrator.placement.place import place

    free, left_out = without_flagged_gpus(store, node, free)
    if history is None and store is not None:
        history = History(store, topo)  # read once, for placement and advice
    result = place(topo, k, policy, free, history, free_source)
    result["reasons"] += [*left_out, *notes]
    if model:
        add_advice(result, topo, model, store, batch_size, seq_len, accounting, gpu_mem_gb, history=history)
    return result


def placement_across_nodes(k: int | None, db: str | None, per_node: int | None = None) -> dict:
    """`wirewise place --across-nodes --json`: nodes of one wiring from the store, each with the
    GPUs Slurm has free; inside one NVLink domain when one has room (the domain each node's
    GPUs reported); the nodes pair tests found healthy first, none they flagged (nor a link
    they judged slow), else under the fewest leaf switches Slurm's network topology names.
    `per_node`: exactly that many GPUs on each node (`wirewise run --nodes`)."""
    from wirewise.orchestrator.placement.nodes import Candidate, choose_nodes
    from wirewise.orchestrator.slurm.nodes import gpus_in_use_on, leaf_switches
    from wirewise.orchestrator.store.topology import topologies_of
    from wirewise.orchestrator.store.topology import node_wirings

    store = Store.open_existing(db)
    current = {}
    for wiring in node_wirings(store) if store is not None else []:  # the most recently seen first: each node's current
        current.setdefault(wiring.node, wiring)
    names = sorted(current)
    if not names:
        raise UserError("no stored nodes to place across (run `wirewise topo save` on each node)")
    topos = topologies_of(current.values())  # one read of the fleet's wirings, one Topology per numbering
    used = gpus_in_use_on(names)
    nodes = [Candidate(name, topos[name], free_gpus(topos[name].gpus, None, name, False, used)[0], current[name].domain)
             for name in names]
    result = choose_nodes(nodes, k or 0, leaf_switches(), nodes_measured(store, names), per_node).as_dict()
    chosen = next(node.topo for node in nodes if node.name == result["nodes"][0]["node"])
    if not chosen.named:  # ranked at nominal rates; no figure is given for them
        result["predicted_busbw_gbs"] = None
        result["reasons"].append("GPU model unknown on these stored nodes: no busbw predicted "
                                 "(store them with their names: `wirewise topo save` on the node)")
    return result


def nodes_measured(store, names=None, slurm_nodes=None):
    """What placement across nodes weighs besides the wiring: the standing pair tests gave
    each node and pair (wirewise.orchestrator.fleet.standing). Another reason to keep jobs off
    a node (drained or down in Slurm, an open finding of the health rules:
    wirewise.orchestrator.health.verdicts) joins `avoid` here; `slurm_nodes`: Slurm's view
    where the caller asked already (else one `sinfo -N` here). The pair tests are judged by the
    site's rules (the setting rules: load_rules, as doctor and fleet read them)."""
    from wirewise.orchestrator.fleet.standing import pair_standing
    from wirewise.orchestrator.health.rules import load_rules
    from wirewise.orchestrator.health.verdicts import keep_off

    measured = pair_standing(store, names, load_rules(None).rules.pair_below_fleet.tolerance)
    for node, why in keep_off(store, names, slurm_nodes).items():
        measured.avoid.setdefault(node, why)
        measured.healthy.discard(node)
    return measured


def without_flagged_gpus(store, node: str | None, free: list[int]) -> tuple[list[int], list[str]]:
    """The free GPUs less those an open finding names on the node, and a reason for each."""
    from wirewise.orchestrator.health.verdicts import flagged_gpus, leave_out_gpus

    return leave_out_gpus(free, flagged_gpus(store, node))


def add_advice(result: dict, topo: Topology, model: str, store, *options, history=None) -> None:
    """The advised strategy for the placement, its per-strategy table and its reasons
    (`history`: the wiring's measured history the placement read)."""
    from wirewise.orchestrator.advise import advise_placement

    advice = advise_placement(topo, result["gpus"], result["predicted_busbw_gbs"], model, store, *options,
                              history=history)
    result["strategy"] = advice["strategy"]
    result["advice"] = advice
    result["reasons"] += [f"strategy: {reason}" for reason in advice["reasons"]]
