"""Helpers for the tests of `wirewise launch`, `wirewise.advice()` and the job history: a
workstation's environment, and a GPU node where none exists (the fake NVML of
tests/report/fake_nvml: one H200 NVL quad)."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

from tests.conftest import ROOT

FAKE_NVML = ROOT / "tests" / "report" / "fake_nvml"


def no_slurm(**extra: str) -> dict[str, str]:
    """A workstation's environment: no allocation, nothing pinned."""
    env = {key: "" for key in os.environ if key.startswith("SLURM_")}
    return {**env, "SLURM_JOB_ID": "", **extra}


def fake_gpu_node(**extra: str) -> dict[str, str]:
    """The environment of a process on the fake NVML's quad (the module first on its path)."""
    return no_slurm(PYTHONPATH=os.pathsep.join([str(FAKE_NVML), str(ROOT)]), **extra)


@pytest.fixture
def gpu_node(monkeypatch, tmp_path):
    """This process on the fake NVML's quad: its `pynvml` is the fake module."""
    spec = importlib.util.spec_from_file_location("pynvml", FAKE_NVML / "pynvml.py")
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("WIREWISE_RUNS", str(tmp_path / "runs"))
