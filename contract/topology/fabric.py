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
# nvml.h's NVML_GPU_FABRIC_HEALTH_MASK_*: two bits per field at these shifts, 1 = TRUE (the
# problem is there), 2 = FALSE, 0 = not supported; incorrect configuration is four bits at
# shift 8, 1 = none, 2..8 a reason. nvidia-smi -q prints the same fields under Fabric > Health.
HEALTH_BITS = ((0, "bandwidth degraded"), (2, "route recovery in progress"), (4, "route unhealthy"),
               (6, "access-timeout recovery in progress"))
INCORRECT_CONFIGURATION_SHIFT = 8


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


def domain_json(key: tuple[str, int] | None) -> dict[str, Any] | None:
    """A domain key as every --json output writes it: {"cluster_uuid", "clique_id"}, or None."""
    return {"cluster_uuid": key[0], "clique_id": key[1]} if key else None


def fabric_problems(info: dict[str, Any] | None) -> list[str]:
    """What is wrong with one GPU's fabric, in words; [] when nothing is (or it has no fabric:
    a PCIe card or an HGX board without one is not a fault). The one rule doctor, the health
    check, fleet status and topo survey use: a state not completed, a status not success, a
    health mask with a problem set (NVML) or a health field nvidia-smi printed as one (a saved
    file: `health`, nvidia-smi's words)."""
    if not info:
        return []
    if info.get("state") != "completed":
        return [f"fabric {info.get('state')}"]
    problems = []
    status = info.get("status")
    if status not in (0, None):
        problems.append(f"fabric status {status if isinstance(status, str) else f'NVML error {status}'}")
    mask = int(info.get("health_mask") or 0)
    problems += [what for shift, what in HEALTH_BITS if (mask >> shift) & 0x3 == 1]
    if (mask >> INCORRECT_CONFIGURATION_SHIFT) & 0xF >= 2:
        problems.append(f"incorrect configuration (NVML reason {(mask >> INCORRECT_CONFIGURATION_SHIFT) & 0xF})")
    problems += _printed_health_problems(info.get("health") or {})
    return problems


def _printed_health_problems(health: dict[str, str]) -> list[str]:
    """nvidia-smi's Health lines (keys lower case) that name a problem."""
    problems = []
    for key, value in health.items():
        value_l = value.lower()
        if key == "summary" and value_l not in ("healthy", "n/a", "not supported"):
            problems.append(f"fabric health {value}")
        elif key == "bandwidth" and value_l == "degraded":
            problems.append("bandwidth degraded")
        elif key == "incorrect configuration" and value_l not in ("none", "n/a", "not supported"):
            problems.append(f"incorrect configuration ({value})")
        elif key in ("route recovery in progress", "route unhealthy", "access timeout recovery") and value_l == "true":
            problems.append(key)
    return problems


def domain_summary(nodes: dict[str, list[dict[str, Any] | None]]) -> dict[str, Any]:
    """Nodes (name -> each GPU's fabric) as `topo survey` and `topo list` show them: each NVLink
    domain with its nodes, GPU count and state (degraded when a GPU in it has a problem); the
    nodes in no domain apart, with why; every node with a GPU whose fabric has a problem."""
    domains: dict[tuple[str, int], dict[str, Any]] = {}
    outside: dict[str, str] = {}
    degraded: dict[str, list[str]] = {}
    for node, infos in sorted(nodes.items()):
        problems = [f"GPU {k}: {'; '.join(fabric_problems(info))}" for k, info in enumerate(infos) if fabric_problems(info)]
        if problems:
            degraded[node] = problems
        key = domain_of(infos) if infos else None
        if key is None:
            outside[node] = why_no_domain(infos)
            continue
        entry = domains.setdefault(key, {"cluster_uuid": key[0], "clique_id": key[1], "nodes": [], "gpus": 0, "state": "completed"})
        entry["nodes"].append(node)
        entry["gpus"] += len(infos)
        if problems:
            entry["state"] = "degraded"
    return {"domains": sorted(domains.values(), key=lambda d: (-len(d["nodes"]), d["cluster_uuid"], d["clique_id"])),
            "outside": [{"node": n, "why": why} for n, why in outside.items()],
            "degraded": [{"node": n, "problems": p} for n, p in degraded.items()]}


def why_no_domain(infos: list[dict[str, Any] | None]) -> str:
    """Why a node's GPUs sit in no multi-node NVLink domain, in words."""
    if not infos or not any(infos):
        return "no NVLink fabric"
    problems = [problem for info in infos for problem in fabric_problems(info)[:1] if info and info.get("state") != "completed"]
    if problems:
        return problems[0]
    if any(info and info.get("status") not in (0, None) for info in infos):
        return "fabric failed"
    if any(info and info.get("cluster_uuid") in (None, ZERO_UUID) for info in infos):
        return "all-zero cluster UUID: a single-node fabric"
    return "its GPUs report different domains" if all(infos) else "some GPUs report no fabric"
