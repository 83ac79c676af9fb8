#!/usr/bin/env bash
# The CUDA-graph path (`bench collectives --cuda-graph`, nccl-tests' -G) against the eager one
# on this machine's GPUs, with the bare-NCCL floor beside them, per size from 8 B to 1 GB.
#
#   GPUS=0,1 bash tests/gpu/fidelity_check.sh     (default: every visible GPU)
#
# 1. eager and --cuda-graph sweeps of all_reduce, all_gather and reduce_scatter, -b 8 -e 1G
#    -f 2, 20 iterations after 5 warm-ups (the protocol of tests/gpu/compare_nccl_tests.sh),
#    --check on both, out of place and in place wherever torch has both; on 2+ GPUs also
#    --transport pcie;
# 2. the graph path's check can fail: rank 0 corrupts its input (the corrupt_rank test hook)
#    before a checked, graph-replayed call, and every row must then count wrong elements;
# 3. tests/gpu/nccl_floor.py: the same sizes through CuPy's NCCL binding, eager and graph
#    (a reference; skipped with a note where CuPy has no NCCL);
# 4. tests/gpu/fidelity_table.py: the per-size table (also $OUT/fidelity-<transport>.md) and
#    its checks.
# Needs a CUDA build of torch and what tests/gpu/common.sh says. Exit status 0 only when
# every sweep ran and every check held.
set -uo pipefail
source "$(dirname "$0")/common.sh"
export WIREWISE_RUNS="$out/runs" WIREWISE_DB="sqlite:///$out/fidelity.db"
gpus="${GPUS:-$(python3 -c 'import torch; print(",".join(map(str, range(torch.cuda.device_count()))))')}"
n=$(awk -F, '{print NF}' <<< "$gpus")
python3 -c 'import torch; print(f"# torch {torch.__version__}, CUDA {torch.version.cuda}, NCCL {torch.cuda.nccl.version()}, {torch.cuda.get_device_name(0)}")'
echo "# GPUs $gpus; NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE-unset}"
sweep=(-b 8 -e 1G -f 2 --iters 20 --warmup 5 --check)
transports=(default); (( n >= 2 )) && transports+=(pcie)

echo "## 1. eager and --cuda-graph sweeps"
for transport in "${transports[@]}"; do
  for mode in eager graph; do
    flag=(); [[ $mode == graph ]] && flag=(--cuda-graph)
    "${wirewise[@]}" bench collectives --gpus "$gpus" "${sweep[@]}" --transport "$transport" "${flag[@]}" --json \
      > "$out/wirewise-$transport-$mode.json" 2> "$out/wirewise-$transport-$mode.err" \
      || fail "$transport $mode sweep: $(tail -c 600 "$out/wirewise-$transport-$mode.err")"
  done
done

echo "## 2. a corrupted input is counted in graph mode"
python3 - "$gpus" "$out" <<'PY' || fail "the graph-mode check did not count a corrupted input"
import json, sys
from pathlib import Path
from wirewise.jobs.supervise import run_task
from wirewise.task import TaskSpec

gpus = [int(g) for g in sys.argv[1].split(",")]
params = {"ops": ["all_reduce", "all_gather", "reduce_scatter"], "min_bytes": "4K", "max_bytes": "8K", "iters": 2,
          "warmup": 1, "check": True, "cuda_graph": True, "corrupt_rank": 0}
spec = TaskSpec(workload="collective", params=params, gpus=gpus, nproc_per_node=len(gpus), backend="nccl", timeout_s=300)
result = json.loads(run_task(spec, Path(sys.argv[2]) / "runs" / "corrupt").read_text())
wrong = {(r["op"], r["bytes"], r["in_place"]): r["wrong"] for r in result["records"]}
print(f"status {result['status']}, wrong per (op, bytes, in_place): {wrong}")
sys.exit(0 if result["status"] == "ok" and wrong and all(w and w > 0 for w in wrong.values()) else 1)
PY

echo "## 3. bare NCCL (CuPy), eager and graph"
floor=()
if python3 tests/gpu/nccl_floor.py --gpus "$gpus" -b 8 -e $((1 << 30)) --json "$out/nccl-floor.json" > "$out/nccl-floor.txt"; then
  floor=(--floor "$out/nccl-floor.json")
else
  echo "(no bare-NCCL floor: $(tail -n 3 "$out/nccl-floor.txt"))"
fi

echo "## 4. per size"
for transport in "${transports[@]}"; do
  eager="$out/wirewise-$transport-eager.json" graph="$out/wirewise-$transport-graph.json"
  [[ -s $eager && -s $graph ]] || continue
  echo "### transport $transport, $n GPU(s); time per call (us) and busbw (GB/s)"
  extra=(); [[ $transport == default ]] && extra=("${floor[@]}")
  python3 tests/gpu/fidelity_table.py "$eager" "$graph" "${extra[@]}" --markdown "$out/fidelity-$transport.md" \
    || fail "transport $transport: the table's checks"
done
finish
