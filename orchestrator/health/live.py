"""The rules read on the node itself, through NVML (the topology probe, contract/nvml.py):

- nvlink-inactive: NVLinks reported inactive on a GPU whose other links are up (a GPU with
  none is not wired by NVLink);
- pcie-degraded: a link below its maximum width, or below its maximum generation while the GPU
  runs at full clocks (out of P0 a GPU may lower its link's generation to save power, so a
  generation read then is noted, not flagged: a health check must not call an idle node
  degraded);
- fabric-degraded: a GPU's multi-node NVLink fabric not completed, failed or unhealthy
  (wirewise.topology.fabric.fabric_problems, the one rule for it);
- wiring-changed: a wiring whose fingerprint differs from the one stored for the node.

No torch and no GPU work: `doctor --health-check` runs these from Slurm's HealthCheckProgram.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.health.findings import Finding, percent
from wirewise.orchestrator.health.rules import Rules


def live_findings(node: str, probe: Callable[[], Any], stored: tuple[str, str] | None, rules: Rules,
                  notes: list[str]) -> tuple[list[Finding], set[str]]:
    """(findings, the rules judged). `stored` is the (fingerprint, fabric) last stored for the node."""
    try:
        topo = probe()
    except UserError as exc:
        notes.append(f"{node}: live checks skipped: {exc}")
        return [], set()
    judged: set[str] = set()
    found: list[Finding] = []
    gpus = topo.details.get("gpus") or []
    if topo.details.get("source") == "file" or not any("pcie" in gpu for gpu in gpus):
        notes.append(f"{node}: NVML gave no per-GPU link state: NVLink and PCIe checks skipped")
    else:
        if rules.rules.nvlink_inactive.enabled:
            judged.add("nvlink-inactive")
            found += nvlink_findings(node, gpus)
        if rules.rules.pcie_degraded.enabled:
            judged.add("pcie-degraded")
            found += pcie_findings(node, gpus, notes)
        if rules.rules.fabric_degraded.enabled and any(gpu.get("fabric") for gpu in gpus):
            judged.add("fabric-degraded")
            found += fabric_findings(node, gpus)
    if rules.rules.wiring_changed.enabled:
        if stored is None:
            notes.append(f"{node}: no stored wiring to compare with (wirewise topo save stores it)")
        else:
            judged.add("wiring-changed")
            found += wiring_findings(node, topo, stored)
    return found, judged


def nvlink_findings(node: str, gpus: list[dict[str, Any]]) -> list[Finding]:
    found = []
    for index, gpu in enumerate(gpus):
        links = gpu.get("nvlinks") or []
        down = [link["link"] for link in links if not link["active"]]
        up = len(links) - len(down)
        if down and up:
            found.append(Finding(
                node, "nvlink-inactive",
                f"GPU {index} ({gpu.get('pci_bus_id') or 'bus id unknown'}): NVLink(s) {', '.join(map(str, down))} inactive, {up} active",
                f"`nvidia-smi nvlink --status -i {index}`; on NVSwitch systems check the fabric manager "
                "(`systemctl status nvidia-fabricmanager`); reseat the bridge or drain the node for repair",
                metric=f"gpu{index}.nvlink", delta=f"-{len(down)}", gpus=[index], key=f"nvlink-inactive|{index}",
                reference={"links": len(links), "inactive": down},
            ))
    return found


def pcie_findings(node: str, gpus: list[dict[str, Any]], notes: list[str]) -> list[Finding]:
    found = []
    for index, gpu in enumerate(gpus):
        pcie = gpu.get("pcie") or {}
        gen, max_gen, width, max_width = (pcie.get(k) for k in ("curr_gen", "max_gen", "curr_width", "max_width"))
        low_gen = gen is not None and max_gen is not None and gen < max_gen
        low_width = width is not None and max_width is not None and width < max_width
        pstate = gpu.get("pstate")
        if low_gen and not low_width and pstate not in (None, 0):
            notes.append(f"{node}: GPU {index} PCIe gen {gen} of {max_gen} in P{pstate} (power saving): "
                         "not judged; run doctor while a job runs to check the generation")
            continue
        if low_gen or low_width:
            metric, delta = (f"gpu{index}.pcie_width", percent(width / max_width - 1)) if low_width else (
                f"gpu{index}.pcie_gen", f"gen{gen}-of-{max_gen}")
            found.append(Finding(
                node, "pcie-degraded",
                f"GPU {index} ({gpu.get('pci_bus_id') or 'bus id unknown'}): PCIe gen {gen} x{width}, maximum gen {max_gen} x{max_width}",
                f"`nvidia-smi -q -d PCIE -i {index}` while a job runs; a narrow width means a badly seated card or "
                "riser: reseat it",
                metric=metric, delta=delta, gpus=[index], key=f"pcie-degraded|{index}",
                reference={"gen": gen, "max_gen": max_gen, "width": width, "max_width": max_width},
            ))
    return found


def fabric_findings(node: str, gpus: list[dict[str, Any]]) -> list[Finding]:
    from wirewise.topology.fabric import fabric_problems

    found = []
    for index, gpu in enumerate(gpus):
        info = gpu.get("fabric")
        problems = fabric_problems(info)
        if not problems:
            continue
        state = info.get("state") or "unknown"
        delta = state.replace(" ", "-") if state != "completed" else ("failed" if info.get("status") not in (0, None) else "degraded")
        found.append(Finding(
            node, "fabric-degraded",
            f"GPU {index} ({gpu.get('pci_bus_id') or 'bus id unknown'}): NVLink fabric {'; '.join(problems)} "
            f"(cluster {info.get('cluster_uuid')}, clique {info.get('clique_id')})",
            f"`nvidia-smi -q -i {index} -d FABRIC`; check the fabric manager and IMEX on the node and the NVLink "
            "switch trays (`nvidia-smi -q` Fabric > Health); a GPU out of its domain falls back to the network",
            metric=f"gpu{index}.fabric", delta=delta, gpus=[index], key=f"fabric-degraded|{index}",
            reference={"fabric": info},
        ))
    return found


def wiring_findings(node: str, topo: Any, stored: tuple[str, str]) -> list[Finding]:
    fingerprint, fabric = stored
    if fingerprint == topo.fingerprint:
        return []
    return [Finding(
        node, "wiring-changed",
        f"live wiring {topo.fabric} {topo.fingerprint[:12]} ({topo.gpus} GPUs), stored {fabric} {fingerprint[:12]}",
        "compare `nvidia-smi topo -m` with the stored wiring (wirewise topo list): a GPU or link may be missing; "
        "if the change is intended, store it with `wirewise topo save`",
        metric="wiring.fingerprint", delta="changed", key="wiring-changed",
        reference={"stored": fingerprint, "live": topo.fingerprint},
    )]
