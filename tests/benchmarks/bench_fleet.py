"""Fleets at scale (issue 23's targets), as real processes, on 1,000 simulated nodes:
- a fleet campaign (target.scope each-node) over 1,000 nodes of 3 node types: `campaign plan`
  plus `campaign submit --dry-run` 10 s or less together;
- `campaign status` of that campaign, half of its tasks finished: 2 s or less, with one sacct
  call per poll;
- `fleet pairs` scheduling (the scheduler and verdict, pure functions): the pair tests it takes
  to name 1, 5 and 20 bad nodes among 1,000, beside the n(n-1)/2 of testing every pair.

The 1,000 nodes exist in the store (their wirings, stored as `topo survey` stores them) and in
stand-ins for Slurm's sinfo and sacct on PATH, which print what Slurm 22.05 prints for such a
cluster (`sinfo -h -N -o` with wirewise.orchestrator.slurm.nodes.SINFO_FIELDS: the A100 nodes
in a second partition, untyped GRES and no features there, a few nodes drained with a reason
holding '|', not responding or planned; `sacct -X -n -P -o JobID,State`) and count their calls;
no cluster of 1,000 nodes exists here. Exits 1 when a target is missed.
Run: `.venv/bin/python tests/benchmarks/bench_fleet.py`."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the checkout's tests/ package

from tests.benchmarks.bench_campaign import timed  # noqa: E402
TOPO = ROOT / "tests" / "fixtures" / "topo"
TYPES = {  # node type -> (its wiring, its GRES)
    "nvl": (TOPO / "synthetic-h200-nvl-8gpu-two-quads.txt", "gpu:h200:8(S:0-1)"),
    "sxm": (TOPO / "synthetic-h200-sxm-8gpu-nvswitch.txt", "gpu:h200:8(S:0-1)"),
    "a100": (TOPO / "a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt", "gpu:4"),
}
NODES = 1000
SPEC = {
    "name": "fleet-1k",
    "workloads": [{"collectives": {"ops": ["all_reduce", "all_gather"], "min_bytes": "1M", "max_bytes": "1G"}}],
    "axes": {"gpus": [2, 4, 8], "placement": ["packed", "spread"], "repeats": 2},
    "target": {"executor": "slurm", "scope": "each-node", "partition": "gpu", "tasks_per_element": 8},
}
STUB = """#!/bin/sh
echo "$0 $*" >> {calls}
case "$(basename "$0")" in
  sinfo) cat {folder}/sinfo.txt ;;
  sacct) cat {folder}/sacct.txt ;;
  scontrol) echo "MaxArraySize            = 1001" ;;
esac
"""


def node_types() -> dict[str, str]:
    """node name -> type: 500 NVL, 300 NVSwitch, 200 A100 nodes, mixed along the rows."""
    rng = random.Random(23)
    return {f"gpu{i:04d}": rng.choices(list(TYPES), weights=[5, 3, 2])[0] for i in range(NODES)}


def sinfo_lines(i: int, node: str, kind: str) -> str:
    """The node's lines as sinfo prints them: one per partition (the default marked '*'); every
    97th drained by a person, every 211th not responding, every 13th planned for a job."""
    state, who, reason = ("mixed-" if i % 13 == 0 else "idle"), "Unknown|Unknown", "none"
    if i % 97 == 0:
        state, who, reason = "drained", "alice(1001)|2026-12-01T09:12:44", "PSU swap | ticket 4711"
    elif i % 211 == 0:
        state, who, reason = "idle*", "slurm(64030)|2026-12-01T08:00:00", "Not responding"
    features = "(null)" if kind == "a100" else f"{kind},ib"
    partitions = ("gpu*", "long") if kind == "a100" else ("gpu*",)
    return "".join(f"{node}|{p}|{state}|{TYPES[kind][1]}|{features}|{who}|{reason}\n" for p in partitions)


def fake_slurm(folder: Path, types: dict[str, str]) -> dict:
    """Stand-ins for sinfo, sacct, squeue and scontrol on PATH; the environment that uses them."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    for command in ("sinfo", "sacct", "squeue", "scontrol"):
        path = bin_dir / command
        path.write_text(STUB.format(calls=folder / "calls.txt", folder=folder))
        path.chmod(0o755)
    (folder / "sinfo.txt").write_text("".join(sinfo_lines(i, n, t) for i, (n, t) in enumerate(types.items())))
    (folder / "sacct.txt").write_text("")
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "WIREWISE_DB": f"sqlite:///{folder / 'bench.db'}",
            "WIREWISE_RUNS": str(folder / "runs")}


def store_wirings(types: dict[str, str], env: dict) -> None:
    code = f"""
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.topology import save_topology
from wirewise.topology import read_topology
files = {{name: read_topology(path) for name, path in {dict((t, str(p)) for t, (p, _) in TYPES.items())!r}.items()}}
store = Store()
for node, kind in {types!r}.items():
    save_topology(store, files[kind], node)
"""
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def record_submitted(spec: Path, folder: Path, env: dict) -> int:
    """The campaign as `campaign submit` records it (one plain job per node's bundle, as submitit
    submits a one-bundle array), half of its tasks finished; sacct's answer for the rest."""
    code = f"""
from pathlib import Path
from wirewise.orchestrator.campaign.lifecycle import campaign_folder, plan_spec
from wirewise.orchestrator.campaign.folder import CampaignFolder, write_campaign
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.campaigns import create_campaign, set_submitted
spec, plan = plan_spec({str(spec)!r})
store = Store()
root = campaign_folder(spec)
doc = spec.model_dump(mode="json", exclude_unset=True)
create_campaign(store, spec.name, doc, str(root), "slurm", plan.tasks)
write_campaign(root, spec.name, doc, plan.to_json(), [task.spec for task in plan.tasks])
jobs, placed = {{}}, {{}}
for i, task in enumerate(plan.tasks):
    job = jobs.setdefault(task.spec.hosts[0], str(5000 + len(jobs)))
    placed[task.spec.task_id] = (0, job)
set_submitted(store, placed)
folder = CampaignFolder(root)
for i, task in enumerate(plan.tasks):
    if i % 2 == 0:
        folder.attempt_dir(task.spec.task_id, 1).mkdir()
        folder.write_outcome(task.spec.task_id, "ok", 1)
Path({str(folder / 'sacct.txt')!r}).write_text("".join(f"{{job}}|RUNNING\\n" for job in sorted(set(jobs.values()))))
print(len(plan.tasks))
"""
    return int(subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True).stdout)


def pair_tests_to_name(n: int, k: int, seed: int = 1) -> tuple[int, int, bool, float]:
    """(tests, rounds, the k bad nodes named and no other, seconds) on a simulated fleet: 100 GB/s
    +-3% between healthy nodes, 10 GB/s with a bad one."""
    from wirewise.orchestrator.fleet.schedule import next_round
    from wirewise.orchestrator.fleet.verdict import Measure, judge
    from wirewise.orchestrator.health.rules import default_rules

    tolerance = default_rules().rules.pair_below_fleet.tolerance
    rng = random.Random(seed)
    nodes = [f"gpu{i:04d}" for i in range(n)]
    bad = set(rng.sample(nodes, k))
    measures, rounds = [], 0
    start = time.perf_counter()
    while pairs := next_round(nodes, measures, "quick", tolerance):
        rounds += 1
        measures += [Measure((a, b), 10.0 if {a, b} & bad else 100.0 * rng.uniform(0.97, 1.03)) for a, b in pairs]
    named = set(judge(nodes, measures, tolerance).bad_nodes) == bad
    return len(measures), rounds, named, time.perf_counter() - start


def main() -> int:
    types = node_types()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = fake_slurm(folder, types)
        store_wirings(types, env)
        spec = folder / "fleet.yaml"
        spec.write_text(yaml.safe_dump(SPEC))
        plan_s, plan = timed(["campaign", "plan", str(spec), "--json"], env)
        dry_s, dry = timed(["campaign", "submit", str(spec), "--dry-run", "--json"], env)
        tasks = record_submitted(spec, folder, env)
        (folder / "calls.txt").write_text("")
        status_s = min(timed(["campaign", "status", SPEC["name"], "--json"], env)[0] for _ in range(3))
        calls = (folder / "calls.txt").read_text().splitlines()
    sacct = sum(1 for call in calls if Path(call.split()[0]).name == "sacct")
    counts = {t: list(types.values()).count(t) for t in TYPES}
    print(f"fleet campaign over {NODES} nodes of 3 types ({', '.join(f'{c} {t}' for t, c in counts.items())}): "
          f"{plan.stdout.count(chr(34) + 'task_id' + chr(34))} tasks")
    print(f"campaign plan: {plan_s:.2f} s; submit --dry-run: {dry_s:.2f} s; together {plan_s + dry_s:.2f} s (target 10 s)")
    print(f"campaign status of {tasks} tasks on {NODES} nodes, half finished: {status_s:.2f} s (target 2 s); "
          f"sacct calls in 3 polls: {sacct}")
    print(f"fleet pairs on {NODES} simulated nodes (quick mode), beside every pair's {NODES * (NODES - 1) // 2:,} tests:")
    named_all = True
    for k in (1, 5, 20):
        tests, rounds, named, seconds = pair_tests_to_name(NODES, k)
        named_all &= named
        print(f"  {k:2d} bad node(s): {tests} pair tests in {rounds} rounds ({NODES // 2} + {tests - NODES // 2}), "
              f"{'all named, no healthy node flagged' if named else 'NOT all named'}; scheduling {seconds:.2f} s")
    return 0 if plan_s + dry_s <= 10 and status_s <= 2 and sacct == 3 and named_all else 1


if __name__ == "__main__":
    sys.exit(main())
