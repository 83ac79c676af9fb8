"""pytest plugin: the real multi-node Slurm cluster (tests/slurm/multinode.sh): three compute
nodes on this machine, each a slurmd in its own network, UTS and mount namespaces, with its
own fake GPUs and wiring (wwn1 and wwn2: 4 GPUs, NV4 all-to-all; wwn3: 3 GPUs, an NV6 pair
and one on PCIe), on Slurm 25.11, beside the one-node cluster of tests/slurm/fixture.py (Debian's
22.05). SLURM_CONF and PATH (25.11's commands first) point at it during a test that asks for it.

Fixtures:
    multinode_cluster (session): starts the cluster (a no-op when it already runs) and yields
        a MultinodeCluster. At session end the last pytest session using it stops it if a test
        session started it; WIREWISE_KEEP_SERVICES=1 keeps it running.
    multinode (function): the same cluster, with a crashed node brought back first, and
        SLURM_CONF and PATH pointing at it for the test only: the one-node cluster keeps SLURM_CONF for
        the rest of the session (both fixtures may run in one session).

GPUs, drivers and NVML cannot exist here: each node's `nvidia-smi` and `pynvml` are stand-ins
(tests/slurm/fake_node/) that report the wiring the node was given.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

from tests.services import SharedUse, start_service, unavailable
from tests.slurm.fixture import parse_exports

SCRIPT = Path(__file__).resolve().with_name("multinode.sh")


@dataclass
class MultinodeCluster:
    state_dir: Path
    conf: Path
    partition: str
    node_types: dict[str, str]  # node name -> its type (its Slurm feature)
    env: dict[str, str] = field(default_factory=dict)  # what `multinode.sh env` exports
    script: Path = SCRIPT
    users: SharedUse | None = field(default=None, repr=False)

    def used_by_other_sessions(self) -> bool:
        """Another pytest session uses this cluster now: do not stop it or crash its nodes."""
        return self.users is not None and self.users.others()

    @property
    def slurm_bin(self) -> str:
        """The folders of its Slurm's commands (25.11), for a PATH of one's own (a slurmd hook's)."""
        return self.env["WIREWISE_MULTINODE_SLURM_BIN"]

    @property
    def nodes(self) -> list[str]:
        return list(self.node_types)

    def run_script(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
        env = {**os.environ, **self.env}
        proc = subprocess.run([str(self.script), *args], env=env, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise RuntimeError(f"multinode.sh {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    def exec(self, node: str, *command: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
        """`command` inside the node's namespaces (its network, hostname and folder)."""
        return self.run_script("exec", node, *command, timeout=timeout, check=check)

    def crash(self, node: str) -> None:
        """Every process of the node killed at once: the node is lost, as in a power cut."""
        self.run_script("crash", node)

    def start(self) -> None:
        """Bring back a node a test crashed (a no-op when every node runs); a topology a test
        loaded (use_topology) is dropped again: Slurm's flat default."""
        self.run_script("start")

    def use_topology(self, path: Path | None) -> None:
        """Restart the cluster with this topology.conf or topology.yaml (None: none)."""
        env = {**os.environ, **self.env}
        env.pop("WIREWISE_MULTINODE_TOPOLOGY", None)
        if path is not None:
            env["WIREWISE_MULTINODE_TOPOLOGY"] = str(path)
        proc = subprocess.run([str(self.script), "start"], env=env, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"multinode.sh start with topology {path} failed ({proc.returncode}):\n{proc.stderr}")

    def namespaces(self, node: str) -> tuple[str, str]:
        """The node's (network, UTS) namespace inodes, as multinode.sh recorded them."""
        net, uts = (self.state_dir / "run" / f"{node}.ns").read_text().split()
        return net, uts

    def pids(self, node: str, namespaces: tuple[str, str] | None = None) -> list[int]:
        """The live processes inside the node's namespaces (the machine has one pid namespace)."""
        wanted = namespaces or self.namespaces(node)
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                ids = (str(os.stat(proc / "ns" / "net").st_ino), str(os.stat(proc / "ns" / "uts").st_ino))
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if ids == wanted and state not in "ZX":
                found.append(int(proc.name))
        return found


@pytest.fixture(scope="session")
def multinode_cluster() -> Iterator[MultinodeCluster]:
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("nsenter") is None:
        unavailable("multi-node Slurm cluster", "needs root and util-linux (unshare, nsenter)")
    env = {**os.environ}
    planned = parse_exports(subprocess.run([str(SCRIPT), "env"], env=env, capture_output=True, text=True).stdout)
    folder = Path(planned.get("WIREWISE_MULTINODE_DIR") or "/tmp/ww-multinode")
    _, users = start_service("multi-node Slurm cluster", SCRIPT, env, folder)
    exports = parse_exports(subprocess.run([str(SCRIPT), "env"], env=env, capture_output=True, text=True, check=True).stdout)
    cluster = MultinodeCluster(
        state_dir=Path(exports["WIREWISE_MULTINODE_DIR"]),
        conf=Path(exports["SLURM_CONF"]),
        partition=exports["WIREWISE_MULTINODE_PARTITION"],
        node_types=dict(entry.split("=", 1) for entry in exports["WIREWISE_MULTINODE_NODES"].split()),
        env=exports,
        users=users,
    )
    yield cluster
    users.leave(stop=lambda: cluster.run_script("stop", timeout=120))


@pytest.fixture
def multinode(multinode_cluster: MultinodeCluster, monkeypatch) -> MultinodeCluster:
    multinode_cluster.start()
    for key, value in multinode_cluster.env.items():
        monkeypatch.setenv(key, value)
    return multinode_cluster
