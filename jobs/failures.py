"""Turn an exception on a rank into a status and the memory figures at that moment."""

from __future__ import annotations

import resource
import traceback
from typing import Any

ERROR_EXCERPT_CHARS = 2000


def is_out_of_memory(exc: BaseException) -> bool:
    """CUDA OOM (torch raises its own type; NCCL/DeepSpeed wrap it in RuntimeError), host
    MemoryError, or torch's CPU allocator failing (a RuntimeError: "DefaultCPUAllocator:
    can't allocate memory ... Error code 12 (Cannot allocate memory)")."""
    if isinstance(exc, MemoryError):
        return True
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc).lower()
    if "can't allocate memory" in text and "cpuallocator" in text:
        return True
    return "out of memory" in text and ("cuda" in text or "cudamalloc" in text or "hip" in text)


def memory_now(device: Any = None) -> dict[str, int]:
    """Peak host RSS always; allocator figures too when the rank runs on a GPU."""
    figures = {"host_peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    if device is not None and getattr(device, "type", None) == "cuda":
        import torch

        figures.update(
            cuda_allocated_bytes=torch.cuda.memory_allocated(device),
            cuda_peak_allocated_bytes=torch.cuda.max_memory_allocated(device),
            cuda_reserved_bytes=torch.cuda.memory_reserved(device),
            cuda_peak_reserved_bytes=torch.cuda.max_memory_reserved(device),
        )
        free, total = torch.cuda.mem_get_info(device)
        figures.update(cuda_free_bytes=free, cuda_total_bytes=total)
    return figures


def describe_failure(exc: BaseException, device: Any = None) -> dict[str, Any]:
    """The rank file's view of a failure: status, a short error excerpt, memory at the time."""
    status = "oom" if is_out_of_memory(exc) else "failed"
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if status == "failed":
        tail = "".join(traceback.format_tb(exc.__traceback__)[-3:])
        text = f"{text}\n{tail}"
    try:
        memory = memory_now(device)
    except Exception:  # the device itself may be what failed
        memory = memory_now(None)
    return {"status": status, "error": text[-ERROR_EXCERPT_CHARS:], "memory": memory}
