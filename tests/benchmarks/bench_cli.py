"""`wirewise --help` as a whole process: median of 10 runs (target: 0.3 s or less)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

WIREWISE = str(Path(sys.executable).with_name("wirewise"))
RUNS = 10
TARGET_S = 0.3


def main() -> int:
    subprocess.run([WIREWISE, "--help"], capture_output=True, check=True)  # warm the page cache
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([WIREWISE, "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"wirewise --help: median {median * 1000:.0f} ms over {RUNS} runs "
          f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}); target {TARGET_S * 1000:.0f} ms: "
          f"{'ok' if median <= TARGET_S else 'MISSED'}")
    return 0 if median <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
