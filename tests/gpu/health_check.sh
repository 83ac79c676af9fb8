#!/usr/bin/env bash
# `wirewise doctor --health-check` and `--prolog` on a real GPU node, as slurmd would run them
# (here without Slurm: nothing is drained, so only what they find and how long they take is
# checked): the node's wiring stored first, then the health check (NVML and the node's verdicts,
# no torch, no GPU work; target at most 10 s, slurmd kills it at 60), then the prolog's short
# all_reduce on the GPUs found (SLURM_JOB_GPUS as Slurm hands them over; at most 30 s) three
# times, each judged against the ones before (min_results 1 here, so the second run has a
# baseline). Prints each one's output, exit code and wall time.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
folder="$(mktemp -d)"
db="sqlite:///$folder/health.db"
log="$out/health_check.log"
gpus=$(python3 -c "import pynvml as n; n.nvmlInit(); print(n.nvmlDeviceGetCount())") || fail "NVML"
job_gpus=$(seq -s, 0 $((gpus - 1)))
printf 'min_results: 1\n' > "$folder/rules.yaml"
echo "# $(hostname): $gpus GPU(s), SLURM_JOB_GPUS=$job_gpus" | tee "$log"

timed() {  # LABEL CODE_LIMIT ARGS...: run wirewise, print its output, exit code and seconds
  local label=$1 limit=$2; shift 2
  local start end code
  start=$(date +%s.%N)
  "${wirewise[@]}" "$@" > "$out/$label.out" 2> "$out/$label.err"; code=$?
  end=$(date +%s.%N)
  echo "## $label: exit $code, $(python3 -c "print(f'{$end - $start:.2f}')") s" | tee -a "$log"
  cat "$out/$label.out" "$out/$label.err" | tee -a "$log"
  (( code <= limit )) || fail "$label exited $code"
}

timed topo-save 0 topo save --db "$db"
timed health-check 1 doctor --health-check --report-only --json --db "$db" --rules "$folder/rules.yaml"
timed health-check-again 1 doctor --health-check --report-only --json --db "$db" --rules "$folder/rules.yaml"
export SLURM_JOB_GPUS=$job_gpus SLURMD_NODENAME=$(hostname -s)  # what slurmd hands the prolog
for run in 1 2 3; do
  timed "prolog-$run" 1 doctor --prolog --json --db "$db" --rules "$folder/rules.yaml"
done
unset SLURM_JOB_GPUS SLURMD_NODENAME
timed doctor 1 doctor --json --db "$db" --rules "$folder/rules.yaml"
# The figures the lead reads: each mode's seconds from its own JSON, against its limit.
python3 - "$out" <<'PY' | tee -a "$log" || fail "a mode did not print its JSON or ran past its limit"
import json, sys
from pathlib import Path
out, bad = Path(sys.argv[1]), 0
for name, limit in (("health-check", 10), ("health-check-again", 10), ("prolog-1", 30), ("prolog-2", 30), ("prolog-3", 30)):
    doc = json.loads((out / f"{name}.out").read_text())
    print(f"{name}: healthy {doc['healthy']}, {doc['seconds']:.2f} s (limit {limit} s), "
          f"findings {[f['reason'] for f in doc['findings']]}, notes {doc['notes']}")
    bad += doc["seconds"] > limit
sys.exit(1 if bad else 0)
PY
finish
