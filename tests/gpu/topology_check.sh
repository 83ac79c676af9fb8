#!/usr/bin/env bash
# `wirewise topo` on a real GPU machine: the live NVML probe end to end.
#
#   1. what the driver says: `nvidia-smi -L` and `nvidia-smi topo -m` (cat -A: ANSI codes, tabs)
#   2. `wirewise topo show` (table) and `wirewise topo show --json` (the DESIGN.md object)
#   3. `wirewise topo save` twice (the second must add nothing) and `wirewise topo list`
#   4. `wirewise topo slurm` (gres.conf lines)
#   5. the NVML details stored beside the fingerprint (UUIDs, PCI ids, PCIe gen/width, NVLink
#      per link or "not supported", CPU affinity, NUMA, versions, notes), how long a live
#      probe takes (the job supervisor runs one per task) and that it never imports torch
#   6. the probe's pair matrix against the driver's own `nvidia-smi topo -m` (step 1): the
#      same GPU count, the same NVLink count for every pair and the same fabric class
#
# Needs the repository importable (this script puts its checkout first on PYTHONPATH) with
# sqlalchemy, alembic, pydantic, typer, rich and nvidia-ml-py (carry them as wheels where
# there is no registry). The database goes to $OUT when set, else a temporary folder.
# Exit status 0 only when every step ran and every check held. WIREWISE overrides the
# command (default: python3 -m orchestrator).
set -euo pipefail

source "$(dirname "$0")/common.sh"
export WIREWISE_DB="sqlite:///$out/topology.db"

echo "## 1. nvidia-smi"
nvidia-smi -L || echo "(nvidia-smi -L failed)"
nvidia-smi topo -m | tee "$out/nvidia-smi-topo.txt" | cat -A || echo "(nvidia-smi topo -m failed)"

echo "## 2. wirewise topo show"
COLUMNS=160 "${wirewise[@]}" topo show
"${wirewise[@]}" topo show --json | tee "$out/topo.json"

echo "## 3. wirewise topo save / list"
"${wirewise[@]}" topo save
"${wirewise[@]}" topo save --json | tee "$out/save-again.json"
COLUMNS=160 "${wirewise[@]}" topo list
"${wirewise[@]}" topo list --json > "$out/list.json"

echo "## 4. wirewise topo slurm"
"${wirewise[@]}" topo slurm | tee "$out/gres.conf"

echo "## 5. NVML details and checks"
python3 - "$out" <<'EOF'
import json
import sys
import time
from pathlib import Path

out = Path(sys.argv[1])
start = time.perf_counter()
from wirewise.topology import read_topology

topo = read_topology()
probe_s = time.perf_counter() - start
again = time.perf_counter()
read_topology()
second_s = time.perf_counter() - again

details = topo.details
print(f"source: {details['source']}  host: {details['hostname']}  versions: {details['versions']}")
for note in details["notes"]:
    print(f"note: {note}")
for k, gpu in enumerate(details["gpus"]):
    active = [link for link in gpu["nvlinks"] if link["active"]]
    remotes = sorted({link.get("remote") for link in active})
    print(
        f"GPU{k}: {gpu['name']} {gpu['uuid']} bus {gpu['pci_bus_id']} minor {gpu['minor']} "
        f"PCIe {gpu['pcie']} NVLink {'supported' if gpu['nvlink_supported'] else 'NOT supported'} "
        f"({len(gpu['nvlinks'])} links, {len(active)} active, far ends {remotes}) "
        f"CPUs {topo.cpu_affinity[k]} NUMA {topo.numa[k]} Slurm cores {details['slurm_cores'][k]}"
    )
print(f"pcie_levels: {topo.pcie_levels}")
print(f"live probe: {probe_s * 1000:.0f} ms with imports, {second_s * 1000:.0f} ms again")

shown = json.loads((out / "topo.json").read_text())
saved_again = json.loads((out / "save-again.json").read_text())
listed = json.loads((out / "list.json").read_text())
problems = []
if list(shown) != ["gpus", "gpu_names", "fabric", "switched", "groups", "links", "fingerprint"]:
    problems.append(f"show --json keys {list(shown)}")
if shown != topo.contract():
    problems.append("show --json differs from a second probe")
if shown["gpus"] != len(details["gpus"]) or None in shown["gpu_names"]:
    problems.append(f"GPUs {shown['gpus']} vs NVML {len(details['gpus'])}, names {shown['gpu_names']}")
if saved_again["created"] is not False or saved_again["fingerprint"] != shown["fingerprint"]:
    problems.append(f"second save {saved_again}")
if [row["fingerprint"] for row in listed] != [shown["fingerprint"]]:
    problems.append(f"list {listed}")
if not all(v for k, v in details["versions"].items() if k in ("driver", "cuda")):
    problems.append(f"versions {details['versions']}")
if "torch" in sys.modules:
    problems.append("the probe imported torch")
smi = read_topology(out / "nvidia-smi-topo.txt")
probe_nvlinks = [[topo.nvlinks(i, j) for j in range(topo.gpus)] for i in range(topo.gpus)]
smi_nvlinks = [[smi.nvlinks(i, j) for j in range(smi.gpus)] for i in range(smi.gpus)]
print(f"NVLinks per pair: probe ({details['source']}) {probe_nvlinks}, nvidia-smi {smi_nvlinks}; "
      f"fabric {topo.fabric} vs {smi.fabric}")
if (topo.gpus, probe_nvlinks, topo.fabric) != (smi.gpus, smi_nvlinks, smi.fabric):
    problems.append(f"the probe's matrix differs from nvidia-smi topo -m: {probe_nvlinks} vs {smi_nvlinks}")
if problems:
    sys.exit("FAILED: " + "; ".join(problems))
print(f"# OK: {shown['gpus']} GPU(s), {shown['fabric']}, fingerprint {shown['fingerprint']}; files in {out}")
EOF
