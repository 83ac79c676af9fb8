"""Campaign speed at scale (issue 9's targets), as real processes:
- `campaign plan` and `campaign submit --dry-run` of a 10,000-task campaign on an 8-GPU NVL
  node: 5 s or less for both together;
- `campaign status` of a 10,000-task campaign, half of its tasks finished: 1 s or less.
Exits 1 when a target is missed. Run: `.venv/bin/python tests/benchmarks/bench_campaign.py`."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WIREWISE = str(Path(sys.executable).with_name("wirewise"))
TOPO = ROOT / "tests" / "fixtures" / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt"
SPEC = {
    "name": "bench-10k",
    "workloads": [{"collectives": {"ops": ["all_reduce"], "min_bytes": "1M", "max_bytes": "1G"}}],
    # packed 2/4/8 and spread 2/4 (spread 8 is the same set as packed 8: skipped) x 2 transports
    "axes": {"gpus": [2, 4, 8], "placement": ["packed", "spread"], "transport": ["default", "pcie"], "repeats": 1000},
    "target": {"executor": "slurm", "tasks_per_element": 8},
}


def timed(args: list[str], env: dict, ok: int = 0) -> tuple[float, subprocess.CompletedProcess]:
    """Seconds of one `wirewise ARGS` run, and the run; it must exit `ok` (a timing of a run that
    failed is no figure)."""
    start = time.perf_counter()
    proc = subprocess.run([WIREWISE, *args], capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode != ok:
        raise SystemExit(f"wirewise {' '.join(args)} failed:\n{proc.stderr}")
    return elapsed, proc


def make_finished_campaign(db: str, folder: Path, env: dict) -> None:
    """A stored 10,000-task campaign (local executor) with every other task finished, built
    through the same store and folder code that `campaign submit` uses."""
    code = f"""
import os
from pathlib import Path
from wirewise.orchestrator.campaign.lifecycle import plan_spec
from wirewise.orchestrator.campaign.folder import CampaignFolder, write_campaign
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.campaigns import create_campaign, set_submitted
spec, plan = plan_spec({str(folder / 'spec.yaml')!r}, {str(TOPO)!r}, None, {db!r})
store = Store({db!r})
root = Path({str(folder / 'campaign')!r})
doc = spec.model_dump(mode='json', exclude_unset=True)
create_campaign(store, spec.name, doc, str(root), 'local', plan.tasks)
set_submitted(store, {{t.spec.task_id: (i // 8, None) for i, t in enumerate(plan.tasks)}})
write_campaign(root, spec.name, doc, plan.to_json(), [t.spec for t in plan.tasks])
folder = CampaignFolder(root)
for i, task in enumerate(plan.tasks):
    if i % 2 == 0:
        folder.attempt_dir(task.spec.task_id, 1).mkdir()
        folder.write_outcome(task.spec.task_id, 'ok', 1)
"""
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "spec.yaml").write_text(yaml.safe_dump(SPEC))
        db = f"sqlite:///{folder / 'bench.db'}"
        env = {**os.environ, "WIREWISE_DB": db, "WIREWISE_RUNS": str(folder / "runs")}
        spec = str(folder / "spec.yaml")
        plan_s, plan = timed(["campaign", "plan", spec, "--topology-file", str(TOPO), "--json"], env)
        tasks = plan.stdout.count('"task_id"')
        # --dry-run asks Slurm for MaxArraySize (off a cluster it assumes Slurm's default)
        dry_s, _ = timed(["campaign", "submit", spec, "--topology-file", str(TOPO), "--dry-run"], env)
        make_finished_campaign(db, folder, env)
        status_s = min(timed(["campaign", "status", "bench-10k", "--json"], env)[0] for _ in range(3))
    print(f"tasks planned: {tasks}")
    print(f"campaign plan: {plan_s:.2f} s; submit --dry-run: {dry_s:.2f} s; together {plan_s + dry_s:.2f} s (target 5 s)")
    print(f"campaign status of {tasks} tasks, half finished: {status_s:.2f} s (target 1 s)")
    return 0 if plan_s + dry_s <= 5 and status_s <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
