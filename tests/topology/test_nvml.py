"""wirewise.nvml, the one module that talks to NVML. NVML cannot exist here (no GPU, no driver
on the development and CI machines): the questions run against the probe tests' fake NVML
(tests/topology/test_probe.py), and the quirks are planted in it: bytes from older bindings,
functions older bindings lack, NVMLError for what a VM does not support, a failing init."""

from __future__ import annotations

import pytest

from tests.topology.test_probe import NOT_SUPPORTED, FakeNVML, FakeNVMLError, nvl_quad
from wirewise import nvml


class OldBindings(FakeNVML):
    """Bytes for strings, and no GetComputeRunningProcesses / GetMemoryInfo at all."""

    def nvmlDeviceGetUUID(self, h):
        return f"GPU-{h:04d}-old".encode()

    def nvmlSystemGetDriverVersion(self):
        return b"470.1"


class VirtualMachine(FakeNVML):
    """Queries the driver does not support here answer NVMLError; GPU 2 is busy."""

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return ["pid 1234"] if h == 2 else []

    def nvmlDeviceGetMemoryInfo(self, h):
        raise FakeNVMLError(NOT_SUPPORTED)


class Memory:
    total = 150_754_820_096  # an H200 NVL as NVML reports it


def test_questions_on_a_four_gpu_machine() -> None:
    """Each question is one NVML session, shut down before it answers: the fake (standing in
    for the NVML no GPU here has) counts inits and shutdowns after every question, so a
    question that left NVML open, or one shut down twice, fails here."""
    fake = VirtualMachine(nvl_quad())
    questions = [
        (nvml.gpu_count, 4),
        (nvml.gpu_uuids, {f"GPU-{i:04d}-fake": i for i in range(4)}),
        (nvml.busy_gpus, {2}),
        (nvml.driver_version, "570.86.15"),
        (nvml.first_gpu_memory, None),  # not supported here: None, not a traceback
    ]
    for asked, (question, answer) in enumerate(questions, 1):
        assert question(fake) == answer
        assert fake.sessions == (asked, asked), question.__name__


def test_old_bindings_bytes_and_missing_functions() -> None:
    fake = OldBindings(nvl_quad())
    assert nvml.gpu_uuids(fake)["GPU-0001-old"] == 1
    assert nvml.driver_version(fake) == "470.1"
    assert nvml.busy_gpus(fake) == set()  # no such function: nothing seen running
    fake.nvmlDeviceGetMemoryInfo = lambda h: Memory()
    assert nvml.first_gpu_memory(fake) == (Memory.total, "NVIDIA H200 NVL")
    assert fake.sessions == (4, 4)  # four questions, four sessions


def test_no_driver_is_one_line_or_nothing_to_ask() -> None:
    fake = FakeNVML(nvl_quad(), init_error=9)  # NVML_ERROR_DRIVER_NOT_LOADED
    with pytest.raises(nvml.NvmlUnavailable) as caught, nvml.session(fake):
        pass
    assert str(caught.value) == "no NVIDIA GPU or driver on this machine (NVML: NVML error 9)"
    assert (nvml.gpu_count(fake), nvml.gpu_uuids(fake), nvml.busy_gpus(fake), nvml.driver_version(fake)) == (0, {}, None, None)
    assert fake.sessions == (0, 0)  # never started, so never shut down


def test_a_hidden_gpu_is_left_out_not_raised() -> None:
    """In a job's device cgroup the other GPUs cannot be opened."""
    gpus = nvl_quad()
    gpus[1]["hidden"] = True
    assert nvml.gpu_uuids(FakeNVML(gpus)) == {"GPU-0000-fake": 0, "GPU-0002-fake": 2, "GPU-0003-fake": 3}


def test_a_query_that_fails_still_shuts_down() -> None:
    fake = FakeNVML(nvl_quad())
    with pytest.raises(RuntimeError), nvml.session(fake):
        raise RuntimeError("a caller's bug")
    assert fake.sessions == (1, 1)
