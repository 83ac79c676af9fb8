"""What a GPU model tells about its links: NVLink generation, link count, per-link rate, PCIe.

Figures per direction, from NVIDIA's datasheets (docs/facts.md):
NVLink 2 (V100) 6 links, NVLink 3 (A100) 12, NVLink 4 (H100/H200/GH200) 18, all at
25 GB/s per link; NVLink 5 (B200/GB200) 18 links at 50 GB/s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

UNKNOWN_MODEL = "unknown"


@dataclass(frozen=True)
class GpuFamily:
    nvlink_generation: int | None
    nvlink_links: int | None  # links one GPU has in all
    nvlink_gbs_per_link: float | None  # per direction
    pcie_generation: int


# Checked in order: GB200 before B200, GH200 before H200.
_FAMILIES: list[tuple[re.Pattern[str], GpuFamily]] = [
    (re.compile(r"\bGB\d00\b|\bB[123]00\b"), GpuFamily(5, 18, 50.0, 5)),
    (re.compile(r"\bGH200\b|\bH100\b|\bH200\b"), GpuFamily(4, 18, 25.0, 5)),
    (re.compile(r"\bA100\b"), GpuFamily(3, 12, 25.0, 4)),
    (re.compile(r"\bV100\b"), GpuFamily(2, 6, 25.0, 3)),
]
_NO_NVLINK_FACTS = GpuFamily(None, None, None, 4)

# A GPU of an unknown model: NVLink 2 to 4 all run 25 GB/s per link, and no known GPU has
# more than 18 links, so more than 18 links to peers proves a switch whatever the model.
DEFAULT_GBS_PER_LINK = 25.0
MOST_LINKS_ANY_GPU = 18

# PCIe x16 per direction by generation (Gen4 ~32, Gen5 ~64 GB/s; halved per step down).
_PCIE_GBS_PER_LANE = {1: 0.25, 2: 0.5, 3: 1.0, 4: 2.0, 5: 4.0, 6: 8.0}

# Share of the PCIe line rate GPU-to-GPU traffic reaches by path: peer-to-peer under one
# switch runs near line rate; through the host bridge, between host bridges and across
# the CPU socket link it loses more. Rough figures for ranking placements, not promises.
PCIE_LEVEL_EFFICIENCY = {"PIX": 1.0, "PXB": 0.9, "PHB": 0.75, "NODE": 0.6, "SYS": 0.5}


def normalize_model(name: str | None) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3'; the same card always reads the same."""
    if not name or not name.strip():
        return UNKNOWN_MODEL
    text = " ".join(name.split())
    text = re.sub(r"^(NVIDIA\s+)?(Tesla\s+)?", "", text, flags=re.IGNORECASE)
    return text.upper() or UNKNOWN_MODEL


@lru_cache(maxsize=256)  # asked once per GPU pair when a wiring is scored: 5184 times on 72 GPUs
def family(name: str | None) -> GpuFamily | None:
    """Known facts for a GPU name, or None when the model is not in the table."""
    model = normalize_model(name)
    for pattern, facts in _FAMILIES:
        if pattern.search(model):
            return facts
    return None


def nvlink_budget(name: str | None) -> int:
    """How many NVLinks a GPU of this model has; unknown models get the most any GPU has."""
    facts = family(name)
    return facts.nvlink_links if facts and facts.nvlink_links else MOST_LINKS_ANY_GPU


def nvlink_gbs_per_link(name: str | None) -> float:
    facts = family(name)
    return facts.nvlink_gbs_per_link if facts and facts.nvlink_gbs_per_link else DEFAULT_GBS_PER_LINK


def pcie_gbs(name: str | None, generation: int | None = None, width: int | None = None) -> float:
    """Per-direction PCIe rate of one GPU: measured generation/width where known, else the model's x16."""
    gen = generation or (family(name) or _NO_NVLINK_FACTS).pcie_generation
    return _PCIE_GBS_PER_LANE.get(gen, _PCIE_GBS_PER_LANE[4]) * (width or 16)


def slurm_type(name: str | None) -> str | None:
    """A gres Type= word: 'NVIDIA H100 80GB HBM3' -> 'h100_80gb_hbm3'; None when unknown."""
    model = normalize_model(name)
    if model == UNKNOWN_MODEL:
        return None
    return re.sub(r"[^a-z0-9_.-]+", "_", model.lower()).strip("_")


# Dense bf16 TFLOP/s by datasheet; the first model name found, as whole words, in the device name
# (normalised as wirewise.topology.hardware does) wins, so an RTX A1000 is not taken for an A100.
DATASHEET_BF16_TFLOPS = (
    ("GH200", 989.0),
    ("H200 NVL", 835.0),
    ("H100 NVL", 835.0),
    ("H100 PCIe", 756.0),
    ("H200", 989.0),  # SXM
    ("H100", 989.0),  # SXM (HBM3)
    ("H800", 989.0),
    ("GB200", 2500.0),
    ("B200", 2250.0),
    ("A100", 312.0),
    ("A800", 312.0),
    ("L40S", 362.0),
)


def datasheet_bf16_tflops(name: str | None) -> tuple[str, float] | None:
    """(the model fragment matched, dense bf16 TFLOP/s per GPU by datasheet), None when unknown."""
    if not name:
        return None
    model = normalize_model(name)
    for fragment, tflops in DATASHEET_BF16_TFLOPS:
        if re.search(rf"\b{re.escape(fragment.upper())}\b", model):
            return fragment, tflops
    return None
