"""Slurm GPU configuration from a topology: gres.conf lines and a slurm.conf Features= hint.

gres.conf(5): `Links=` is one integer per GPU in device order (GPUs sorted by PCI bus id,
the order NVML and nvidia-smi number them), the number of connections to that GPU, -1 for
the GPU itself, 0 for none; a line with Links= holds a single File=. `Cores=` takes
logical core indices, not CPU ids (see wirewise.topology.cpus).

Seen on Slurm 22.05 (tests/topology/test_gres_slurm.py): cons_tres uses Links= only for
GPUs that have Cores= and only for jobs asking `--gpus=N`; `--gres=gpu:N` takes the first
free GPUs. So Cores= is written wherever it can be known, even when it spans all cores.
"""

from __future__ import annotations

from wirewise.errors import UserError
from wirewise.orchestrator.slurm.values import HOST
from wirewise.ranges import CPU_IDS, format_ranges, parse_ranges
from wirewise.topology import cpus, hardware
from wirewise.topology.model import Topology

def slurm_node(topo: Topology, given: str | None, from_file: bool) -> str:
    """The NodeName for the lines: --node, else the host the topology was probed on. A saved
    file names no host, and this machine's name would be wrong for it: --node is needed."""
    from wirewise.topology import node_name

    if given is None and from_file and not topo.details.get("hostname"):
        raise UserError("--node: give the node these lines are for (the file does not name its host)")
    # NodeName= on a gres.conf line: nothing that could end the line or start another key
    return HOST.check(given if given is not None else node_name(topo), "--node")


def gres_conf(topo: Topology, node: str) -> str:
    """gres.conf lines, one per GPU, with comments that say where each value comes from."""
    cores = _cores_per_gpu(topo)
    lines = [
        f"# {node}: {topo.gpus} GPU(s), fabric {topo.fabric}, fingerprint {topo.fingerprint[:16]} (wirewise topo slurm)",
        "# Links= NVLinks to GPU 0,1,... in device order (-1 itself); Cores= logical core indices near the GPU",
    ]
    if not any(cores):
        lines.append(
            "# no Cores=: the CPU affinity does not tell the core count; run `wirewise topo slurm` on the node "
            "itself, since Slurm weighs Links= only for GPUs with Cores="
        )
    for gpu in range(topo.gpus):
        fields = [f"NodeName={node}", "Name=gpu"]
        kind = hardware.slurm_type(topo.gpu_names[gpu])
        if kind:
            fields.append(f"Type={kind}")
        fields.append(f"File=/dev/nvidia{_minor(topo, gpu)}")
        fields.append("Links=" + ",".join("-1" if peer == gpu else str(topo.nvlinks(gpu, peer)) for peer in range(topo.gpus)))
        if cores[gpu]:
            fields.append(f"Cores={cores[gpu]}")
        lines.append(" ".join(fields))
    features = ",".join(slurm_features(topo))
    lines += [
        f"# slurm.conf, on the NodeName={node} line: Gres={_gres_counts(topo)} Features={features}",
        f"# then jobs can ask for the fabric: sbatch --constraint={topo.fabric} --gpus={min(2, topo.gpus)} job.sh",
        "# (--gpus=N lets Slurm pick GPUs by Links=; --gres=gpu:N takes the first free ones)",
    ]
    return "\n".join(lines) + "\n"


def slurm_features(topo: Topology) -> list[str]:
    """Node features naming the fabric: the class, 'nvswitch' when proven, 'nvlink<generation>'
    (spelled out: 'nvl4' reads like a group size, as in "H200 NVL" quads), and
    fp-<first 12 hex digits of the fingerprint>."""
    features = [topo.fabric]
    if topo.switched:
        features.append("nvswitch")
    if topo.nvlink_generation and topo.fabric not in ("pcie", "single"):
        features.append(f"nvlink{topo.nvlink_generation}")
    features.append(f"fp-{topo.fingerprint[:12]}")  # one wiring exactly: a campaign's target.fingerprint
    return features


def _minor(topo: Topology, gpu: int) -> int:
    """/dev/nvidiaN uses the device minor number, which need not equal the index (gres.conf(5))."""
    gpus = topo.details.get("gpus") or []
    minor = gpus[gpu].get("minor") if gpu < len(gpus) else None
    return minor if minor is not None else gpu


def _gres_counts(topo: Topology) -> str:
    counts: dict[str | None, int] = {}
    for name in topo.gpu_names:
        kind = hardware.slurm_type(name)
        counts[kind] = counts.get(kind, 0) + 1
    return ",".join(f"gpu:{kind}:{n}" if kind else f"gpu:{n}" for kind, n in counts.items())


def _cores_per_gpu(topo: Topology) -> list[str | None]:
    """Cores= per GPU: exact from the probing machine's sysfs when live; from a text, folded
    by the hyperthread pattern of its CPU lists. None where unknown, and where every GPU
    lists the same CPUs with no sign of hyperthreads (the core count cannot be told)."""
    live = topo.details.get("slurm_cores")
    if live and len(live) == topo.gpus:
        return list(live)
    affinities = [sorted(parse_ranges(a, CPU_IDS)) for a in topo.cpu_affinity]
    folded = cpus.fold_siblings_by_offset(affinities)
    if folded is None:
        known = [a for a in affinities if a]
        if len(known) == topo.gpus and all(a == known[0] for a in known):
            return [None] * topo.gpus
        folded = affinities  # distinct single ranges: one thread per core
    return [format_ranges(c) if c else None for c in folded]
