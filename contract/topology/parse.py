"""`nvidia-smi topo -m` text -> the GPU pair matrix and the per-GPU columns.

Real outputs differ a lot (see tests/fixtures/topo): tabs or runs of spaces, ANSI
underline codes around the header, a header that lost its leading tab, NIC columns
(NICn with a NIC Legend, mlx5_n, ibn), CPU Affinity / NUMA Affinity / GPU NUMA ID
present, missing or empty, CPU affinity printed as a block of its own below the
matrix, legends of several driver generations or cut short, and preamble lines such as
`$ srun ...` or `NVIDIA Topology:`. The parser therefore reads tokens, not columns:
a row is its name, then one link label per device of the header, then the affinity
values. Lines of `nvidia-smi -L` anywhere in the text give the GPU names.
`nvidia-smi topo -mp` (PCIe paths only: an NVLink machine's GPUs look PCIe-connected) is
refused, known by its legend.

Two kinds of retyping are read where the reading is unambiguous:
- a Markdown table (`| GPU0 | GPU1 | ... |`, cells maybe in **bold**, columns in any
  order): its header names every column, so it is rewritten as the matrix it shows;
- lost tabs: a header token that is two device names run together (`NIC8NIC9`) and a cell
  that is two labels run together (`NODENODE`, `NODEPXB`) split into the names and labels
  they can only be, since no name or label contains another's start. A label run into a
  number (`SYS0-55`) can be read two ways (`NV18` + `0-55` or `NV1` + `80-55`) and is refused,
  as is a matrix whose line breaks were lost (its rows on one line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from wirewise.errors import UserError
from wirewise.topology import labels

AFFINITY_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_HEADER_TOKEN = re.compile("|".join(AFFINITY_COLUMNS) + r"|\S+")
_DEVICE_NAME = re.compile(r"^[A-Za-z][\w\-]*\d$")
_GPU_NAME = re.compile(r"^GPU(\d+)$")
_SMI_LIST_LINE = re.compile(r"^GPU (\d+): (.+?) \(UUID: ([^)\s]+)\)")
_NIC_LEGEND_LINE = re.compile(r"^(NIC\d+):\s*(\S+)$")
_VALUE = re.compile(r"^([\d,\-]+|N/A)$")
_LABEL_LIST = "X, NV#, PIX, PXB, PHB, NODE, SYS"
_RUN_TOGETHER_NAMES = re.compile(r"^(?:(?:GPU|NIC)\d+){2,}$")  # NIC8NIC9: a tab lost in the header
_ONE_NAME = re.compile(r"(?:GPU|NIC)\d+")
_RUN_TOGETHER_LABELS = re.compile(r"^(?:X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC){2,}$")  # NODEPXB: a tab lost in a row
_ONE_LABEL = re.compile(r"X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC")
_MARKDOWN_ROW = re.compile(r"^\s*\|.*\|\s*$")
_MARKDOWN_RULE = re.compile(r"^[\s|:\-]+$")


@dataclass
class ParsedText:
    """What the text says, GPU by GPU; NICs kept apart (they are not part of the wiring)."""

    links: list[list[str]]
    gpu_names: list[str | None]
    uuids: list[str | None]
    cpu_affinity: list[str | None]
    numa: list[int | None]
    nics: list[str] = field(default_factory=list)
    nic_links: list[list[str]] = field(default_factory=list)  # GPU x NIC labels


def read_source(path: str | Path) -> tuple[str, str]:
    """(text, name for messages) of a file, or of stdin for '-'; binary and empty input refused."""
    from wirewise.limits import MAX_TOPOLOGY_BYTES, read_bounded

    name = "stdin" if str(path) == "-" else str(path)
    try:
        data = read_bounded(path, MAX_TOPOLOGY_BYTES)  # a regular file: /dev/zero or a FIFO never ends
    except FileNotFoundError:
        raise UserError(f"topo file {name}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"topo file {name}: is a folder, give the file with `nvidia-smi topo -m` output") from None
    except OSError as exc:
        raise UserError(f"topo file {name}: cannot read it ({exc.strerror})") from None
    if not data.strip():
        raise UserError(f"topo file {name}: is empty; save the output of `nvidia-smi topo -m` into it")
    if _looks_binary(data):
        raise UserError(f"topo file {name}: is binary, not the text of `nvidia-smi topo -m`")
    return data.decode("utf-8", errors="replace"), name


def _looks_binary(data: bytes) -> bool:
    if b"\x00" in data:
        return True
    text = data.decode("utf-8", errors="replace")
    odd = sum(1 for ch in text if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\n\r\x1b\x0c"))
    return odd > len(text) * 0.05


def parse_topo_text(text: str, source: str = "input") -> ParsedText:
    """Parse `nvidia-smi topo -m` output; UserError naming the problem when it is not one."""
    where = f"topo file {source}"
    lines = _from_markdown([_ANSI.sub("", line).rstrip() for line in text.splitlines()])
    header_at = next((i for i, line in enumerate(lines) if _is_header(line)), None)
    if header_at is None and any(_runs_on_one_line(line) for line in lines):
        raise UserError(
            f"{where}: the matrix's line breaks were lost (its header and GPU rows run on one line); "
            "paste `nvidia-smi topo -m` as it prints, one row a line"
        )
    if header_at is None:
        raise UserError(
            f"{where}: no `nvidia-smi topo -m` matrix found (no header line starting with GPU0); "
            "pass the saved output of `nvidia-smi topo -m`"
        )
    if _pcie_only_view(lines):
        raise UserError(
            f"{where}: this is `nvidia-smi topo -mp`, the PCIe-only view (its legend has no NV# entry): "
            "it never shows NVLinks, so it is not the node's wiring; save `nvidia-smi topo -m` instead"
        )
    devices, extra_columns = _split_header(lines[header_at])
    gpu_count = _gpu_count(devices, where)
    rows, extras, nic_legend = _read_body(lines[header_at + 1 :], devices, extra_columns, gpu_count, where)

    missing = [f"GPU{i}" for i in range(gpu_count) if i not in rows]
    if len(missing) == gpu_count:
        raise UserError(f"{where}: the header lists {gpu_count} GPUs but no GPU rows follow (is the matrix cut?)")
    if missing:
        raise UserError(f"{where}: row {missing[0]} is missing, the header lists {gpu_count} GPUs (is the matrix cut?)")

    links = [[labels.normalize(cell) for cell in rows[i][:gpu_count]] for i in range(gpu_count)]
    validate_matrix(links, where)
    names, uuids = _smi_list(lines, gpu_count)
    nic_columns = devices[gpu_count:]
    return ParsedText(
        links=links,
        gpu_names=names,
        uuids=uuids,
        cpu_affinity=[_affinity(extras.get(i, {}).get("CPU Affinity")) for i in range(gpu_count)],
        numa=[_integer(extras.get(i, {}).get("NUMA Affinity")) for i in range(gpu_count)],
        nics=[nic_legend.get(name, name) for name in nic_columns],
        nic_links=[[labels.normalize(cell) for cell in rows[i][gpu_count:]] for i in range(gpu_count)],
    )


def _pcie_only_view(lines: list[str]) -> bool:
    """`nvidia-smi topo -mp` prints the matrix of PCIe paths and a legend without the NV# entry
    that `-m` always prints (on a PCIe-only machine too: tests/fixtures/topo/consumer-5gpu-...):
    a legend that defines PIX but not NV#, over a matrix without an NV cell, is that view."""
    legend = [line.split("=", 1)[0].strip() for line in lines if "=" in line]
    cells = {cell for line in lines for cell in line.split()}
    return "PIX" in legend and "NV#" not in legend and not any(re.fullmatch(r"NV\d+", cell) for cell in cells)


def validate_matrix(links: list[list[str]], where: str) -> None:
    """Square, X on the diagonal only, known labels, the same label both ways."""
    n = len(links)
    for i, row in enumerate(links):
        if len(row) != n:
            raise UserError(f"{where}: row GPU{i} has {len(row)} entries, expected {n}")
        for j, label in enumerate(row):
            if not labels.is_label(label):
                raise UserError(f"{where}: GPU{i}-GPU{j} is {label!r}, not a link label ({_LABEL_LIST})")
            if (label == labels.SELF) != (i == j):
                what = "X off the diagonal" if label == labels.SELF else f"{label} on the diagonal"
                raise UserError(f"{where}: GPU{i}-GPU{j} has {what}; only a GPU to itself is X")
    for i in range(n):
        for j in range(i + 1, n):
            if links[i][j] != links[j][i]:
                raise UserError(
                    f"{where}: the matrix is not symmetric: GPU{i}-GPU{j} is {links[i][j]} "
                    f"but GPU{j}-GPU{i} is {links[j][i]}"
                )


def _from_markdown(lines: list[str]) -> list[str]:
    """The lines with a Markdown table of the matrix rewritten as `nvidia-smi topo -m` prints
    it: the header names each column, so the row names, link cells and affinity values are
    put back in their order whatever order the table gave them. Other lines are kept."""
    out, index = [], 0
    while index < len(lines):
        end = index
        while end < len(lines) and _MARKDOWN_ROW.match(lines[end]):
            end += 1
        table = [_cells(line) for line in lines[index:end] if not _MARKDOWN_RULE.match(line)]
        if table and "GPU0" in table[0]:
            out.extend(_table_as_matrix(table))
            index = end
        else:
            out.append(lines[index])
            index += 1
    return out


def _cells(line: str) -> list[str]:
    return [cell.strip().strip("*_`").strip() for cell in line.strip().strip("|").split("|")]


def _table_as_matrix(table: list[list[str]]) -> list[str]:
    head = table[0]
    devices = [k for k, name in enumerate(head) if _DEVICE_NAME.match(name) and not labels.is_label(name)]
    extras = [k for k, name in enumerate(head) if name in AFFINITY_COLUMNS]
    names = [k for k in range(len(head)) if k not in devices and k not in extras]
    if not names:  # no column left for the row names: not the matrix
        return ["|".join(row) for row in table]
    name_at = names[0]
    order = devices + extras
    matrix = ["\t" + "\t".join(head[k] for k in order)]
    for row in table[1:]:
        cells = row + [""] * (len(head) - len(row))
        matrix.append("\t".join([cells[name_at], *(cells[k] for k in order)]))
    return matrix


def _runs_on_one_line(line: str) -> bool:
    """A header and its GPU rows on one line: `... GPU0 GPU1 ... GPU0 X NV18 ...`."""
    tokens = line.split()
    return tokens.count("GPU0") >= 2 and "GPU1" in tokens and "X" in tokens


def _is_header(line: str) -> bool:
    tokens = _HEADER_TOKEN.findall(line)
    if not tokens or tokens[0] != "GPU0":
        return False
    devices = [t for t in tokens if t not in AFFINITY_COLUMNS]
    return all(_DEVICE_NAME.match(t) for t in devices) and not any(labels.is_label(t) for t in devices)


def _split_header(line: str) -> tuple[list[str], list[str]]:
    """Device columns (GPUs then NICs) and the affinity columns after them; names run together
    by a lost tab (NIC8NIC9) are split."""
    tokens = []
    for token in _HEADER_TOKEN.findall(line):
        tokens.extend(_ONE_NAME.findall(token) if _RUN_TOGETHER_NAMES.match(token) else [token])
    first_extra = next((k for k, t in enumerate(tokens) if t in AFFINITY_COLUMNS), len(tokens))
    return tokens[:first_extra], tokens[first_extra:]


def _gpu_count(devices: list[str], where: str) -> int:
    gpus = [d for d in devices if _GPU_NAME.match(d)]
    expected = [f"GPU{i}" for i in range(len(gpus))]
    if devices[: len(gpus)] != expected:
        raise UserError(
            f"{where}: header columns {' '.join(devices)}: expected GPU0..GPU{len(gpus) - 1} first, in order"
        )
    return len(gpus)


def _read_body(lines, devices, extra_columns, gpu_count, where):
    """Matrix rows, per-GPU affinity values (inline or from a block below) and the NIC legend."""
    rows: dict[int, list[str]] = {}
    extras: dict[int, dict[str, str]] = {}
    nic_legend: dict[str, str] = {}
    block_columns: list[str] | None = None  # set inside a separate "CPU Affinity" block
    section = "matrix"
    for line in lines:
        stripped = line.strip()
        if stripped == "NIC Legend:":
            section = "nic-legend"
            continue
        if stripped == "Legend:":
            section = "legend"
            continue
        if section == "nic-legend" and (m := _NIC_LEGEND_LINE.match(stripped)):
            nic_legend[m.group(1)] = m.group(2)
            continue
        if section != "matrix" or not stripped:
            continue
        tokens = _HEADER_TOKEN.findall(stripped)
        if all(t in AFFINITY_COLUMNS for t in tokens):
            block_columns = tokens
            continue
        gpu = _GPU_NAME.match(tokens[0])
        if not gpu or int(gpu.group(1)) >= gpu_count:
            continue  # NIC rows, stray text
        index = int(gpu.group(1))
        values = _split_run_together(stripped.split()[1:])
        if block_columns is not None:
            extras.setdefault(index, {}).update(zip(block_columns, values))
            continue
        if index in rows:
            raise UserError(f"{where}: row GPU{index} appears twice")
        cells, rest = _row_cells(values, devices, gpu_count, index, where)
        rows[index] = cells
        extras[index] = _assign_extras(rest, extra_columns)
    return rows, extras, nic_legend


def _split_run_together(values: list[str]) -> list[str]:
    """Cells of two labels run together by a lost tab (NODENODE, NODEPXB) as the two labels."""
    split: list[str] = []
    for value in values:
        split.extend(_ONE_LABEL.findall(value) if _RUN_TOGETHER_LABELS.match(value) else [value])
    return split


def _row_cells(values, devices, gpu_count, index, where):
    """Leading link labels of a row (one per device column) and the values after them."""
    count = 0
    while count < len(values) and labels.is_label(values[count]):
        count += 1
    expected = len(devices)
    if count < expected and count < len(values) and not _VALUE.match(values[count]):
        raise UserError(
            f"{where}: row GPU{index} has {values[count]!r} under {devices[count]}, "
            f"not a link label ({_LABEL_LIST})"
        )
    if count != expected:
        nics = expected - gpu_count
        parts = f" ({gpu_count} GPUs + {nics} NICs)" if nics else ""
        hint = "is the matrix cut?" if count < expected else "does the header miss a column?"
        raise UserError(f"{where}: row GPU{index} has {count} entries, expected {expected}{parts} ({hint})")
    return values[:count], values[count:]


def _assign_extras(values: list[str], columns: list[str]) -> dict[str, str]:
    """Affinity values to their columns. Fewer values than columns means empty ones; under
    a Slurm cgroup it is CPU Affinity (the first column) that nvidia-smi leaves empty, so the
    values are aligned to the right."""
    if len(values) >= len(columns):
        return dict(zip(columns, values))
    return dict(zip(columns[len(columns) - len(values) :], values))


def _smi_list(lines: list[str], gpu_count: int) -> tuple[list[str | None], list[str | None]]:
    """GPU names and UUIDs from `nvidia-smi -L` lines, if the text has them."""
    names: list[str | None] = [None] * gpu_count
    uuids: list[str | None] = [None] * gpu_count
    for line in lines:
        m = _SMI_LIST_LINE.match(line.strip())
        if m and int(m.group(1)) < gpu_count:
            names[int(m.group(1))] = m.group(2).strip()
            uuids[int(m.group(1))] = m.group(3)
    return names, uuids


def _affinity(value: str | None) -> str | None:
    return value if value and value != "N/A" and re.match(r"^[\d,\-]+$", value) else None


def _integer(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None
