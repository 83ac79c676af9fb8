"""Software versions recorded with every result (driver, CUDA, NCCL, torch, deepspeed...)."""

from __future__ import annotations

import platform
from importlib import metadata


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def software_versions() -> dict[str, str | None]:
    """Call on a rank, where torch is already imported."""
    import torch

    versions: dict[str, str | None] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": None,
        "driver": None,
        "deepspeed": _dist_version("deepspeed"),
        "transformers": _dist_version("transformers"),
        "accelerate": _dist_version("accelerate"),
        "wirewise": _dist_version("wirewise"),
    }
    if torch.cuda.is_available():
        nccl = torch.cuda.nccl.version()
        versions["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
        try:
            import pynvml

            pynvml.nvmlInit()
            versions["driver"] = pynvml.nvmlSystemGetDriverVersion()
            pynvml.nvmlShutdown()
        except Exception:
            pass
    return versions
