"""Read this machine's GPU wiring live through NVML (the `nvidia-ml-py` package, module pynvml).

Per GPU: name, UUID, PCI bus id, device minor number, PCIe generation and width (current
and max), CPU affinity, NUMA node, every NVLink: up or down, and what is at the far
end (another GPU, found by its PCI bus id, or an NVSwitch), and its multi-node NVLink fabric
(wirewise.topology.fabric). The pair matrix is built as
nvidia-smi builds it: NV<n> for n links between two GPUs (through NVSwitches: the links
both GPUs have into the switch fabric), else NVML's PCIe common ancestor.

Where NVML reports NVLink as not supported (as it does in VMs), the probe says so and
reads the matrix from `nvidia-smi topo -m` instead. The job supervisor calls this on
compute nodes before every task: no torch, NVML calls only, nvidia-smi only when needed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wirewise.errors import UserError
from wirewise.nvml import NvmlUnavailable, query, session, text as nvml_text
from wirewise.ranges import CPU_IDS, format_ranges, parse_ranges
from wirewise.topology import cpus, fabric, labels
from wirewise.topology.model import Topology
from wirewise.versions import dist_version, nccl_version
from wirewise.topology.parse import parse_topo_text

SMI_SOURCE = "nvidia-smi topo -m output"

_ANCESTOR_LEVELS = {  # nvmlGpuTopologyLevel_t -> nvidia-smi label
    0: "PIX",  # NVML_TOPOLOGY_INTERNAL: two GPUs on one board
    10: "PIX",  # NVML_TOPOLOGY_SINGLE
    20: "PXB",  # NVML_TOPOLOGY_MULTIPLE
    30: "PHB",  # NVML_TOPOLOGY_HOSTBRIDGE
    40: "NODE",  # NVML_TOPOLOGY_NODE
    50: "SYS",  # NVML_TOPOLOGY_SYSTEM
}
_REMOTE_TYPES = {0: "gpu", 1: "cpu", 2: "nvswitch"}  # nvmlIntNvLinkDeviceType_t; 0xFF unknown


def short_hostname() -> str:
    """The node name as Slurm knows it: the host name up to the first dot."""
    return socket.gethostname().split(".")[0]


def probe_node(nvml: Any = None, run_nvidia_smi: Callable[[], str | None] | None = None) -> Topology:
    """This machine's topology. `nvml` and `run_nvidia_smi` are for tests on machines without a GPU.
    Without a GPU or driver, UserError says why and nothing else: what the user can give instead
    is the caller's to say (`topo show --from-file`, `place --topology-file`; doctor only notes it)."""
    run_nvidia_smi = run_nvidia_smi or nvidia_smi_topo_text
    try:
        with session(nvml) as nvml:
            count = nvml.nvmlDeviceGetCount()
            if count == 0:
                raise UserError("NVML sees no GPU on this machine")
            handles = [_handle(nvml, i) for i in range(count)]
            gpus = [_read_gpu(nvml, h) for h in handles]
            versions = _versions(nvml)
            ancestors = _ancestor_matrix(nvml, handles)
    except NvmlUnavailable as exc:
        raise UserError(str(exc)) from None
    return _assemble(gpus, ancestors, versions, run_nvidia_smi)


def _handle(nvml, index: int):
    """A GPU's handle; a GPU hidden from this process (a job's device cgroup, a lost GPU) is
    named in one line rather than a traceback in the job supervisor."""
    try:
        return nvml.nvmlDeviceGetHandleByIndex(index)
    except nvml.NVMLError as exc:
        raise UserError(f"NVML cannot open GPU {index} ({exc}): probe the node outside a job's device limits") from None


def nvidia_smi_topo_text() -> str | None:
    # Absolute PATH entries only: a relative one would run an `nvidia-smi` from the current folder.
    search = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(p))
    smi = shutil.which("nvidia-smi", path=search)
    if not smi:
        return None
    try:
        proc = subprocess.run([smi, "topo", "-m"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


# -- NVML ----------------------------------------------------------------
def _read_gpu(nvml, handle) -> dict[str, Any]:
    pci = query(nvml, "nvmlDeviceGetPciInfo", handle)
    bus_id = nvml_text(pci.busId) if pci is not None else None
    nvlinks, nvlink_supported = _read_nvlinks(nvml, handle)
    affinity = _cpu_affinity(nvml, handle, bus_id)
    return {
        "name": nvml_text(query(nvml, "nvmlDeviceGetName", handle)),
        "uuid": nvml_text(query(nvml, "nvmlDeviceGetUUID", handle)),
        "pci_bus_id": bus_id,
        "minor": query(nvml, "nvmlDeviceGetMinorNumber", handle),
        "pcie": {
            "curr_gen": query(nvml, "nvmlDeviceGetCurrPcieLinkGeneration", handle),
            "max_gen": query(nvml, "nvmlDeviceGetMaxPcieLinkGeneration", handle),
            "curr_width": query(nvml, "nvmlDeviceGetCurrPcieLinkWidth", handle),
            "max_width": query(nvml, "nvmlDeviceGetMaxPcieLinkWidth", handle),
        },
        # 0 (P0) runs at full clocks, and its PCIe link at the generation it trained to; in
        # higher states (idle is P8) the driver may lower the generation to save power.
        "pstate": _pstate(query(nvml, "nvmlDeviceGetPerformanceState", handle)),
        "cpu_affinity": format_ranges(affinity) if affinity else None,
        "numa": _numa_node(nvml, handle, bus_id),
        "nvlink_supported": nvlink_supported,
        "nvlinks": nvlinks,
        "fabric": fabric.read_fabric(nvml, handle),
    }



def _pstate(value) -> int | None:
    """NVML's performance state, 0..15; None where it is unknown (NVML says 32)."""
    return value if isinstance(value, int) and 0 <= value <= 15 else None


def _read_nvlinks(nvml, handle) -> tuple[list[dict[str, Any]], bool]:
    """Every link the GPU has: state and far end. (links, whether NVML reports NVLink at all)."""
    links = []
    for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            active = bool(nvml.nvmlDeviceGetNvLinkState(handle, link))
        except nvml.NVMLError:
            continue  # past the GPU's last link, or NVLink not supported at all
        entry: dict[str, Any] = {"link": link, "active": active}
        if active:
            remote = query(nvml, "nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
            kind = query(nvml, "nvmlDeviceGetNvLinkRemoteDeviceType", handle, link)
            entry["remote_pci_bus_id"] = nvml_text(remote.busId) if remote is not None else None
            entry["remote"] = _REMOTE_TYPES.get(kind, "unknown") if kind is not None else "unknown"
        links.append(entry)
    return links, bool(links)


def _cpu_affinity(nvml, handle, bus_id: str | None) -> list[int]:
    words = ((os.cpu_count() or 1) + 63) // 64
    mask = query(nvml, "nvmlDeviceGetCpuAffinity", handle, words)
    if mask is not None:
        found = cpus.cpus_from_mask(mask)
        if found:
            return found
    sysfs = _sysfs_pci(bus_id)
    if sysfs and (sysfs / "local_cpulist").exists():
        return sorted(parse_ranges((sysfs / "local_cpulist").read_text(), CPU_IDS))
    return []


def _numa_node(nvml, handle, bus_id: str | None) -> int | None:
    node = query(nvml, "nvmlDeviceGetNumaNodeId", handle)
    if node is None:
        sysfs = _sysfs_pci(bus_id)
        if sysfs and (sysfs / "numa_node").exists():
            node = int((sysfs / "numa_node").read_text().strip() or -1)
    return node if node is not None and node >= 0 else None


def _sysfs_pci(bus_id: str | None) -> Path | None:
    """NVML's '00000000:18:00.0' is '0000:18:00.0' in /sys/bus/pci/devices."""
    key = _bus_key(bus_id)
    if key is None:
        return None
    domain, bus, device, function = key
    return Path(f"/sys/bus/pci/devices/{domain:04x}:{bus:02x}:{device:02x}.{function:x}")


def _bus_key(bus_id: str | None) -> tuple[int, int, int, int] | None:
    """A PCI bus id as numbers, so '00000000:18:00.0' and '0000:18:00.0' compare equal."""
    try:
        domain, bus, rest = bus_id.strip().split(":")
        device, function = rest.split(".")
        return int(domain, 16), int(bus, 16), int(device, 16), int(function, 16)
    except (AttributeError, ValueError):
        return None


def _ancestor_matrix(nvml, handles) -> list[list[str | None]]:
    n = len(handles)
    matrix: list[list[str | None]] = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            level = query(nvml, "nvmlDeviceGetTopologyCommonAncestor", handles[i], handles[j])
            matrix[i][j] = matrix[j][i] = _ANCESTOR_LEVELS.get(level)
    return matrix


def _versions(nvml) -> dict[str, str | None]:
    cuda = query(nvml, "nvmlSystemGetCudaDriverVersion_v2") or query(nvml, "nvmlSystemGetCudaDriverVersion")
    return {
        "driver": nvml_text(query(nvml, "nvmlSystemGetDriverVersion")),
        "cuda": f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None,
        "nccl": nccl_version(),
        "nvidia_ml_py": dist_version("nvidia-ml-py"),
    }


# -- the topology ----------------------------------------------------------
def _assemble(gpus, ancestors, versions, run_nvidia_smi) -> Topology:
    notes: list[str] = []
    links, switch_seen = _nvml_matrix(gpus, ancestors)
    names = [g["name"] for g in gpus]
    affinity = [g["cpu_affinity"] for g in gpus]
    numa = [g["numa"] for g in gpus]
    raw_text = None
    source = "nvml"
    if not all(g["nvlink_supported"] for g in gpus):
        switch_seen = None
        smi = _smi_matrix(run_nvidia_smi, len(gpus))
        if isinstance(smi, str):
            notes.append(
                f"NVML reports NVLink as not supported here (a VM, or GPUs without NVLink), and {smi}: "
                "pairs show PCIe paths only, NVLinks may be missing"
            )
        else:
            parsed, raw_text = smi
            notes.append(
                "NVML reports NVLink as not supported here (a VM, or GPUs without NVLink): "
                "the pair matrix comes from `nvidia-smi topo -m`"
            )
            links = parsed.links
            affinity = [a or p for a, p in zip(affinity, parsed.cpu_affinity)]
            numa = [a if a is not None else p for a, p in zip(numa, parsed.numa)]
            source = "nvml+nvidia-smi"
    details = {
        "source": source,
        "hostname": short_hostname(),
        "gpus": gpus,
        "versions": versions,
        "slurm_cores": _slurm_cores(affinity),
        "notes": notes,
    }
    return Topology(
        links=links,
        gpu_names=names,
        cpu_affinity=affinity,
        numa=numa,
        pcie_ancestors=ancestors,
        switch_seen=switch_seen,
        details=details,
        raw_text=raw_text,
    )


def _nvml_matrix(gpus, ancestors) -> tuple[list[list[str]], bool]:
    """Labels from NVLink counts and PCIe ancestors; and whether an NVSwitch was seen."""
    n = len(gpus)
    index_of = {_bus_key(g["pci_bus_id"]): k for k, g in enumerate(gpus)}
    direct = [[0] * n for _ in range(n)]
    into_switch = [0] * n
    for k, gpu in enumerate(gpus):
        for link in gpu["nvlinks"]:
            if not link["active"]:
                continue
            peer = index_of.get(_bus_key(link.get("remote_pci_bus_id")))
            if link.get("remote") == "nvswitch":
                into_switch[k] += 1
            elif peer is not None and peer != k:
                direct[k][peer] += 1
    links = [[labels.SELF] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            count = max(direct[i][j], direct[j][i])
            if into_switch[i] and into_switch[j]:
                count += min(into_switch[i], into_switch[j])
            links[i][j] = labels.nvlink_label(count) if count else (ancestors[i][j] or "SYS")
    return links, any(into_switch)


def _smi_matrix(run_nvidia_smi, gpu_count: int):
    """(parsed, text) from `nvidia-smi topo -m`, or a string saying why it cannot be used."""
    text = run_nvidia_smi()
    if not text:
        return "`nvidia-smi topo -m` did not run"
    try:
        parsed = parse_topo_text(text, SMI_SOURCE)
    except UserError as exc:
        return f"`nvidia-smi topo -m` could not be read ({exc})"
    if len(parsed.links) != gpu_count:
        return f"`nvidia-smi topo -m` shows {len(parsed.links)} GPUs where NVML sees {gpu_count}"
    return parsed, text


def _slurm_cores(affinities: list[str | None]) -> list[str | None]:
    """Cores= per GPU from this machine's sysfs (read once for all GPUs); None where unknown."""
    core_of = cpus.core_indices() if any(affinities) else None
    found = [cpus.logical_cores(sorted(parse_ranges(a, CPU_IDS)), core_of) for a in affinities]
    return [format_ranges(cores) if cores else None for cores in found]
