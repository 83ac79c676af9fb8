"""Topology: one node's GPU wiring, what it is (class, groups, fingerprint) and what it costs.

Inputs are fields (the label matrix, GPU names, per-GPU columns, details); the fabric,
groups, `switched` and the fingerprint are computed from them, so a topology read back
from JSON (`model_validate(topo.model_dump())`) is classified the same way again.
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, computed_field, model_validator

from wirewise.topology import hardware, labels
from wirewise.topology.classify import Classification, classify
from wirewise.topology.fingerprint import fingerprint as wiring_fingerprint


class Topology(BaseModel):
    model_config = ConfigDict(extra="ignore")

    links: list[list[str]]  # GPU x GPU, labels as nvidia-smi prints them, "X" on the diagonal
    gpu_names: list[str | None] = []
    cpu_affinity: list[str | None] = []  # per GPU, CPU ids as nvidia-smi prints them ("0-47,96-143")
    numa: list[int | None] = []
    pcie_ancestors: list[list[str | None]] | None = None  # NVML's PCIe path for every pair, live only
    switch_seen: bool | None = None  # NVML saw NVSwitches at the far end of NVLinks (live only)
    details: dict[str, Any] = {}  # UUIDs, PCI ids, NVLink per link, PCIe gen/width, versions, host
    raw_text: str | None = None  # the `nvidia-smi topo -m` text it was read from

    @model_validator(mode="after")
    def _check_shape(self) -> Topology:
        from wirewise.topology.parse import validate_matrix

        n = len(self.links)
        if n == 0:
            raise ValueError("a topology needs at least one GPU")
        validate_matrix(self.links, "topology")
        for name in ("gpu_names", "cpu_affinity", "numa"):
            values = getattr(self, name)
            if not values:
                setattr(self, name, [None] * n)
            elif len(values) != n:
                raise ValueError(f"{name} has {len(values)} entries for {n} GPUs")
        return self

    # -- what the wiring is ---------------------------------------------
    @cached_property
    def classification(self) -> Classification:
        return classify(self.links, self.gpu_names, self.switch_seen)

    @computed_field
    @property
    def gpus(self) -> int:
        return len(self.links)

    @computed_field
    @property
    def fabric(self) -> str:
        return self.classification.fabric

    @computed_field
    @property
    def switched(self) -> bool | None:
        return self.classification.switched

    @computed_field
    @property
    def groups(self) -> list[list[int]] | None:
        return self.classification.groups

    @computed_field
    @cached_property
    def fingerprint(self) -> str:
        return wiring_fingerprint(self.links, self.gpu_names)

    @property
    def gpu_model(self) -> str | None:
        """The model most GPUs have ('NVIDIA H200'), None when the names are unknown."""
        known = [name for name in self.gpu_names if name]
        return Counter(known).most_common(1)[0][0] if known else None

    @property
    def named(self) -> bool:
        """Every GPU's model is known: the NVLink and PCIe rates are the models', not nominal."""
        return all(self.gpu_names)

    def with_gpu_model(self, name: str) -> Topology:
        """The same wiring with `name` for every GPU whose model is not known (its fingerprint
        then matches what nodes probed with names stored). Where a name was filled in, the
        fingerprint it was known by stays in `details["fingerprint_unnamed"]`: what was
        measured under it (a saved matrix, an imported log) is this wiring's history too."""
        fields = self.model_dump(include=set(type(self).model_fields))
        named = [known or name for known in self.gpu_names]
        if named != list(self.gpu_names):
            fields["details"] = {**self.details, "fingerprint_unnamed": self.fingerprint}
        return type(self)(**{**fields, "gpu_names": named})

    @property
    def history_fingerprints(self) -> tuple[str, ...]:
        """The fingerprints this wiring's measurements are stored under: its own, and the one it
        had before its GPU model was filled in (with_gpu_model)."""
        before = self.details.get("fingerprint_unnamed")
        return (self.fingerprint, before) if before and before != self.fingerprint else (self.fingerprint,)

    @property
    def nvlink_generation(self) -> int | None:
        facts = hardware.family(self.gpu_model)
        return facts.nvlink_generation if facts else None

    def contract(self) -> dict[str, Any]:
        """The topology object of docs/contracts.md, keys in its order."""
        return {
            "gpus": self.gpus,
            "gpu_names": list(self.gpu_names),
            "fabric": self.fabric,
            "switched": self.switched,
            "groups": self.groups,
            "links": [list(row) for row in self.links],
            "fingerprint": self.fingerprint,
        }

    # -- pairs ----------------------------------------------------------
    def nvlinks(self, i: int, j: int) -> int:
        return labels.nvlink_count(self.links[i][j])

    def pcie_level(self, i: int, j: int) -> str | None:
        """PIX/PXB/PHB/NODE/SYS; for NVLink pairs only known from NVML on a live node."""
        if i == j:
            return None
        level = labels.pcie_level(self.links[i][j])
        if level is None and self.pcie_ancestors:
            level = self.pcie_ancestors[i][j]
        return level

    @property
    def pcie_levels(self) -> list[list[str | None]]:
        return [[self.pcie_level(i, j) for j in range(self.gpus)] for i in range(self.gpus)]

    def bandwidth_gbs(self, i: int, j: int) -> float | None:
        """Estimated GB/s per direction between two GPUs: NVLink count x the per-link rate of
        the GPU's NVLink generation, else the PCIe rate scaled by the path. None for i == j."""
        if i == j:
            return None
        links = self.nvlinks(i, j)
        if links:
            rate = min(hardware.nvlink_gbs_per_link(self.gpu_names[k]) for k in (i, j))
            return links * rate
        level = self.pcie_level(i, j) or "SYS"
        line_rate = min(self._pcie_gbs(k) for k in (i, j))
        return round(line_rate * hardware.PCIE_LEVEL_EFFICIENCY[level], 1)

    def _pcie_gbs(self, gpu: int) -> float:
        """The GPU's PCIe rate: NVML's max generation and width where probed, else its model's."""
        probed = self.details.get("gpus") or []
        pcie = (probed[gpu].get("pcie") if gpu < len(probed) else None) or {}
        return hardware.pcie_gbs(self.gpu_names[gpu], pcie.get("max_gen"), pcie.get("max_width"))
