"""`wirewise import nccl-tests` of large logs, as a whole process: peak memory (the largest
resident set, /usr/bin/time -v) and wall time, printed (issue 29: a 20 MB log held 1.3 GB and
took 87 s; 200 MB ran out of memory). The reader keeps each run's rows, never the text, and
stores records a batch at a time: memory is a constant plus the rows kept (target: at most
1 GiB for a 200 MB log, whatever it holds).

Two logs of SIZE_MB each (`python tests/benchmarks/bench_import_nccl_tests.py [SIZE_MB]`):
- runs: the 8-GPU all_reduce log of tests/fixtures/nccl-tests appended to itself, each copy
  its own run (its pids changed), every row stored: the worst case, rows all the way;
- noise: one run whose header and rows are separated by NCCL_DEBUG=INFO lines (a log of a
  large job with NCCL_DEBUG_SUBSYS=ALL), a few rows stored.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WIREWISE = str(Path(sys.executable).with_name("wirewise"))
LOG = ROOT / "tests" / "fixtures" / "nccl-tests" / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt"
TARGET_BYTES = 1024**3
INFO = "node-17:2241:2263 [3] NCCL INFO Channel 07/0 : 3[3] -> 4[4] via P2P/CUMEM/read\n"


def write_runs(path: Path, size: int) -> None:
    text = LOG.read_text()
    with path.open("w") as out:
        copy = 0
        while out.tell() < size:
            copy += 1
            out.write(re.sub(r"Pid\s+(\d+)", lambda m: f"Pid {int(m.group(1)) + copy * 100}", text))


def write_noise(path: Path, size: int) -> None:
    head, rows = LOG.read_text().split("#       size", 1)
    block = INFO * 10_000
    with path.open("w") as out:
        out.write(head)
        while out.tell() < size:
            out.write(block)
        out.write("#       size" + rows)


def measure(log: Path, db: str) -> tuple[float, float, dict]:
    """(peak resident MB, wall seconds, the summary's counts) of one import."""
    proc = subprocess.run(["/usr/bin/time", "-v", WIREWISE, "import", "nccl-tests", str(log), "--json", "--db", db],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"import of {log.name} failed: {proc.stderr[-2000:]}")
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", proc.stderr).group(1)
    seconds = sum(float(part) * 60**i for i, part in enumerate(reversed(wall.split(":"))))
    import json

    summary = json.loads(proc.stdout)
    return peak_kb / 1024, seconds, {"runs": len(summary["sections"]), "rows": summary["rows"], "new": summary["new"]}


def main() -> int:
    size = int(float(sys.argv[1]) * 1024**2) if len(sys.argv) > 1 else 200 * 1024**2
    worst = 0.0
    with tempfile.TemporaryDirectory() as folder:
        for kind, write in (("runs", write_runs), ("noise", write_noise)):
            log = Path(folder) / f"{kind}-all_reduce.log"
            write(log, size)
            peak, seconds, counts = measure(log, f"sqlite:///{folder}/{kind}.db")
            worst = max(worst, peak)
            print(f"import nccl-tests, {log.stat().st_size / 1024**2:.0f} MB log of {kind}: peak RSS {peak:.0f} MB, "
                  f"{seconds:.1f} s; {counts['runs']} runs, {counts['rows']} rows read, {counts['new']} stored; "
                  f"target {TARGET_BYTES // 1024**2} MB: {'ok' if peak * 1024**2 <= TARGET_BYTES else 'MISSED'}", flush=True)
            log.unlink()
    return 0 if worst * 1024**2 <= TARGET_BYTES else 1


if __name__ == "__main__":
    sys.exit(main())
