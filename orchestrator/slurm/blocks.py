"""Slurm's block topology from the NVLink domains of the stored nodes (`wirewise topo slurm
--blocks`): topology.conf lines for `TopologyPlugin=topology/block` (Slurm 23.11+), or a
topology.yaml (25.05+), and the reader of the blocks a cluster runs with.

    plan_blocks(domains) -> BlockPlan          {node: (cluster UUID, clique id) | None} -> blocks
    topology_conf(plan) / topology_yaml(plan)  the two files
    blocks_from(text) -> {block: [nodes]}      `scontrol show topology` (BlockName=... Nodes=...)

The rules, from Slurm 25.11's topology/block (src/plugins/topology/block, topology.conf(5)) and
what the test cluster (25.11.7, tests/slurm/test_blocks.py) did with them:
- one block per multi-node NVLink domain, its nodes in it. A job of N nodes needs ceil(N / base)
  base blocks: a 2-node job fits one 2-node block and is refused across two ("Requested node
  configuration is not available" for -w wwn2,wwn3 in two blocks), and `--segment=N` keeps each
  segment of N nodes inside one block (SLURM_JOB_SEGMENT_SIZE=N in the job).
- Slurm schedules no job on a node outside every block ("requires nodes which are not in
  blocks"), so a node outside any multi-node domain is a block of its own: never one block
  together with other such nodes, which would promise an NVLink they lack. A 1-node job runs in
  such a block even when it is smaller than the base size (seen).
- BlockSizes: the planning base is the node count of the smallest domain seen on two nodes or
  more (every block should have at least as many, topology.conf(5); a domain with one stored
  node, its other trays not yet surveyed, would make the base 1, and a 2-node job two blocks);
  each higher size doubles it ("a power of two larger"), up
  to the first that covers every block, so that jobs larger than one domain still run across
  adjacent blocks (Slurm aggregates 2, 4, ... blocks in the order they are listed: domains come
  first, largest first, then the single nodes).
- With topology.yaml, `scontrol show config` still says TopologyPlugin=topology/flat (seen):
  whether a cluster uses blocks is read from `scontrol show topology`, never the config.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from wirewise.errors import UserError
from wirewise.jobenv import hostlist, hostnames

Domain = tuple[str, int]  # (fabric cluster UUID, clique id): wirewise.topology.fabric.domain_of
YAML_TOPOLOGY = "nvlink"  # the name of the topology in topology.yaml


@dataclass(frozen=True)
class Block:
    name: str
    nodes: tuple[str, ...]
    domain: Domain | None  # None: a node in no multi-node domain, alone in its block


@dataclass(frozen=True)
class BlockPlan:
    blocks: tuple[Block, ...]
    sizes: tuple[int, ...]  # BlockSizes: the base (smallest domain), then doubling

    def contract(self) -> dict:
        """The plan as `topo slurm --blocks --json` prints it."""
        return {"block_sizes": list(self.sizes),
                "blocks": [{"name": b.name, "nodes": list(b.nodes), "cluster_uuid": b.domain[0] if b.domain else None,
                            "clique_id": b.domain[1] if b.domain else None} for b in self.blocks]}


def plan_blocks(domains: Mapping[str, Domain | None]) -> BlockPlan:
    """The blocks of these nodes (every stored node, with the domain it reported). A domain seen on
    one stored node alone is still a domain (its other trays may not be surveyed yet)."""
    if not domains:
        raise UserError("no node is stored: save each node's wiring first (`wirewise topo survey` or `topo save` on each)")
    members: dict[Domain, list[str]] = {}
    for node, domain in domains.items():
        if domain is not None:
            members.setdefault(domain, []).append(node)
    if not members:
        raise UserError(f"none of the {len(domains)} stored node(s) reported a multi-node NVLink domain "
                        "(fabric cluster UUID and clique): a block topology would only split them; keep Slurm's "
                        "tree or flat topology")
    ordered = sorted(members.items(), key=lambda item: (-len(item[1]), item[0]))
    short = {domain: domain[0].split("-")[0] for domain in members}
    if len(set(short.values())) < len(short):  # two UUIDs alike in their first 8 digits: the whole UUID
        short = {domain: domain[0] for domain in members}
    blocks = [Block(f"nvl-{short[d]}-{d[1]}", tuple(sorted(nodes)), d) for d, nodes in ordered]
    blocks += [Block(node, (node,), None) for node in sorted(n for n, d in domains.items() if d is None)]
    names = [b.name for b in blocks]
    if len(set(names)) < len(names):
        raise UserError(f"a node is named like a domain's block ({', '.join(sorted({n for n in names if names.count(n) > 1}))}): "
                        "rename it in Slurm or write the blocks by hand")
    base = min((len(nodes) for nodes in members.values() if len(nodes) > 1), default=1)
    sizes, levels = [base], 1
    while levels < len(blocks):
        levels *= 2
        sizes.append(base * levels)
    return BlockPlan(tuple(blocks), tuple(sizes))


def _describe(block: Block) -> str:
    if block.domain is None:
        return f"{block.name}: in no multi-node NVLink domain, a block of its own"
    return f"{block.name}: NVLink domain {block.domain[0]} clique {block.domain[1]}, {len(block.nodes)} node(s)"


def topology_conf(plan: BlockPlan) -> str:
    """topology.conf lines for TopologyPlugin=topology/block, each block with a comment."""
    lines = ["# Written by `wirewise topo slurm --blocks` from the stored nodes' NVLink domains.",
             "# slurm.conf: TopologyPlugin=topology/block; jobs ask --segment=N to keep N nodes in one block."]
    for block in plan.blocks:
        lines += [f"# {_describe(block)}", f"BlockName={block.name} Nodes={hostlist(list(block.nodes))}"]
    lines.append(f"BlockSizes={','.join(map(str, plan.sizes))}")
    return "\n".join(lines) + "\n"


def topology_yaml(plan: BlockPlan) -> str:
    """topology.yaml (Slurm 25.05+): one block topology, the cluster's default."""
    import yaml

    document = [{"topology": YAML_TOPOLOGY, "cluster_default": True,
                 "block": {"block_sizes": list(plan.sizes),
                           "blocks": [{"block": b.name, "nodes": hostlist(list(b.nodes))} for b in plan.blocks]}}]
    header = ["# Written by `wirewise topo slurm --blocks --format yaml` from the stored nodes' NVLink domains.",
              "# Slurm 25.05+ reads topology.yaml beside slurm.conf before topology.conf."]
    header += [f"# {_describe(block)}" for block in plan.blocks]
    return "\n".join(header) + "\n---\n" + yaml.safe_dump(document, sort_keys=False)


_BLOCK = re.compile(r"^BlockName=(\S+)\s.*?\bNodes=(\S+)", re.MULTILINE)


def blocks_from(text: str) -> dict[str, list[str]]:
    """`scontrol show topology` -> {block: its nodes} for the base blocks (BlockName= lines;
    AggregatedBlock= lines are Slurm's own groupings of them); {} without topology/block."""
    return {name: hostnames(nodes) for name, nodes in _BLOCK.findall(text)}
