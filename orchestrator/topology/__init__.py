"""Stage "probe": a node's GPU wiring, its fabric class, its fingerprint, its Slurm lines.

    read_topology(path | "-" | None) -> NodeTopology   parse a saved `nvidia-smi topo -m`
                                                      text, or probe this machine (NVML)
    save_topology(store, topo, node) -> (fingerprint, created)
    list_topologies(store) -> [{node, fabric, gpus, fingerprint, ...}]
    gres_conf(topo, node) -> str                      gres.conf lines for Slurm

pynvml is imported inside the live probe only; nothing here imports torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.topology.classify import FABRICS
from orchestrator.topology.model import NodeTopology

if TYPE_CHECKING:
    from orchestrator.store import Store

__all__ = ["FABRICS", "NodeTopology", "gres_conf", "list_topologies", "node_name", "read_topology", "save_topology", "topology_from_text"]


def read_topology(from_file: str | Path | None = None) -> NodeTopology:
    """A saved `nvidia-smi topo -m` text (a path, or '-' for stdin), or this machine live.

    Raises UserError on bad input, or when there is no GPU or driver to probe."""
    if from_file is None:
        from orchestrator.topology.probe import probe_node

        return probe_node()
    from orchestrator.topology.parse import read_source

    text, name = read_source(from_file)
    return topology_from_text(text, name)


def topology_from_text(text: str, source: str = "input") -> NodeTopology:
    """A topology from `nvidia-smi topo -m` text (with optional `nvidia-smi -L` lines for names)."""
    from orchestrator.topology.parse import parse_topo_text

    parsed = parse_topo_text(text, source)
    details = {
        "source": "file",
        "file": source,
        "gpus": [{"name": name, "uuid": uuid} for name, uuid in zip(parsed.gpu_names, parsed.uuids)],
        "nics": {"names": parsed.nics, "links": parsed.nic_links},
        "notes": [],
    }
    return NodeTopology(
        links=parsed.links,
        gpu_names=parsed.gpu_names,
        cpu_affinity=parsed.cpu_affinity,
        numa=parsed.numa,
        details=details,
        raw_text=text,
    )


def node_name(topo: NodeTopology | None = None, given: str | None = None) -> str:
    """The name results and topologies are stored under: the one given, else the host the
    topology was probed on, else this host's short name (one rule for every caller)."""
    from orchestrator.topology.probe import short_hostname

    return given or (topo.details.get("hostname") if topo else None) or short_hostname()


def save_topology(store: Store, topo: NodeTopology, node: str | None = None) -> tuple[str, bool]:
    from orchestrator.topology.save import save_topology as save

    return save(store, topo, node)


def list_topologies(store: Store) -> list[dict]:
    from orchestrator.topology.save import list_topologies as listing

    return listing(store)


def gres_conf(topo: NodeTopology, node: str) -> str:
    from orchestrator.topology.gres import gres_conf as lines

    return lines(topo, node)
