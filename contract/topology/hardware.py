"""What a GPU model tells about its links: NVLink generation, link count, per-link rate, PCIe.

Figures per direction, from NVIDIA's datasheets (docs/facts.md):
NVLink 2 (V100) 6 links, NVLink 3 (A100) 12, NVLink 4 (H100/H200/GH200) 18, all at
25 GB/s per link; NVLink 5 (B200/GB200) 18 links at 50 GB/s. A model not in the table gets
nominal rates, and `rates_text` says so wherever a prediction rests on them.
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


# Checked in order: GB200 before B200, GH200 before H200. Link counts by datasheet (the export
# parts H800 and A800 keep 8 links); cards without NVLink to other GPUs only say their PCIe.
_FAMILIES: list[tuple[re.Pattern[str], GpuFamily]] = [
    (re.compile(r"\bGB\d00\b|\bB[123]00\b"), GpuFamily(5, 18, 50.0, 5)),
    (re.compile(r"\bH800\b"), GpuFamily(4, 8, 25.0, 5)),
    (re.compile(r"\bGH200\b|\bH100\b|\bH200\b|\bH20\b"), GpuFamily(4, 18, 25.0, 5)),
    (re.compile(r"\bA800\b"), GpuFamily(3, 8, 25.0, 4)),
    (re.compile(r"\bA100\b"), GpuFamily(3, 12, 25.0, 4)),
    (re.compile(r"\bV100\b"), GpuFamily(2, 6, 25.0, 3)),
    # GA102 boards bridge pairs with 4 NVLink 3 links, 112.5 GB/s both directions in all.
    (re.compile(r"\bRTX 3090\b|\bRTX A6000\b|\bA40\b"), GpuFamily(3, 4, 14.0625, 4)),
    (re.compile(r"\bRTX 50\d0\b|\bRTX PRO \d{4} BLACKWELL\b"), GpuFamily(None, None, None, 5)),
    (re.compile(r"\bRTX [34]0\d0\b|\bRTX A\d{4}\b|\bRTX \d{4} ADA\b|\bL4\b|\bL40S?\b|\bA(2|10|16|30|40)\b"),
     GpuFamily(None, None, None, 4)),
    (re.compile(r"\bT4\b|\bP100\b"), GpuFamily(None, None, None, 3)),
]
_NO_NVLINK_FACTS = GpuFamily(None, None, None, 4)

# A GPU of an unknown model: NVLink 2 to 4 all run 25 GB/s per link, and no known GPU has
# more than 18 links, so more than 18 links to peers proves a switch whatever the model.
DEFAULT_GBS_PER_LINK = 25.0
MOST_LINKS_ANY_GPU = 18

# PCIe x16 per direction by generation (Gen4 ~32, Gen5 ~64 GB/s; halved per step down).
_PCIE_GBS_PER_LANE = {1: 0.25, 2: 0.5, 3: 1.0, 4: 2.0, 5: 4.0, 6: 8.0}

# Share of the PCIe line rate GPU-to-GPU traffic reaches by path, before the ring's payload
# efficiency. Under PCIe switches (PIX, PXB) NCCL copies peer to peer at near line rate; farther
# pairs (PHB, NODE, SYS) it stages through host memory (its default P2P level is PXB, in
# src/graph/paths.cc), which reached 27.8 GB/s busbw on Gen5 x16 between two H200s with
# NCCL_P2P_DISABLE=1 and 28 across the seed article's NVL quads: 0.55 x 64 x 0.8 = 28.2.
PCIE_LEVEL_EFFICIENCY = {"PIX": 1.0, "PXB": 0.9, "PHB": 0.55, "NODE": 0.55, "SYS": 0.55}


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


def rates_text(name: str | None) -> str:
    """What a prediction takes from the GPU's model, said in a reason line."""
    facts = family(name)
    if facts is None:
        return (f"{normalize_model(name)} is not in wirewise's GPU table: NVLink at {DEFAULT_GBS_PER_LINK:g} GB/s "
                f"per link and PCIe Gen{_NO_NVLINK_FACTS.pcie_generation} x16 assumed")
    nvlink = (f"NVLink {facts.nvlink_generation} ({facts.nvlink_links} links x {facts.nvlink_gbs_per_link:g} GB/s), "
              if facts.nvlink_generation else "")
    return f"{nvlink}PCIe Gen{facts.pcie_generation} x16"


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


def datasheet_peak(name: str | None) -> tuple[float | None, str]:
    """(dense bf16 TFLOP/s of one GPU by datasheet, where the figure comes from); (None, why)
    where the datasheet table does not know the GPU (then no MFU is recorded: a measured peak,
    WIREWISE_PEAK_TFLOPS, gives one beside it)."""
    if not name:
        return None, "no GPU: MFU is not computed on CPU"
    known = datasheet_bf16_tflops(name)
    if known is None:
        return None, f"no datasheet peak known for {name!r}"
    fragment, tflops = known
    return tflops, f"datasheet dense bf16 for {fragment}: {tflops:g} TFLOP/s"
