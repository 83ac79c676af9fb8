"""The pair labels of `nvidia-smi topo -m`: X (self), NV<n> (n bonded NVLinks) and the PCIe paths.

PCIe paths from nearest to farthest (nvidia-smi's legend):
PIX at most one PCIe bridge, PXB several bridges, PHB through a PCIe host bridge (the CPU),
NODE between host bridges of one NUMA node, SYS across the socket interconnect (QPI/UPI).
Old drivers printed SOC for SYS.
"""

from __future__ import annotations

import re

SELF = "X"
PCIE_LEVELS = ("PIX", "PXB", "PHB", "NODE", "SYS")
_OLD_NAMES = {"SOC": "SYS"}
_LABEL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")


def is_label(token: str) -> bool:
    return bool(_LABEL.match(token))


def normalize(label: str) -> str:
    """The current spelling of a label (SOC -> SYS)."""
    return _OLD_NAMES.get(label, label)


def nvlink_count(label: str) -> int:
    """Bonded NVLinks behind a label; 0 for PCIe paths and self."""
    return int(label[2:]) if label.startswith("NV") else 0


def pcie_level(label: str) -> str | None:
    """The PCIe path of a label, None for NVLink and self (the matrix does not say)."""
    return label if label in PCIE_LEVELS else None


def nvlink_label(count: int) -> str:
    return f"NV{count}"
