"""Saved nvidia-smi queries -> each GPU's name, UUID, PCI bus id and NVLink fabric.

Three forms are read (real captures in tests/fixtures/smi, with their sources):
- `nvidia-smi -q` text: a `GPU 00000000:18:00.0` line opens each GPU; its `Fabric` block holds
  State, Status, CliqueId, ClusterUUID and, on newer drivers, Health (Summary, Bandwidth, ...).
  A block pasted on its own (`nvidia-smi -q | grep -A8 Fabric`) is one GPU per Fabric block.
- `nvidia-smi -q -x` XML: `<gpu id=...>` with `<product_name>`, `<uuid>` and `<fabric>`
  (`<state>`, `<status>`, `<cliqueId>`, `<clusterUuid>`, `<health>`). Parsed by the standard
  library with any entity declaration refused (no external entities, no expansion bombs).
- `nvidia-smi --query-gpu=index,...,fabric.clusterUuid,fabric.cliqueId,fabric.state,fabric.status
  --format=csv`: columns in any order when the header is there; without it
  (`csv,noheader`) only the documented order `index,fabric.clusterUuid,fabric.cliqueId,
  fabric.state,fabric.status` can be read, since an index and a clique id look alike.

A GPU's fabric comes out as wirewise.topology.fabric.read_fabric gives it from NVML (state in
its words, status 0 for Success, else nvidia-smi's words), with nvidia-smi's Health lines kept
under `health`; "N/A" or "Not Supported" everywhere is no fabric (None).
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from wirewise.errors import UserError

_GPU_LINE = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_KEY_VALUE = re.compile(r"^(\s*)(\S[^:]*?)\s*:\s*(.*?)\s*$")
_NONE = {"", "n/a", "not supported", "[n/a]", "[not supported]", "unknown error"}
_FABRIC_COLUMNS = ("fabric.clusteruuid", "fabric.cliqueid", "fabric.state", "fabric.status")
_NOHEADER_ORDER = ("index", "fabric.clusteruuid", "fabric.cliqueid", "fabric.state", "fabric.status")
_CLUSTER_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def is_smi_query(text: str) -> bool:
    """The text is one of the three forms (not `nvidia-smi topo -m`)."""
    head = text.lstrip()[:2000].lower()
    if head.startswith("<?xml") or "<nvidia_smi_log" in head:
        return True
    if head and "fabric." in head.splitlines()[0]:
        return True
    lines = [line.strip() for line in text.splitlines()]
    return "Fabric" in lines or "==============NVSMI LOG==============" in lines or _looks_noheader_csv(lines)


def read_smi_gpus(text: str, where: str) -> list[dict[str, Any]]:
    """Every GPU the text lists, in nvidia-smi's order; UserError when none or a value is bad."""
    head = text.lstrip()[:2000].lower()
    if head.startswith("<?xml") or "<nvidia_smi_log" in head:
        gpus = _from_xml(text, where)
    elif "Fabric" in (line.strip() for line in text.splitlines()) or "NVSMI LOG" in text:
        gpus = _from_text(text)
    else:
        gpus = _from_csv(text, where)
    if not gpus:
        raise UserError(f"{where}: lists no GPU (save `nvidia-smi -q`, `nvidia-smi -q -x` or the fabric CSV of all GPUs)")
    return gpus


def fabric_from_fields(state: str | None, status: str | None, clique: str | None, cluster: str | None,
                       health: dict[str, str], where: str) -> dict[str, Any] | None:
    """One GPU's fabric from nvidia-smi's words; None where it reports none."""
    state_l = (state or "").strip().lower()
    if state_l in _NONE:
        return None
    if state_l not in ("completed", "in progress", "not started"):
        raise UserError(f"{where}: fabric state {state!r} is none nvidia-smi prints (Completed, In Progress, Not Started, N/A)")
    status_text = (status or "").strip()
    clique_text = (clique or "").strip()
    if clique_text.lower() not in _NONE and not clique_text.isdigit():
        raise UserError(f"{where}: fabric clique id {clique!r} is not a number")
    cluster_text = (cluster or "").strip()
    if cluster_text.lower() not in _NONE and not _CLUSTER_UUID.match(cluster_text):
        raise UserError(f"{where}: fabric cluster UUID {cluster!r} is not a UUID")
    return {
        "cluster_uuid": cluster_text.lower() if cluster_text.lower() not in _NONE else None,
        "clique_id": int(clique_text) if clique_text.isdigit() else None,
        "state": state_l,
        "status": 0 if status_text.lower() == "success" else (status_text if status_text.lower() not in _NONE else None),
        "health": {k: v for k, v in health.items() if v.lower() not in _NONE},
    }


# -- nvidia-smi -q -----------------------------------------------------------
def _from_text(text: str) -> list[dict[str, Any]]:
    gpus: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].rstrip()
        if m := _GPU_LINE.match(line.strip()):
            current = {"name": None, "uuid": None, "pci_bus_id": m.group(1), "fabric": None}
            gpus.append(current)
        elif line.strip() == "Fabric":
            if current is None or "fabric_read" in current:  # a Fabric block pasted without its GPU
                current = {"name": None, "uuid": None, "pci_bus_id": None, "fabric": None}
                gpus.append(current)
            fields, index = _block(lines, index)
            where = f"GPU {len(gpus) - 1}"
            health = {k[len("health/"):]: v for k, v in fields.items() if k.startswith("health/")}
            current["fabric"] = fabric_from_fields(fields.get("state"), fields.get("status"), fields.get("cliqueid"),
                                                   fields.get("clusteruuid"), health, where)
            current["fabric_read"] = True
            continue
        elif current is not None and (kv := _KEY_VALUE.match(line)):
            key, value = kv.group(2).strip().lower(), kv.group(3)
            if key == "product name" and current["name"] is None:
                current["name"] = value
            elif key == "gpu uuid" and current["uuid"] is None:
                current["uuid"] = value
        index += 1
    for gpu in gpus:
        gpu.pop("fabric_read", None)
    return gpus


def _block(lines: list[str], start: int) -> tuple[dict[str, str], int]:
    """The `key : value` lines indented under lines[start] (Health's as health/KEY); the index after."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    fields: dict[str, str] = {}
    prefix = ""
    index = start + 1
    while index < len(lines):
        line = lines[index].rstrip()
        depth = len(line) - len(line.lstrip())
        if not line.strip() or depth <= indent:
            break
        kv = _KEY_VALUE.match(line)
        if kv:
            fields[prefix + kv.group(2).strip().lower()] = kv.group(3)
        elif line.strip().lower() == "health":
            prefix = "health/"
        index += 1
    return fields, index


# -- nvidia-smi -q -x ----------------------------------------------------------
def _from_xml(text: str, where: str) -> list[dict[str, Any]]:
    import xml.etree.ElementTree as ET

    if re.search(r"<!ENTITY", text, re.IGNORECASE):
        raise UserError(f"{where}: the XML declares entities; nvidia-smi -q -x writes none")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise UserError(f"{where}: not readable as XML ({exc})") from None
    gpus = []
    for k, gpu in enumerate(root.iter("gpu")):
        fabric = gpu.find("fabric")
        health = {}
        if fabric is not None and fabric.find("health") is not None:
            health = {child.tag.replace("_", " "): (child.text or "").strip() for child in fabric.find("health")}
        gpus.append({
            "name": gpu.findtext("product_name"),
            "uuid": gpu.findtext("uuid"),
            "pci_bus_id": gpu.get("id"),
            "fabric": None if fabric is None else fabric_from_fields(
                fabric.findtext("state"), fabric.findtext("status"), fabric.findtext("cliqueId"),
                fabric.findtext("clusterUuid"), health, f"{where}: GPU {k}"),
        })
    return gpus


# -- --query-gpu CSV -------------------------------------------------------------
def _looks_noheader_csv(lines: list[str]) -> bool:
    rows = [line for line in lines if line]
    return bool(rows) and all(len(row.split(",")) == len(_NOHEADER_ORDER) and row.split(",")[0].strip().isdigit() for row in rows)


def _from_csv(text: str, where: str) -> list[dict[str, Any]]:
    rows = [[cell.strip() for cell in row] for row in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in row)]
    first = [re.sub(r"\s*\[.*\]$", "", cell).lower() for cell in rows[0]]  # "memory.total [MiB]": units after the name
    if any(name in first for name in _FABRIC_COLUMNS):
        header, body = first, rows[1:]
    elif all(len(row) == len(_NOHEADER_ORDER) for row in rows):
        header, body = list(_NOHEADER_ORDER), rows
        where = f"{where} (no header: read as {','.join(_NOHEADER_ORDER)})"
    else:
        raise UserError(
            f"{where}: a CSV without its header can only be read in the order "
            f"{','.join(_NOHEADER_ORDER)}; save it with --format=csv (the header names the columns)"
        )
    missing = [name for name in _FABRIC_COLUMNS if name not in header]
    if missing:
        raise UserError(f"{where}: the CSV has no {', '.join(missing)} column; query them with --query-gpu")
    gpus = []
    for number, row in enumerate(body, start=1):
        if len(row) != len(header):
            raise UserError(f"{where}: row {number} has {len(row)} values for {len(header)} columns")
        cells = dict(zip(header, row))
        gpus.append({
            "index": int(cells["index"]) if cells.get("index", "").isdigit() else None,
            "name": cells.get("name"),
            "uuid": cells.get("uuid"),
            "pci_bus_id": cells.get("pci.bus_id"),
            "fabric": fabric_from_fields(cells["fabric.state"], cells["fabric.status"], cells["fabric.cliqueid"],
                                         cells["fabric.clusteruuid"], {}, f"{where}: row {number}"),
        })
    if all(gpu["index"] is not None for gpu in gpus):
        gpus.sort(key=lambda gpu: gpu["index"])
        if [gpu["index"] for gpu in gpus] != list(range(len(gpus))):
            raise UserError(f"{where}: the GPU indexes are {[gpu['index'] for gpu in gpus]}; save every GPU's row (0..N-1)")
    for gpu in gpus:
        gpu.pop("index")
    return gpus
