#!/usr/bin/env bash
# The results benchmark (tests/benchmarks/bench_results.py) on a GPU host's CPUs: the figures
# of a cluster node's cores beside those of the 2-core machine the suite runs on. The host
# needs wirewise's dependencies importable (the device tool carries them as wheels).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export WIREWISE="python3 -m wirewise.orchestrator" TMPDIR="${TMPDIR:-$(mktemp -d)}"
lscpu | grep -E "^(Model name|CPU\(s\)):" | tee "$out/bench_results.log"
python3 -c "import sqlite3, sys; print('Python', sys.version.split()[0], 'SQLite', sqlite3.sqlite_version)" | tee -a "$out/bench_results.log"
python3 tests/benchmarks/bench_results.py 2>&1 | tee -a "$out/bench_results.log"
