"""NVML, the one way in (the `nvidia-ml-py` package, module `pynvml`; the `pynvml` package on
PyPI is a deprecated shim, docs/facts.md). The topology probe, the job supervisor's versions,
free GPUs, GPU memory, GPU counts and UUIDs all ask the driver through here, and NVML's quirks
are handled once:

- the bindings or the driver may be missing (a login node, a CPU machine): `session()` raises
  NvmlUnavailable, one line (or yields None when not required); the short questions below answer None, {} or 0 instead;
- old bindings lack newer functions, and a VM or an old driver answers NVMLError for what it
  does not support (NVLink in the H200 test VM): `query()` gives None for both;
- older bindings return bytes where newer ones return str: `text()`;
- every nvmlInit is paired with nvmlShutdown, even when a query fails.

Torch-free and imported lazily (pynvml only inside the functions): the control plane and the
compute side both use it. Tests cannot have a GPU here: they pass a fake as `lib`, or put
tests/report/fake_nvml/ first on PYTHONPATH for a command run as a process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from wirewise.errors import UserError


class NvmlUnavailable(UserError):
    """No NVML bindings, or no driver or GPU behind them; str(exc) says which."""


def load(lib: Any = None) -> Any:
    """The bindings module (or `lib`, a stand-in with the same functions)."""
    if lib is not None:
        return lib
    try:
        import pynvml
    except ImportError:
        raise NvmlUnavailable("the NVML bindings are missing: pip install nvidia-ml-py") from None
    return pynvml


def start(lib: Any = None) -> Any:
    """The bindings, initialised: the caller shuts them down (session() does both)."""
    nvml = load(lib)
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        raise NvmlUnavailable(f"no NVIDIA GPU or driver on this machine (NVML: {exc})") from None
    return nvml


@contextmanager
def session(lib: Any = None, required: bool = True) -> Iterator[Any]:
    """NVML initialised for the block, shut down after it; yields the module. Not `required`:
    yields None where NVML is unavailable (nothing to ask, not an error), whatever the bindings
    raise while starting (a broken driver install raises more than NVMLError)."""
    try:
        nvml = start(lib)
    except Exception:
        if required:
            raise
        nvml = None
    try:
        yield nvml
    finally:
        if nvml is not None:
            query(nvml, "nvmlShutdown")


def query(nvml: Any, function: str, *args: Any) -> Any:
    """nvml.<function>(*args), or None where these bindings lack it or the driver does not support it here."""
    fn = getattr(nvml, function, None)
    if fn is None:
        return None
    try:
        return fn(*args)
    except nvml.NVMLError:
        return None


def text(value: Any) -> str | None:
    """A string NVML returned, as str (older bindings return bytes)."""
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def gpu_count(lib: Any = None) -> int:
    """GPUs on this machine; 0 without NVML."""
    with session(lib, required=False) as nvml:
        return (query(nvml, "nvmlDeviceGetCount") or 0) if nvml is not None else 0


def gpu_uuids(lib: Any = None) -> dict[str, int]:
    """The UUID of every GPU this process may open, and of every MIG instance on it, with the
    GPU's nvidia-smi index; {} without NVML."""
    with session(lib, required=False) as nvml:
        if nvml is None:
            return {}
        found = {}
        for index, handle in _handles(nvml):
            for device in [handle, *_mig_devices(nvml, handle)]:
                uuid = text(query(nvml, "nvmlDeviceGetUUID", device))
                if uuid:
                    found[uuid] = index
        return found


def _mig_devices(nvml: Any, handle: Any) -> list[Any]:
    """The MIG instances of a GPU (none where MIG is off or these bindings predate it)."""
    slots = query(nvml, "nvmlDeviceGetMaxMigDeviceCount", handle) or 0
    found = (query(nvml, "nvmlDeviceGetMigDeviceHandleByIndex", handle, slot) for slot in range(slots))
    return [device for device in found if device is not None]


def busy_gpus(lib: Any = None) -> set[int] | None:
    """GPUs running a compute process now; None without NVML."""
    with session(lib, required=False) as nvml:
        if nvml is None:
            return None
        return {index for index, handle in _handles(nvml) if query(nvml, "nvmlDeviceGetComputeRunningProcesses", handle)}


def driver_version(lib: Any = None) -> str | None:
    with session(lib, required=False) as nvml:
        return text(query(nvml, "nvmlSystemGetDriverVersion")) if nvml is not None else None


def first_gpu_memory(lib: Any = None) -> tuple[int, str | None] | None:
    """(bytes of memory, name) of GPU 0; None without NVML or GPU."""
    with session(lib, required=False) as nvml:
        handles = _handles(nvml) if nvml is not None else []
        if not handles:
            return None
        handle = handles[0][1]
        memory = query(nvml, "nvmlDeviceGetMemoryInfo", handle)
        if memory is None:
            return None
        return int(memory.total), text(query(nvml, "nvmlDeviceGetName", handle))


def _handles(nvml: Any) -> list[tuple[int, Any]]:
    """(index, handle) of every GPU this process may open (a job's device cgroup hides others)."""
    found = []
    for index in range(query(nvml, "nvmlDeviceGetCount") or 0):
        handle = query(nvml, "nvmlDeviceGetHandleByIndex", index)
        if handle is not None:
            found.append((index, handle))
    return found
