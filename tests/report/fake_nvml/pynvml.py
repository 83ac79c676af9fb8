"""A stand-in for NVML's Python module (`pynvml`) for `wirewise doctor` run as a process: no
GPU exists on the development and CI machines. With this folder first on PYTHONPATH the
probe sees one H200 NVL quad (tests/topology/test_probe.py's fake machine), healthy unless
WIREWISE_FAKE_NVML (JSON) degrades it:

    {"inactive": {"1": [0, 1]}}   GPU 1's NVLinks 0 and 1 down
    {"pcie": {"2": [4, 8]}}       GPU 2's PCIe link at gen 4 x8 (the maximum is gen 5 x16)
    {"pstate": {"2": 8}}          GPU 2 idle, in P8 (the others run in P0)
    {"busy": [0]}                 GPU 0 runs a compute process (the others none)
"""

from __future__ import annotations

import json
import os

from tests.topology.test_probe import FakeNVML, FakeNVMLError, nvl_quad

NVMLError = FakeNVMLError
NVML_NVLINK_MAX_LINKS = FakeNVML.NVML_NVLINK_MAX_LINKS
_CONFIG = json.loads(os.environ.get("WIREWISE_FAKE_NVML") or "{}")


class _Machine(FakeNVML):
    """The probe's fake machine with its PCIe links at their maximum unless degraded."""

    def _pcie(self, h: int) -> tuple[int, int]:
        return tuple(_CONFIG.get("pcie", {}).get(str(h), (5, 16)))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        return self._pcie(h)[0]

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        return self._pcie(h)[1]

    def nvmlDeviceGetPerformanceState(self, h):
        return _CONFIG.get("pstate", {}).get(str(h), 0)

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [{"pid": 1}] if h in _CONFIG.get("busy", []) else []


def _gpus():
    gpus = nvl_quad()
    for gpu, links in _CONFIG.get("inactive", {}).items():
        for link in links:
            gpus[int(gpu)]["links"][link] = None
    return gpus


_machine = _Machine(_gpus())


def __getattr__(name: str):
    """nvmlInit, nvmlDeviceGetCount, ...: the fake machine's methods."""
    return getattr(_machine, name)
