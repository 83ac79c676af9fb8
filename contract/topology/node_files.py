"""One node's topology from its saved files: `nvidia-smi topo -m` and/or a saved nvidia-smi query
(`-q`, `-q -x`, the fabric CSV: wirewise.topology.smi), given together for one node.

- `topo -m` alone: the wiring as wirewise.topology.topology_from_text reads it.
- both: the matrix from `topo -m`; names, UUIDs and each GPU's fabric from the query. The two
  must list the same number of GPUs, and the same UUIDs where both name them (else they are
  two nodes' files).
- the query alone: its GPUs, names and fabric. The wiring inside the node is what the fabric
  proves and nothing more: one GPU needs none; GPUs of one completed multi-node NVLink domain
  (wirewise.topology.fabric.domain_of) reach each other over NVLink through the domain's
  switches with all the links their model has (NV18 on GB200/GB300, hardware.py's link count);
  anything else (no fabric, a fabric not completed, an HGX board's all-zero UUID, a model whose
  link count is unknown) leaves the wiring unknown, and WiringUnknown says so with the GPUs
  read, never a guessed matrix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wirewise.errors import UserError
from wirewise.topology import fabric, hardware, labels


class WiringUnknown(UserError):
    """The files name the node's GPUs and fabric, but nothing in them proves the wiring between the GPUs."""

    def __init__(self, message: str, gpus: list[dict[str, Any]], source: str) -> None:
        super().__init__(message)
        self.gpus = gpus
        self.source = source


def topology_from_files(paths: list[str | Path]):
    from wirewise.topology import topology_from_text
    from wirewise.topology.parse import read_source
    from wirewise.topology.smi import is_smi_query, read_smi_gpus

    if len(paths) > 2:
        raise UserError("--from-file: give at most two files of one node (`nvidia-smi topo -m` and one nvidia-smi query)")
    matrix_text = matrix_name = None
    query: tuple[list[dict[str, Any]], str] | None = None
    for path in paths:
        text, name = read_source(path)
        if is_smi_query(text):
            if query is not None:
                raise UserError(f"topo file {name}: a second nvidia-smi query; give one query and one `nvidia-smi topo -m`")
            query = (read_smi_gpus(text, f"topo file {name}"), name)
        elif matrix_text is not None:
            raise UserError(f"topo file {name}: a second `nvidia-smi topo -m`; give one node's files")
        else:
            matrix_text, matrix_name = text, name
    if query is None:
        return topology_from_text(matrix_text, matrix_name)
    gpus, query_name = query
    if matrix_text is not None:
        return _with_query(topology_from_text(matrix_text, matrix_name), gpus, query_name)
    return _from_query_alone(gpus, query_name)


def _with_query(topo, gpus: list[dict[str, Any]], source: str):
    if len(gpus) != topo.gpus:
        raise UserError(f"topo file {source}: lists {len(gpus)} GPUs where the `nvidia-smi topo -m` file has {topo.gpus}: "
                        "give the two files of one node")
    known = topo.details.get("gpus") or [{} for _ in gpus]
    for k, (mine, theirs) in enumerate(zip(known, gpus)):
        if mine.get("uuid") and theirs.get("uuid") and mine["uuid"] != theirs["uuid"]:
            raise UserError(f"topo file {source}: GPU {k} is {theirs['uuid']} where the `nvidia-smi topo -m` file "
                            f"names {mine['uuid']}: give the two files of one node")
    names = [name or gpu.get("name") for name, gpu in zip(topo.gpu_names, gpus)]
    merged = [{**gpu, **{key: value for key, value in mine.items() if value}} for mine, gpu in zip(known, gpus)]
    fields = topo.model_dump(include=set(type(topo).model_fields))
    details = {**topo.details, "file": f"{topo.details.get('file')} + {source}", "gpus": merged}
    return type(topo)(**{**fields, "gpu_names": names, "details": details})


def _from_query_alone(gpus: list[dict[str, Any]], source: str):
    from wirewise.topology.model import Topology

    n = len(gpus)
    names = [gpu.get("name") for gpu in gpus]
    notes = []
    if n == 1:
        links = [[labels.SELF]]
    else:
        links = _links_the_fabric_proves(gpus, names)
        if links is None:
            raise WiringUnknown(
                f"topo file {source}: the wiring between its {n} GPUs is unknown: the file has no pair matrix and "
                f"the fabric proves none ({_why_unproven(gpus, names)}); add the node's `nvidia-smi topo -m` "
                "as a second --from-file",
                gpus, source,
            )
        notes.append(f"the wiring comes from the NVLink fabric alone: the {n} GPUs sit in one completed domain, "
                     f"so they reach each other over NVLink with the {labels.nvlink_count(links[0][1])} links "
                     "their model has; PCIe paths and CPU affinity are unknown (add `nvidia-smi topo -m`)")
    details = {"source": "file", "file": source, "gpus": gpus, "notes": notes}
    return Topology(links=links, gpu_names=names, details=details)


def _links_the_fabric_proves(gpus, names) -> list[list[str]] | None:
    if fabric.domain_of([gpu.get("fabric") for gpu in gpus]) is None:
        return None
    families = {hardware.family(name) for name in names}
    count = families.pop().nvlink_links if len(families) == 1 and None not in families else None
    if not count:
        return None
    n = len(gpus)
    return [[labels.SELF if i == j else labels.nvlink_label(count) for j in range(n)] for i in range(n)]


def _why_unproven(gpus, names) -> str:
    infos = [gpu.get("fabric") for gpu in gpus]
    if fabric.domain_of(infos) is None:
        return f"in no multi-node NVLink domain: {fabric.why_no_domain(infos)}"
    return f"the NVLink count of {names[0] or 'an unnamed GPU'} is unknown"
