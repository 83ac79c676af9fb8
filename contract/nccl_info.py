"""What the wire carried: the transports NCCL's NCCL_DEBUG=INFO lines say a run's connections used.

NCCL prints one line per connection it sets up (NVIDIA/nccl src/transport/*.cc, the same
shape from 2.18 to 2.28; older releases printed bus ids in the brackets and "Ring" for
"Channel"):

    Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read                (p2p.cc: IPC, CUMEM, MNNVL,
    Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer           direct pointer, indirect/R[D];
    Channel 00/0 : 0[0] -> 1[1] via P2P/MNNVL/read                /read, /CE after it)
    Channel 00 : 2[6] -> 3[7] via SHM/direct/direct              (shm.cc; SHM/CE/direct)
    Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0(1)/GDRDMA   (net.cc: NET/<plugin>/<dev>,
    Channel 00/0 : 1[1] -> 2[0] [receive] via NET/Socket/0       /GDRDMA(PCI), /Shared)
    CollNet 00/0 : 3 [send] via COLLNET/SHARP/0/GDRDMA           (coll_net.cc)

and, once per communicator, `N coll channels, [N collnet channels, ]N nvls channels, ...`,
`NVLS multicast support is [not ]available on dev D`, `Connected NVLS tree`, `comm 0x... rank R
nRanks N nNodes M localRanks L localRank K MNNVL 0|1` and `NCCL version 2.28.9+cuda13.0`. The
connection lines belong to the INIT subsystem, which NCCL_DEBUG=INFO prints by default.

A transport is named as NCCL names it, to the level that tells the path: P2P/IPC, P2P/CUMEM,
P2P/direct (one process), P2P/MNNVL (multi-node NVLink), P2P/indirect (through another GPU),
SHM (host memory), NET/<plugin> (IB, Socket, IBext_v8, ...; /GDRDMA where the NIC reads GPU
memory), CollNet, and NVLS where the communicator set up NVLink SHARP channels (NCCL then picks
NVLS or a ring/tree per call). `carried` joins them with "+", NVLink's first: "NVLS+P2P/CUMEM",
"P2P/IPC+NET/IB/GDRDMA"; "local" for a one-rank communicator (nothing leaves the GPU); None
where the lines say nothing (no INFO output, or NCCL_DEBUG_SUBSYS without INIT).

One reader for every log: the compute side's (wirewise.jobs.supervise reads each rank's
NCCL_DEBUG_FILE) and imported nccl-tests logs (wirewise.orchestrator.record.nccl_tests).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

LOCAL = "local"  # a one-rank communicator: no connection, nothing leaves the GPU

_RANK = r"(\d+)(?:\[[0-9a-fA-Fx]+\])?"
_CONNECTION = re.compile(rf"\b(?:Channel|Ring) \d+(?:/\d+)? : {_RANK} -> {_RANK}(?: \[(?:send|receive)\])? via (\S.*?)\s*$")
_COLLNET = re.compile(r"\bCollNet \d+(?:/\d+)? : \d+ \[(?:send|receive)\] via COLLNET/")
_CHANNELS = re.compile(r"\b(\d+) coll channels, (?:\d+ collnet channels, )?(\d+) nvls channels")
_NVLS_SUPPORT = re.compile(r"\bNVLS multicast support is (not )?available")
_NVLS_CONNECTED = re.compile(r"\bConnected NVLS")
_COMM = re.compile(r"\bcomm 0x[0-9a-f]+ rank \d+ nRanks (\d+) nNodes (\d+) localRanks \d+ localRank \d+(?: MNNVL (\d))?")
VERSION_LINE = re.compile(r"\bNCCL version (\d+\.\d+\.\d+)")  # also the nccl-tests reader's
_WORDS = (" via ", "channels", "NVLS", "nRanks", "NCCL version")  # a cheap test before the expressions
_NVLINK_FIRST = ("NVLS", "P2P/MNNVL", "P2P/CUMEM", "P2P/IPC", "P2P/direct", "P2P/indirect", "SHM", "CollNet")


@dataclass
class Wire:
    """What one or more NCCL INFO logs say: each transport's connection count, the NVLS
    channels, the widest communicator (ranks, nodes) and whether it ran multi-node NVLink."""

    connections: dict[str, int] = field(default_factory=dict)
    nvls_channels: int = 0
    nvls_available: bool | None = None
    ranks: int | None = None
    nodes: int | None = None
    mnnvl: bool | None = None
    version: str | None = None

    @property
    def transports(self) -> list[str]:
        found = set(self.connections) | ({"NVLS"} if self.nvls_channels and self.nvls_available is not False else set())
        return sorted(found, key=_order)

    @property
    def carried(self) -> str | None:
        """The transports joined with "+", "local" for one rank, None where nothing was said."""
        if self.transports:
            return "+".join(self.transports)
        return LOCAL if self.ranks == 1 else None

    def add(self, other: Wire) -> Wire:
        """Two logs (two ranks, two nodes) as one."""
        for name, count in other.connections.items():
            self.connections[name] = self.connections.get(name, 0) + count
        self.nvls_channels = max(self.nvls_channels, other.nvls_channels)
        self.nvls_available = _either(self.nvls_available, other.nvls_available)
        self.ranks = _most(self.ranks, other.ranks)
        self.nodes = _most(self.nodes, other.nodes)
        self.mnnvl = _either(self.mnnvl, other.mnnvl)
        self.version = self.version or other.version
        return self

    def read(self, line: str) -> None:
        """One line of a log. It may carry any prefix (host:pid:tid [dev], a timestamp, a
        logger's) or none; lines that are not NCCL's INFO lines above are skipped."""
        if "NCCL WARN" in line or not any(word in line for word in _WORDS):
            return
        if match := _CONNECTION.search(line):
            name = transport_name(match.group(3))
            self.connections[name] = self.connections.get(name, 0) + 1
        elif _COLLNET.search(line):
            self.connections["CollNet"] = self.connections.get("CollNet", 0) + 1
        elif match := _CHANNELS.search(line):
            self.nvls_channels = max(self.nvls_channels, int(match.group(2)))
        elif match := _NVLS_SUPPORT.search(line):
            self.nvls_available = _either(self.nvls_available, match.group(1) is None)
        elif _NVLS_CONNECTED.search(line):
            self.nvls_available = True
        elif match := _COMM.search(line):
            self.ranks = _most(self.ranks, int(match.group(1)))
            self.nodes = _most(self.nodes, int(match.group(2)))
            if match.group(3) is not None:
                self.mnnvl = _either(self.mnnvl, match.group(3) == "1")
        elif (match := VERSION_LINE.search(line)) and self.version is None:
            self.version = match.group(1)

    def to_json(self) -> dict:
        return {"carried": self.carried, "connections": dict(sorted(self.connections.items(), key=lambda kv: _order(kv[0]))),
                "nvls_channels": self.nvls_channels, "nvls_available": self.nvls_available, "ranks": self.ranks,
                "nodes": self.nodes, "mnnvl": self.mnnvl, "nccl_version": self.version}

    @classmethod
    def from_json(cls, doc: dict) -> Wire:
        return cls(dict(doc.get("connections") or {}), int(doc.get("nvls_channels") or 0), doc.get("nvls_available"),
                   doc.get("ranks"), doc.get("nodes"), doc.get("mnnvl"), doc.get("nccl_version"))


def read_wire(lines: Iterable[str]) -> Wire:
    """The transports one NCCL INFO log (or several, interleaved) shows."""
    wire = Wire()
    for line in lines:
        wire.read(line)
    return wire


def transport_name(via: str) -> str:
    """NCCL's `via` word to the transport's name: P2P/IPC/read -> P2P/IPC, P2P/direct pointer ->
    P2P/direct, SHM/direct/direct -> SHM, NET/IB/0(1)/GDRDMA(PCI) -> NET/IB/GDRDMA."""
    parts = via.split("/")
    kind = parts[0].upper()
    if kind == "P2P" and len(parts) > 1:
        return "P2P/" + parts[1].split(" ")[0]
    if kind == "NET" and len(parts) > 1:
        return f"NET/{parts[1]}" + ("/GDRDMA" if "GDRDMA" in via else "")
    return kind


def off_nvlink(carried: str | None, node_count: int, nvlink_in_node: bool, nvlink_between_nodes: bool) -> list[str]:
    """The transports of `carried` (Wire.carried) that left an NVLink the wiring promises: host
    memory (SHM) or a network on one node where its GPUs share NVLink (`nvlink_in_node`), a
    network between nodes of one multi-node NVLink domain (`nvlink_between_nodes`). A network
    between nodes that share no domain is the way, not a fallback."""
    found = []
    for name in (carried or "").split("+"):
        if name == "SHM" and nvlink_in_node:
            found.append(name)
        elif name.startswith("NET/") and (nvlink_between_nodes or (node_count == 1 and nvlink_in_node)):
            found.append(name)
    return found


def _order(name: str) -> tuple[int, str]:
    return (_NVLINK_FIRST.index(name) if name in _NVLINK_FIRST else len(_NVLINK_FIRST), name)


def _either(a: bool | None, b: bool | None) -> bool | None:
    return None if a is None and b is None else bool(a or b)


def _most(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


__all__ = ["LOCAL", "Wire", "off_nvlink", "read_wire", "transport_name"]
