"""A node's place in a multi-node NVLink fabric (GB200/GB300 NVL72, "MNNVL"): what NVML
reports per GPU, and the NVLink domain a node sits in.

NVML's nvmlDeviceGetGpuFabricInfoV gives each GPU a fabric clusterUuid, cliqueId, state (not
supported, not started, in progress, completed), status (NVML's return code for the fabric,
meaningful once the state is completed) and, from struct v2, a healthMask. A domain is keyed on
(clusterUuid, cliqueId) together: GB300 trays report the sentinel clique id 32766, GB200 trays a
small one with a real UUID, and single-node HGX H100/B200 boards "Completed / Success" with an
all-zero UUID and clique 0, which is no multi-node domain (../shared/REFERENCE.md, "Rack-scale
NVLink"). The probe (wirewise.topology.probe) stores each GPU's fabric in its details; the
block topology Slurm is given (wirewise.orchestrator.slurm.blocks) groups nodes by domain_of.
"""

from __future__ import annotations

from typing import Any

STATES = {1: "not started", 2: "in progress", 3: "completed"}  # nvmlGpuFabricState_t; 0 = not supported
ZERO_UUID = "00000000-0000-0000-0000-000000000000"


def read_fabric(nvml: Any, handle: Any) -> dict[str, Any] | None:
    """One GPU's fabric (struct v2); None where the GPU or the driver has none to report (state
    "not supported", or an NVML without the call). The UUID is written as nvidia-smi -q writes it."""
    import ctypes

    make = getattr(nvml, "c_nvmlGpuFabricInfo_v2_t", None)
    if make is None or not hasattr(nvml, "nvmlDeviceGetGpuFabricInfoV"):
        return None
    info = make()
    try:
        nvml.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(info))
    except nvml.NVMLError:
        return None
    if info.state not in STATES:
        return None
    raw = bytes(info.clusterUuid).hex()
    return {
        "cluster_uuid": f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}",
        "clique_id": int(info.cliqueId),
        "state": STATES[info.state],
        "status": int(info.status),
        "health_mask": int(info.healthMask),
    }


def domain_of(fabrics: list[dict[str, Any] | None]) -> tuple[str, int] | None:
    """The (cluster UUID, clique id) of the multi-node NVLink domain a node's GPUs sit in; None
    when they sit in none: no fabric, the all-zero UUID, a fabric not completed or failed
    (status not 0), or GPUs that disagree. A degraded health mask leaves the GPU in its domain
    (it is a health matter, not a change of place)."""
    keys = set()
    for info in fabrics:
        if not info or info.get("state") != "completed" or info.get("status") != 0 or info.get("cluster_uuid") in (None, ZERO_UUID):
            return None
        keys.add((info["cluster_uuid"], int(info["clique_id"])))
    return keys.pop() if len(keys) == 1 else None
