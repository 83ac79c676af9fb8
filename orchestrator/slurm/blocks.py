"""Slurm's block topology from the NVLink domains of the stored nodes (`wirewise topo slurm
--blocks`): topology.conf lines for `TopologyPlugin=topology/block` (Slurm 23.11+), or a
topology.yaml (25.05+), and the reader of the blocks a cluster runs with.

    plan_blocks(domains) -> BlockPlan          {node: (cluster UUID, clique id) | None} -> blocks
    topology_conf(plan) / topology_yaml(plan)  the two files
    blocks_from(text) -> {block: [nodes]}      `scontrol show topology` (BlockName=... Nodes=...)
    cluster_blocks()                           the same, asked of this cluster ({} without blocks or Slurm)
    segment_for(nodes, blocks)                 the --segment a job of N nodes asks: N where a block holds N
    segment_across(nodes, blocks)              1 for a job whose named nodes lie in several blocks
    allocation_problems(job_ids)               what Slurm gave the jobs that asked --segment, checked
    job_nodes(job_id)                          the nodes a job holds (None until it holds them)

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


def cluster_blocks() -> dict[str, list[str]]:
    """This cluster's blocks; {} where it runs no block topology, or there is no Slurm to ask."""
    from wirewise.orchestrator.slurm.command import SlurmError, available, slurm

    if not available("scontrol"):
        return {}
    try:
        return blocks_from(slurm("scontrol", "show", "topology", or_none=True) or "")
    except SlurmError:
        return {}


def segment_for(nodes: int, blocks: Mapping[str, list[str]]) -> int | None:
    """--segment=N for a job of N nodes where a block holds N nodes (Slurm keeps the segment in
    one block); None where no block does: the job spans blocks, as Slurm would place it anyway."""
    if nodes > 1 and any(len(members) >= nodes for members in blocks.values()):
        return nodes
    return None


def segment_across(nodes: list[str], blocks: Mapping[str, list[str]]) -> int | None:
    """--segment=1 for a job whose named nodes lie in more than one block; None otherwise. The
    block plugin refuses a job of N nodes that no one block holds ("Requested node configuration
    is not available" for -w wwn2,wwn3 in two blocks, seen on 25.11) unless its segments may sit
    in different blocks: a pair test across NVLink domains is two segments of one node."""
    homes = {name for node in nodes for name, members in blocks.items() if node in members}
    return 1 if len(homes) > 1 else None


def allocation_problems(job_ids: list[str]) -> dict[str, str]:
    """{job or array element: what is wrong} with the nodes Slurm gave those of these jobs that
    asked --segment (a segment silently ignored has been reported against Slurm, after a
    `scontrol reconfigure`): a segment's nodes in more than one block, or no block topology at
    all. One `scontrol -o show job` for all of them and one `scontrol show topology`; jobs
    without a segment or without nodes yet say nothing."""
    from wirewise.orchestrator.slurm.command import slurm

    wanted = set(job_ids)
    if not wanted:
        return {}
    found: dict[str, tuple[list[str], int]] = {}
    for line in (slurm("scontrol", "-o", "show", "job", or_none=True) or "").splitlines():
        fields = job_fields(line)
        array, task = fields.get("ArrayJobId"), fields.get("ArrayTaskId")
        job = f"{array}_{task}" if array and task and task.isdigit() else fields.get("JobId")
        segment, nodelist = fields.get("SegmentSize", ""), fields.get("NodeList", "")
        if job in wanted and segment.isdigit() and int(segment) > 0 and nodelist not in ("", "(null)"):
            found[job] = (hostnames(nodelist), int(segment))
    if not found:
        return {}
    blocks = cluster_blocks()
    problems = {job: segment_problem(job, nodes, segment, blocks) for job, (nodes, segment) in found.items()}
    return {job: problem for job, problem in problems.items() if problem}


def job_fields(line: str) -> dict[str, str]:
    """One job of `scontrol -o show job` (one line of KEY=VALUE words) as a dict."""
    return dict(item.split("=", 1) for item in line.split() if "=" in item)


def job_nodes(job_id: str) -> list[str] | None:
    """The nodes a job holds (`scontrol -o show job ID`, NodeList); None while it holds none
    yet, or when Slurm no longer knows the job."""
    from wirewise.orchestrator.slurm.command import slurm

    for line in (slurm("scontrol", "-o", "show", "job", job_id, or_none=True) or "").splitlines():
        nodelist = job_fields(line).get("NodeList", "")
        if nodelist not in ("", "(null)"):
            return hostnames(nodelist)
    return None


def segment_problem(job_id: str, nodes: list[str], segment: int, blocks: Mapping[str, list[str]]) -> str | None:
    """allocation_problems' judgement on what was read: Slurm orders a job's nodes by index, so
    each block's share of them must be whole segments."""
    if not blocks:
        return f"job {job_id} asked --segment={segment}, but the cluster runs no block topology: its nodes {hostlist(nodes)} are not kept in one NVLink domain"
    block_of = {node: name for name, members in blocks.items() for node in members}
    share: dict[str, int] = {}
    for node in nodes:
        share[block_of.get(node, "no block")] = share.get(block_of.get(node, "no block"), 0) + 1
    split = {name: count for name, count in share.items() if count % segment or name == "no block"}
    if split:
        spread = ", ".join(f"{count} in {name}" for name, count in sorted(share.items()))
        return f"job {job_id} asked --segment={segment}, but Slurm gave {hostlist(nodes)}: {spread}"
    return None
