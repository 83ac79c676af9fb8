"""The live NVML probe.

A GPU cannot exist on the development and CI machines, so the probe's logic (building the
pair matrix from NVLink remote ends, NVSwitch detection, the VM fallback to
`nvidia-smi topo -m`, error handling) runs here against a fake NVML module object injected
into probe_node. The real NVML path runs on the GPU machine through tests/gpu/topology_check.sh.
On this machine the real command is also run as a process: no GPU, one line, exit 2.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from wirewise.errors import UserError
from wirewise.topology.probe import probe_node
from wirewise.versions import decode_nccl_version as _decode_nccl_version
from tests.conftest import wirewise
from tests.topology.common import fixture_text

UNINITIALIZED, NOT_SUPPORTED, INVALID_ARGUMENT, NO_PERMISSION, DRIVER_NOT_LOADED = 1, 3, 2, 4, 9
GPU, SWITCH = 0, 2


class FakeNVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


class FakeNVML:
    """The pynvml functions the probe calls, over a described machine. Handles are GPU indices.
    It counts the nvmlInit calls that succeeded and the nvmlShutdown calls, and, as NVML does,
    refuses a shutdown with none open (NVML_ERROR_UNINITIALIZED): each use must pair them."""

    NVMLError = FakeNVMLError
    NVML_NVLINK_MAX_LINKS = 18

    def __init__(self, gpus, ancestor=lambda i, j: 50, nvlink_supported=True, init_error=None) -> None:
        self.gpus = gpus  # dicts: name, bus, links: [(remote_type, remote_bus) | None], cpus
        self.ancestor = ancestor
        self.nvlink_supported = nvlink_supported
        self.init_error = init_error
        self.inits = self.shutdowns = 0

    @property
    def sessions(self) -> tuple[int, int]:
        """(inits, shutdowns): equal once every use has shut NVML down."""
        return self.inits, self.shutdowns

    def nvmlInit(self):
        if self.init_error is not None:
            raise FakeNVMLError(self.init_error)
        self.inits += 1

    def nvmlShutdown(self):
        if self.shutdowns >= self.inits:
            raise FakeNVMLError(UNINITIALIZED)
        self.shutdowns += 1

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        if self.gpus[index].get("hidden"):
            raise FakeNVMLError(NO_PERMISSION)
        return index

    def nvmlDeviceGetName(self, h):
        return self.gpus[h]["name"]

    def nvmlDeviceGetUUID(self, h):
        return f"GPU-{h:04d}-fake"

    def nvmlDeviceGetPciInfo(self, h):
        return SimpleNamespace(busId=self.gpus[h]["bus"].encode())

    def nvmlDeviceGetMinorNumber(self, h):
        return self.gpus[h].get("minor", h)

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        return 1  # idle GPUs drop their link speed

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h):
        return 5

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        return 16

    def nvmlDeviceGetMaxPcieLinkWidth(self, h):
        return 16

    def nvmlDeviceGetPerformanceState(self, h):
        return 8  # idle

    def nvmlDeviceGetCpuAffinity(self, h, words):
        mask = sum(1 << cpu for cpu in self.gpus[h]["cpus"])
        return [(mask >> (64 * w)) & (2**64 - 1) for w in range(max(words, 4))]

    def nvmlDeviceGetNumaNodeId(self, h):
        return self.gpus[h].get("numa", 0)

    def nvmlDeviceGetNvLinkState(self, h, link):
        if not self.nvlink_supported:
            raise FakeNVMLError(NOT_SUPPORTED)
        links = self.gpus[h]["links"]
        if link >= len(links):
            raise FakeNVMLError(INVALID_ARGUMENT)
        return 1 if links[link] else 0

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h, link):
        return SimpleNamespace(busId=self.gpus[h]["links"][link][1].encode())

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h, link):
        return self.gpus[h]["links"][link][0]

    def nvmlDeviceGetTopologyCommonAncestor(self, a, b):
        return self.ancestor(a, b)

    def nvmlSystemGetDriverVersion(self):
        return "570.86.15"

    def nvmlSystemGetCudaDriverVersion_v2(self):
        return 12080


def bus(k: int) -> str:
    return f"00000000:{0x18 + 0x10 * k:02X}:00.0"


def nvswitch_box(model="NVIDIA H100 80GB HBM3"):
    """8 GPUs, 18 links each into NVSwitches (remote ends are switch PCI ids)."""
    return [
        {"name": model, "bus": bus(k), "cpus": range(0, 56) if k < 4 else range(56, 112),
         "links": [(SWITCH, f"00000000:{0xA0 + link % 4:02X}:00.0") for link in range(18)]}
        for k in range(8)
    ]


def nvl_quad():
    """4 H200 NVL GPUs, 6 direct links to each peer; remote bus ids in the short lower-case form."""
    gpus = []
    for k in range(4):
        peers = [p for p in range(4) if p != k]
        links = [(GPU, bus(p).lower()[4:]) for p in peers for _ in range(6)]
        gpus.append({"name": "NVIDIA H200 NVL", "bus": bus(k), "cpus": [*range(0, 48), *range(96, 144)], "links": links})
    return gpus


def never_run_smi():
    raise AssertionError("nvidia-smi must not run when NVML reports NVLink")


def test_nvswitch_box_gives_nv18_everywhere_and_switched() -> None:
    nvml = FakeNVML(nvswitch_box())
    topo = probe_node(nvml, never_run_smi)
    assert topo.links[0] == ["X"] + ["NV18"] * 7
    assert (topo.fabric, topo.switched, topo.groups) == ("nvlink-all-to-all", True, [list(range(8))])
    assert topo.switch_seen is True
    assert topo.cpu_affinity[0] == "0-55" and topo.cpu_affinity[7] == "56-111"
    gpu0 = topo.details["gpus"][0]
    assert gpu0["uuid"] == "GPU-0000-fake" and gpu0["pci_bus_id"] == bus(0)
    assert gpu0["pcie"] == {"curr_gen": 1, "max_gen": 5, "curr_width": 16, "max_width": 16}
    assert gpu0["pstate"] == 8
    assert len(gpu0["nvlinks"]) == 18 and all(link["remote"] == "nvswitch" for link in gpu0["nvlinks"])
    assert topo.details["versions"]["driver"] == "570.86.15" and topo.details["versions"]["cuda"] == "12.8"
    assert topo.details["source"] == "nvml" and topo.details["notes"] == []
    assert topo.bandwidth_gbs(0, 5) == 450.0
    assert nvml.sessions == (1, 1)  # one probe, one NVML session, shut down


def test_direct_links_counted_per_peer_with_pcie_path_kept() -> None:
    ancestor = lambda a, b: 20 if {a, b} == {0, 1} else 30  # PXB for 0-1, PHB otherwise
    topo = probe_node(FakeNVML(nvl_quad(), ancestor=ancestor), never_run_smi)
    assert topo.links[2] == ["NV6", "NV6", "X", "NV6"]
    assert topo.fabric == "nvlink-all-to-all" and topo.switched is False  # NVML saw only GPUs at the far ends
    assert topo.pcie_level(0, 1) == "PXB" and topo.pcie_level(2, 3) == "PHB"  # hidden by NV6 in the matrix


def test_inactive_links_and_missing_pcie_paths() -> None:
    gpus = nvl_quad()
    gpus[0]["links"] = [None] * 6 + gpus[0]["links"][6:]  # GPU0's 6 links to GPU1 are down on its side
    gpus[1]["links"] = [None] * 6 + gpus[1]["links"][6:]
    topo = probe_node(FakeNVML(gpus, ancestor=lambda a, b: 40), never_run_smi)
    assert topo.links[0][1] == "NODE" and topo.links[0][2] == "NV6"
    assert topo.fabric == "nvlink-partial"
    assert [link["active"] for link in topo.details["gpus"][0]["nvlinks"]][:7] == [False] * 6 + [True]


def test_vm_without_nvlink_reports_so_and_uses_nvidia_smi() -> None:
    gpu = {"name": "NVIDIA H200", "bus": bus(0), "cpus": range(16), "links": []}
    text = fixture_text("device-h200-1gpu.txt")
    topo = probe_node(FakeNVML([gpu], nvlink_supported=False), lambda: text)
    assert topo.fabric == "single" and topo.gpu_names == ["NVIDIA H200"]
    assert topo.raw_text == text and topo.details["source"] == "nvml+nvidia-smi"
    assert "NVLink as not supported" in topo.details["notes"][0]
    assert topo.details["gpus"][0]["nvlink_supported"] is False


def test_vm_matrix_from_nvidia_smi_carries_the_nvlinks_nvml_hides() -> None:
    gpus = [{"name": "NVIDIA H200", "bus": bus(k), "cpus": range(16), "links": []} for k in range(8)]
    text = fixture_text("synthetic-h200-nvl-8gpu-two-quads.txt")
    topo = probe_node(FakeNVML(gpus, nvlink_supported=False), lambda: text)
    assert topo.fabric == "nvlink-groups" and topo.groups == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert topo.switched is False and topo.switch_seen is None


def test_vm_without_nvidia_smi_falls_back_to_pcie_paths_and_says_so() -> None:
    gpus = [{"name": "NVIDIA H200", "bus": bus(k), "cpus": range(16), "links": []} for k in range(2)]
    topo = probe_node(FakeNVML(gpus, nvlink_supported=False, ancestor=lambda a, b: 50), lambda: None)
    assert topo.links == [["X", "SYS"], ["SYS", "X"]]
    assert "did not run" in topo.details["notes"][0] and "NVLinks may be missing" in topo.details["notes"][0]


def test_nvidia_smi_with_another_gpu_count_is_not_used() -> None:
    gpus = [{"name": "NVIDIA H200", "bus": bus(k), "cpus": range(16), "links": []} for k in range(2)]
    topo = probe_node(FakeNVML(gpus, nvlink_supported=False), lambda: fixture_text("device-h200-1gpu.txt"))
    assert "shows 1 GPUs where NVML sees 2" in topo.details["notes"][0] and topo.raw_text is None


def test_no_driver_and_no_gpu_are_one_line_errors() -> None:
    with pytest.raises(UserError, match=r"no NVIDIA GPU or driver on this machine \(NVML: NVML error 9\)"):
        probe_node(FakeNVML([], init_error=DRIVER_NOT_LOADED), never_run_smi)
    nvml = FakeNVML([])
    with pytest.raises(UserError, match="NVML sees no GPU"):
        probe_node(nvml, never_run_smi)
    assert nvml.sessions == (1, 1)  # shut down on the way out of the error too
    gpus = nvl_quad()
    gpus[3]["hidden"] = True  # e.g. outside a job's device cgroup
    with pytest.raises(UserError, match=r"NVML cannot open GPU 3 \(NVML error 4\)"):
        probe_node(FakeNVML(gpus), never_run_smi)


def test_gres_uses_device_minor_numbers() -> None:
    from wirewise.orchestrator.slurm.gres import gres_conf

    gpus = nvl_quad()
    for k, minor in enumerate([3, 2, 1, 0]):
        gpus[k]["minor"] = minor
    lines = [line for line in gres_conf(probe_node(FakeNVML(gpus), never_run_smi), "n1").splitlines() if not line.startswith("#")]
    assert "Type=h200_nvl File=/dev/nvidia3 Links=-1,6,6,6" in lines[0]


def test_nccl_version_codes() -> None:
    assert _decode_nccl_version(22805) == "2.28.5"
    assert _decode_nccl_version(2708) == "2.7.8"


def test_show_on_a_machine_without_gpu_is_one_line_and_exit_2() -> None:
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver: the no-GPU path cannot be seen here")
    except pynvml.NVMLError:
        pass
    proc = wirewise("topo", "show", "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no NVIDIA GPU or driver" in lines[0] and "--from-file" in lines[0]
