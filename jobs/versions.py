"""Software versions recorded with every result (driver, CUDA, NCCL, torch, deepspeed...)."""

from __future__ import annotations

import platform

from wirewise.nvml import driver_version
from wirewise.versions import decode_nccl_version, dist_version, wirewise_version


def software_versions() -> dict[str, str | None]:
    """Call on a rank, where torch is already imported."""
    import torch

    versions: dict[str, str | None] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": None,
        "driver": None,
        "deepspeed": dist_version("deepspeed"),
        "transformers": dist_version("transformers"),
        "accelerate": dist_version("accelerate"),
        "wirewise": wirewise_version(),
    }
    if torch.cuda.is_available():
        nccl = torch.cuda.nccl.version()
        versions["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else decode_nccl_version(nccl)
        versions["driver"] = driver_version()
    return versions
