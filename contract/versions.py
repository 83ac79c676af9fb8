"""Software versions, read the same way on both sides: installed distributions, wirewise
itself (also from a source checkout), and the NCCL library without torch."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.util
from importlib import metadata
from pathlib import Path

import wirewise


@functools.cache
def code_hash() -> str:
    """12 hex digits of sha256 over wirewise's own Python files (every part of the package, by
    path relative to its part), so two results tell whether the same code measured them."""
    digest = hashlib.sha256()
    for name in ("wirewise", "wirewise.orchestrator", "wirewise.jobs"):
        roots = importlib.util.find_spec(name).submodule_search_locations or []
        for root in map(Path, roots):
            for path in sorted(root.rglob("*.py")):
                if name == "wirewise" and path.relative_to(root).parts[0] in ("orchestrator", "jobs"):
                    continue  # an installed tree nests the parts under wirewise/: hash each once
                digest.update(f"{name}/{path.relative_to(root)}\n".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def wirewise_version() -> str:
    """This wirewise's version, whether it is installed or run from a source checkout."""
    return wirewise.__version__


def dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def nccl_version() -> str | None:
    """The NCCL library's own version (ncclGetVersion through ctypes), None if none loads."""
    for candidate in _nccl_libraries():
        try:
            lib = ctypes.CDLL(candidate)
            code = ctypes.c_int()
            if lib.ncclGetVersion(ctypes.byref(code)) != 0:
                continue
        except (OSError, AttributeError):
            continue
        return decode_nccl_version(code.value)
    return None


def decode_nccl_version(code: int) -> str:
    """NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, major*1000 + minor*100 + patch before."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def _nccl_libraries() -> list[str]:
    """The pip wheel's library (nvidia/nccl/lib, nvidia/cu13/lib...) first, then the system's."""
    found: list[str] = []
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    for root in (spec.submodule_search_locations or []) if spec else []:
        found.extend(str(p) for p in sorted(Path(root).glob("*/lib/libnccl.so*")))
    found.append("libnccl.so.2")
    return found
