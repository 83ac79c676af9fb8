"""`wirewise doctor --prolog` as slurmd runs it before a job: its cost per job (docs/operators.md).

As slurmd runs it: a whole process with a bare environment (SLURMD_NODENAME, SLURM_JOB_ID,
SLURM_JOB_GPUS=0,1, TMPDIR, HOME), in slurmd's working folder, the database and the rules from
the site's configuration file (WIREWISE_SITE_CONFIG names it, as /etc/wirewise/config.toml
would). The site's rules are the test cluster's prolog for CPU ranks (all_reduce 4M, 10
iterations after 1 warm-up, gloo, include_cpu: a CPU-only node cannot finish the shipped
64M-256M within 30 s). The stored history is the prolog's own: WARM_UP runs store the results
its baseline rests on, then each of RUNS runs is timed, judging against that history and
adding to it. No GPU here: NVML is the fake of tests/report/fake_nvml (an H200 NVL quad), the
collective two gloo CPU ranks on the job's "GPUs" 0,1. Then a job holding one GPU (no
collective: the start of the process and its reads). A GPU figure: tests/gpu/health_check.sh
times the shipped prolog on a real node.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WIREWISE = str(Path(sys.executable).with_name("wirewise"))
FAKE_NVML = ROOT / "tests" / "report" / "fake_nvml"
NODE = "n1"
WARM_UP, RUNS = 3, 7
RULES = {"include_cpu": True, "prolog": {"min_bytes": "4M", "max_bytes": "4M", "iters": 10, "warmup": 1,
                                         "backend": "gloo", "time_limit_s": 60}}


def slurmd_env(folder: Path, gpus: str = "0,1") -> dict[str, str]:
    return {"SLURMD_NODENAME": NODE, "SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": gpus, "TMPDIR": str(folder / "spool" / "tmp"),
            "HOME": str(folder / "home"), "PATH": "/usr/bin:/bin", "WIREWISE_SITE_CONFIG": str(folder / "config.toml"),
            "PYTHONPATH": os.pathsep.join([str(FAKE_NVML), str(ROOT)]), "WIREWISE_FAKE_NVML": "{}"}


def prolog(folder: Path, gpus: str = "0,1") -> tuple[float, dict]:
    """One prolog's seconds and outcome; it must exit 0 (a job that runs)."""
    env = slurmd_env(folder, gpus)
    start = time.perf_counter()
    proc = subprocess.run([WIREWISE, "doctor", "--prolog", "--json"], cwd=folder / "spool", env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    outcome = json.loads(proc.stdout) if proc.stdout.strip() else {}
    if proc.returncode != 0 or outcome.get("healthy") is False or (gpus == "0,1" and not outcome.get("judged")):
        raise SystemExit(f"doctor --prolog exited {proc.returncode}, not a healthy job:\n{proc.stdout}\n{proc.stderr}")
    return seconds, outcome


def main() -> int:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "spool" / "tmp").mkdir(parents=True)
        db = f"sqlite:///{folder / 'wirewise.db'}"
        (folder / "rules.yaml").write_text(yaml.safe_dump(RULES))
        (folder / "config.toml").write_text(f'db = "{db}"\nrules = "{folder / "rules.yaml"}"\n')
        setup = {**os.environ, **slurmd_env(folder)}
        subprocess.run([WIREWISE, "db", "upgrade"], env=setup, check=True, capture_output=True)
        subprocess.run([WIREWISE, "topo", "save", "--node", NODE], env=setup, check=True, capture_output=True)
        for _ in range(WARM_UP):
            prolog(folder)
        times = [prolog(folder)[0] for _ in range(RUNS)]
        stored = subprocess.run([WIREWISE, "results", "--json", "--include-cpu", "--node", NODE], env=setup,
                                capture_output=True, text=True, check=True)
        history = sum(row["count"] for row in json.loads(stored.stdout))
        print(f"doctor --prolog as slurmd runs it (2 gloo CPU ranks, all_reduce 4M x 10, SQLite, {history} results stored "
              f"by then): median {statistics.median(times):.1f} s per job over {RUNS} runs (min {min(times):.1f}, "
              f"max {max(times):.1f}); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        alone = [prolog(folder, "0")[0] for _ in range(RUNS)]
        print(f"doctor --prolog for a job holding one GPU (no collective): median {statistics.median(alone):.1f} s over "
              f"{RUNS} runs (min {min(alone):.1f}, max {max(alone):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
