"""A task's result records, built by node 0's supervisor from what every node's ranks wrote.

One record per measured row when the task succeeded; one record saying how it ended (with
what was asked and memory at the time) when it did not. Each says its backend and the
environment the ranks ran with.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from wirewise.record import RECORDED_ENV_PREFIXES, ResultRecord
from wirewise.task import TaskSpec
from wirewise.versions import code_hash


def gpu_pinning(spec: TaskSpec) -> dict[str, str]:
    """The GPUs every rank sees, numbered as nvidia-smi numbers them: CUDA's default order
    (fastest first) differs from nvidia-smi's (PCI bus) on machines with mixed GPU models."""
    if not spec.gpus:
        return {"CUDA_VISIBLE_DEVICES": ""}
    visible = spec.device_ids or [str(gpu) for gpu in spec.gpus]
    return {"CUDA_VISIBLE_DEVICES": ",".join(visible), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


def recorded_env(spec: TaskSpec) -> dict[str, str]:
    """What the ranks ran with (not the supervisor's own CUDA_VISIBLE_DEVICES)."""
    return env_to_record({**os.environ, **spec.env, **gpu_pinning(spec)})


def env_to_record(env: Mapping[str, str]) -> dict[str, str]:
    """The variables a record keeps (NCCL_* and friends: wirewise.record.RECORDED_ENV_PREFIXES)."""
    return {k: v for k, v in sorted(env.items()) if k.startswith(RECORDED_ENV_PREFIXES)}


def result_document(status: str, topo, records: list[ResultRecord], node_topologies: list | None = None) -> dict[str, Any]:
    """What a result file holds (written atomically; `wirewise collect` stores it): how the run
    ended, the wiring it ran on, the other nodes' wirings (stored under their names), its records."""
    return {
        "status": status,
        "topology": topo.model_dump(mode="json") if topo else None,
        "node_topologies": node_topologies or [],
        "records": [r.model_dump(mode="json") for r in records],
    }


def node_topology(spec: TaskSpec) -> tuple[Any, str | None]:
    """This node's wiring for the fingerprint; (None, why) on a CPU-only run or a failed probe."""
    if not spec.topology_file and not spec.gpus:
        return None, None
    from wirewise.errors import UserError
    from wirewise.topology import read_topology

    try:
        return read_topology(spec.topology_file), None
    except UserError as exc:
        return None, str(exc)


def rank_device(spec: TaskSpec, files: dict[int, dict]) -> str:
    """'cuda' or 'cpu': what the ranks ran on, as they reported it; without a report, CPU
    ranks are those given no GPUs (gloo ranks given GPU indices on a node without CUDA
    report 'cpu' themselves)."""
    reported = {f["device"] for f in files.values() if f.get("device")}
    if reported:
        return "cuda" if reported == {"cuda"} else "cpu"
    return "cuda" if spec.gpus else "cpu"


def build_records(spec, files, status, error, topo, topo_error, nodes, started, ended) -> list[ResultRecord]:
    """The task's records, on `nodes` ((name, fingerprint) of each, node 0 first, whose wiring
    is `topo`); each says every node, its backend and device, its attempt and repeat, a hash of
    the wirewise code that ran (submitit pickles a reference: code changed between submit and
    start runs the new code), and why the probe failed where it did. CPU ranks never pass as
    GPU measurements: no GPU indices, gpu_count 0 and extra.device "cpu", which keeps them out
    of every fabric figure, prediction and health check unless asked for (`--include-cpu`);
    the node's fingerprint stays, so that asking for them finds them by wiring."""
    device = rank_device(spec, files)
    records = _records_of_outcome(spec, files, status, error, topo, nodes, started, ended)
    code = code_hash()
    wire = wire_of(files)
    for record in records:
        record.extra.update(backend=spec.backend, device=device, attempt=spec.attempt, repeat=spec.repeat)
        if wire is not None:
            record.transport_carried = wire.carried
            record.extra["nccl"] = wire.to_json()
        record.versions.setdefault("wirewise_code", code)
        if device == "cpu":
            if spec.gpus:  # GPUs the task was given (a campaign's plan) but that measured nothing
                record.extra["assigned_gpus"] = spec.gpus
            record.gpus, record.gpu_count = [], 0
        if topo_error:
            record.extra["topology_error"] = topo_error
    return records


def wire_of(files: dict[int, dict]):
    """Every rank's NCCL INFO reading (wirewise.jobs.nccl_debug) as one wirewise.nccl_info.Wire;
    None where no rank had one (gloo ranks, a user's NCCL_DEBUG below INFO)."""
    from wirewise.nccl_info import Wire

    found = [Wire.from_json(f["wire"]) for _, f in sorted(files.items()) if f.get("wire")]
    if not found:
        return None
    total = Wire()
    for wire in found:
        total.add(wire)
    return total


def _records_of_outcome(spec, files, status, error, topo, nodes, started, ended) -> list[ResultRecord]:
    main = files.get(0, {})
    base = dict(
        task_id=spec.task_id,
        campaign=spec.campaign,
        workload=spec.workload,
        params={**spec.params, **spec.labels},
        node=nodes[0][0],
        node_count=len(nodes),
        nodes=[name for name, _ in nodes],
        node_fingerprints=[fingerprint for _, fingerprint in nodes],
        gpus=spec.gpus,
        gpu_count=len(spec.gpus) * spec.nnodes,
        fingerprint=topo.fingerprint if topo else None,
        fabric=topo.fabric if topo else None,
        versions=main.get("versions") or next((f["versions"] for f in files.values() if f.get("versions")), {}),
        env=recorded_env(spec),
        started_at=started,
        ended_at=ended,
        world_size=spec.world_size,
    )
    if status == "ok":
        return [ResultRecord(**{**base, **row}) for row in main.get("rows", [])]
    # A failed task still leaves one record: what was asked, how it ended, memory at the time.
    asked = {k: v for k, v in spec.params.items() if k in ResultRecord.model_fields and k not in base}
    memory = {str(r): f["memory"] for r, f in sorted(files.items()) if f.get("memory")}
    peaks = [m.get("cuda_peak_allocated_bytes", m["host_peak_rss_bytes"]) for m in memory.values()]
    notes = {str(r): f["notes"] for r, f in sorted(files.items()) if f.get("notes")}
    return [
        ResultRecord(
            **base, **asked, status=status, error=error, peak_mem_bytes=peaks or None,
            extra={"memory_at_failure": memory, "notes": notes},
        )
    ]
