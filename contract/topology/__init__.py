"""A node's GPU wiring: read it (a saved `nvidia-smi topo -m`, or this machine through NVML),
classify its fabric, fingerprint it. Both sides call this: the CLI on a login node and the
supervisor on a compute node.

    read_topology(path | "-" | None) -> Topology   a saved text, or this machine live
    topology_from_text(text) -> Topology
    node_name(topo, given) -> str                   the name results are stored under

Storing a topology is the store's (wirewise.orchestrator.store.topology); gres.conf lines are
Slurm's (wirewise.orchestrator.slurm.gres). NVML is asked through wirewise.nvml, inside the live probe only;
nothing here imports torch. `Topology` (pydantic) loads on first use, so reading the fabric
names or classifying a stored matrix (`wirewise results`) does not import pydantic.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from wirewise.topology.classify import FABRICS

if TYPE_CHECKING:
    from wirewise.topology.model import Topology

__all__ = ["FABRICS", "Topology", "node_name", "read_topology", "topology_from_text"]


def __getattr__(name: str):
    if name == "Topology":
        from wirewise.topology.model import Topology

        return Topology
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_topology(from_file: str | Path | list[str] | None = None) -> Topology:
    """One node's saved files (a path, '-' for stdin, or a list of them), or this machine live.

    The files: `nvidia-smi topo -m`, and/or one saved nvidia-smi query (`-q`, `-q -x`, the fabric
    CSV; wirewise.topology.smi). Raises UserError on bad input, or when there is no GPU or driver
    to probe; WiringUnknown when the files name GPUs but nothing proves their wiring."""
    if from_file is None or from_file == []:
        from wirewise.topology.probe import probe_node

        return probe_node()
    from wirewise.topology.node_files import topology_from_files

    return topology_from_files([from_file] if isinstance(from_file, (str, Path)) else list(from_file))


def topology_from_text(text: str, source: str = "input") -> Topology:
    """A topology from `nvidia-smi topo -m` text (with optional `nvidia-smi -L` lines for names)."""
    from wirewise.topology.model import Topology
    from wirewise.topology.parse import parse_topo_text

    parsed = parse_topo_text(text, source)
    details = {
        "source": "file",
        "file": source,
        "gpus": [{"name": name, "uuid": uuid} for name, uuid in zip(parsed.gpu_names, parsed.uuids)],
        "nics": {"names": parsed.nics, "links": parsed.nic_links},
        "notes": [],
    }
    return Topology(
        links=parsed.links,
        gpu_names=parsed.gpu_names,
        cpu_affinity=parsed.cpu_affinity,
        numa=parsed.numa,
        details=details,
        raw_text=text,
    )


def node_name(topo: Topology | None = None, given: str | None = None) -> str:
    """The name results and topologies are stored under: the one given, else the host the
    topology was probed on, else this host's short name (one rule for every caller)."""
    from wirewise.topology.probe import short_hostname

    return given or (topo.details.get("hostname") if topo else None) or short_hostname()
