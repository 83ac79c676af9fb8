"""A test node's NVML (the `pynvml` module of nvidia-ml-py), for the multi-node test cluster.

No GPU, driver or NVML exists on the development and CI machines. tests/slurm/multinode.sh
copies this file into each node's own folder (seen inside that node only, at the same path on
every node) and puts it first on the Python path of every job there, so that `wirewise topo
show`, `topo save` and the job supervisor's probe on that node read the wiring the node was
given: its `nvidia-smi topo -m` file (../topo.txt) and its GPU model (../gpu-name).

The machine it describes: one GPU per row of the file, NV<n> pairs as n NVLinks to the peer's
PCI bus id (so the probe builds the matrix from NVML, as on a real NVLink machine), the other
pairs as the common PCIe ancestor the label names, and each GPU's CPU and NUMA affinity from
the file. A GPU with more links than NVML has (an NVSwitch box's NV18 to 7 peers) reports
NVLink as not supported, and the probe falls back to the node's `nvidia-smi topo -m` (the shim
beside this file), as it does in a VM.

Its NVLink fabric (nvmlDeviceGetGpuFabricInfoV) is the one ../fabric names ("CLUSTER-UUID
CLIQUE-ID", written by tests/slurm/multinode.sh: nodes of one type share one domain), completed and healthy
on every GPU; without the file the GPUs report no fabric (state "not supported").

Faults a test plants on a node: ../nvml-faults.json (read on every call, so a planted fault
shows in the next process and its removal too), e.g.

    {"inactive": {"1": [0, 1]}}   GPU 1's NVLinks 0 and 1 down
    {"pcie": {"2": [4, 8]}}       GPU 2's PCIe link at gen 4 x8 (the maximum is gen 4 x16)
    {"fabric_health": {"2": 1}}   GPU 2's fabric health mask: degraded bandwidth (NVML's bits 0-1 = 1)
"""

from __future__ import annotations

import ctypes
import json
import re
from functools import cache
from pathlib import Path
from types import SimpleNamespace

NODE = Path(__file__).resolve().parent.parent
NVML_NVLINK_MAX_LINKS = 18
NOT_SUPPORTED, INVALID_ARGUMENT = 3, 2
GPU_DEVICE = 0  # nvmlIntNvLinkDeviceType_t of a GPU at the far end of a link
LEVELS = {"PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}  # nvmlGpuTopologyLevel_t
MEMORY_BYTES = 80 * 1024**3


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value} (fake NVML of a test node)")
        self.value = value


@cache
def _wiring():
    from wirewise.topology.parse import parse_topo_text

    return parse_topo_text((NODE / "topo.txt").read_text(), str(NODE / "topo.txt"))


def _faults() -> dict:
    try:
        return json.loads((NODE / "nvml-faults.json").read_text())
    except FileNotFoundError:
        return {}


def _pcie(handle: int) -> tuple[int, int]:
    return tuple(_faults().get("pcie", {}).get(str(handle), (4, 16)))


def _bus(index: int) -> str:
    return f"00000000:{0x18 + 0x10 * index:02X}:00.0"


def _links(handle: int) -> list[int]:
    """The far-end GPU of each of the GPU's NVLinks, in link order."""
    row = _wiring().links[handle]
    return [peer for peer, label in enumerate(row) if label.startswith("NV") for _ in range(int(label[2:]))]


def _nvlink_supported() -> bool:
    return all(len(_links(h)) <= NVML_NVLINK_MAX_LINKS for h in range(len(_wiring().links)))


def _cpus(text: str | None) -> list[int]:
    found = []
    for part in (text or "").split(","):
        if re.fullmatch(r"\d+(-\d+)?", part.strip()):
            low, _, high = part.strip().partition("-")
            found.extend(range(int(low), int(high or low) + 1))
    return found


class c_nvmlGpuFabricInfo_v2_t(ctypes.Structure):  # nvml.h's nvmlGpuFabricInfo_v2_t
    _fields_ = [("version", ctypes.c_uint), ("clusterUuid", ctypes.c_uint8 * 16), ("status", ctypes.c_int),
                ("cliqueId", ctypes.c_uint32), ("state", ctypes.c_uint), ("healthMask", ctypes.c_uint32)]


def nvmlDeviceGetGpuFabricInfoV(handle: int, info) -> int:
    """Fills the struct behind `info` (ctypes.byref, as with the real pynvml)."""
    out = info._obj
    try:
        uuid, clique = (NODE / "fabric").read_text().split()
    except FileNotFoundError:
        out.state = 0  # NVML_GPU_FABRIC_STATE_NOT_SUPPORTED
        return 0
    out.clusterUuid[:] = list(bytes.fromhex(uuid.replace("-", "")))
    out.cliqueId, out.state, out.status = int(clique), 3, 0  # completed, NVML_SUCCESS
    out.healthMask = int(_faults().get("fabric_health", {}).get(str(handle), 0))
    return 0


def nvmlInit() -> None:
    if not (NODE / "topo.txt").exists():
        raise NVMLError(9)  # NVML_ERROR_DRIVER_NOT_LOADED: not inside a node with fake GPUs


def nvmlShutdown() -> None:
    pass


def nvmlDeviceGetCount() -> int:
    return len(_wiring().links)


def nvmlDeviceGetHandleByIndex(index: int) -> int:
    if not 0 <= index < nvmlDeviceGetCount():
        raise NVMLError(INVALID_ARGUMENT)
    return index


def nvmlDeviceGetName(handle: int) -> str:
    return (NODE / "gpu-name").read_text().strip()


def nvmlDeviceGetUUID(handle: int) -> str:
    return f"GPU-{NODE.name}-{handle}-fake"


def nvmlDeviceGetPciInfo(handle: int) -> SimpleNamespace:
    return SimpleNamespace(busId=_bus(handle).encode())


def nvmlDeviceGetMinorNumber(handle: int) -> int:
    return handle


def nvmlDeviceGetCurrPcieLinkGeneration(handle: int) -> int:
    return _pcie(handle)[0]


def nvmlDeviceGetMaxPcieLinkGeneration(handle: int) -> int:
    return 4


def nvmlDeviceGetCurrPcieLinkWidth(handle: int) -> int:
    return _pcie(handle)[1]


def nvmlDeviceGetMaxPcieLinkWidth(handle: int) -> int:
    return 16


def nvmlDeviceGetPerformanceState(handle: int) -> int:
    return 0


def nvmlDeviceGetCpuAffinity(handle: int, words: int) -> list[int]:
    mask = sum(1 << cpu for cpu in _cpus(_wiring().cpu_affinity[handle]))
    return [(mask >> (64 * w)) & (2**64 - 1) for w in range(max(words, 4))]


def nvmlDeviceGetNumaNodeId(handle: int) -> int:
    numa = _wiring().numa[handle]
    if numa is None:
        raise NVMLError(NOT_SUPPORTED)
    return numa


def nvmlDeviceGetNvLinkState(handle: int, link: int) -> int:
    if not _nvlink_supported():
        raise NVMLError(NOT_SUPPORTED)
    if link >= len(_links(handle)):
        raise NVMLError(INVALID_ARGUMENT)  # past the GPU's last link (a GPU without NVLink has none)
    return 0 if link in _faults().get("inactive", {}).get(str(handle), []) else 1


def nvmlDeviceGetNvLinkRemotePciInfo(handle: int, link: int) -> SimpleNamespace:
    return SimpleNamespace(busId=_bus(_links(handle)[link]).encode())


def nvmlDeviceGetNvLinkRemoteDeviceType(handle: int, link: int) -> int:
    return GPU_DEVICE


def nvmlDeviceGetTopologyCommonAncestor(a: int, b: int) -> int:
    """The label's PCIe level; NV pairs (their PCIe path is not in the file) as SYS."""
    return LEVELS.get(_wiring().links[a][b], LEVELS["SYS"])


def nvmlDeviceGetMemoryInfo(handle: int) -> SimpleNamespace:
    return SimpleNamespace(total=MEMORY_BYTES, free=MEMORY_BYTES, used=0)


def nvmlDeviceGetComputeRunningProcesses(handle: int) -> list:
    return []


def nvmlSystemGetDriverVersion() -> str:
    return "570.86.15"


def nvmlSystemGetCudaDriverVersion_v2() -> int:
    return 12080
