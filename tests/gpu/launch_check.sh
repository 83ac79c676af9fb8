#!/usr/bin/env bash
# `wirewise launch` on a GPU node: the Trainer example (docs/examples/finetune.py) started with
# the advice, then with each strategy named, on every GPU this node has; the job's own figures
# (tokens/s, step time, peak memory per rank) stored as source=job and read back as history.
#
#   bash tests/gpu/launch_check.sh            (MODEL=mistral-1b BATCH=4 SEQ=1024 STEPS=24)
#   STRATEGIES="auto ddp" bash tests/gpu/launch_check.sh
#
# Runs, in order: auto (the advice), ddp, then fsdp on 2+ GPUs (on one GPU accelerate applies
# no FSDP: one process has nothing to shard over), zero2 and zero3 where deepspeed imports.
# Each run must: exit 0; have run what was asked (the example's report: accelerate's own
# distributed type and ZeRO stage, as the record's strategy); have the configuration the script's
# wirewise.advice() named in its run folder; have a falling loss; and have stored its record
# (source job) in the database by itself (`wirewise collect` of its run folder adds nothing).
# Then `wirewise results --source job` lists every run, and on 2+ GPUs `wirewise place --model`
# on this node's GPUs predicts the strategies that ran from them (basis measured, source job);
# `wirewise estimate` calibrates their memory on the jobs' peaks (source job) on any count.
#
# Needs a CUDA build of torch, transformers and accelerate, and what tests/gpu/common.sh says:
# sqlalchemy, alembic, pydantic, typer, rich, pyyaml, nvidia-ml-py (deepspeed and hjson for the
# ZeRO runs), carried as wheels where there is no registry. A TORCH_CUDA_ARCH_LIST like 9.0a,
# which DeepSpeed's op builder cannot parse, is set to 9.0 for the runs. Each run is cut at
# RUN_TIMEOUT seconds (300); the whole script takes about 4 minutes on one H200.
#
# $OUT (else a temporary folder) gets launch_check.txt (the table and the checks),
# launch_check.json (every run's report and record) and launch_check_logs.tgz (the run folders
# and each run's output). Exit status 0 only when every check held.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
work="$(mktemp -d)"
mkdir -p "$out"
export WIREWISE_RUNS="$work/runs" WIREWISE_DB="sqlite:///$work/launch.db" HF_HUB_OFFLINE=1
[[ "${TORCH_CUDA_ARCH_LIST:-}" =~ ^[0-9.]+[a-z]+$ ]] && export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST%%[a-z]*}"
model="${MODEL:-mistral-1b}" batch="${BATCH:-4}" seq="${SEQ:-1024}" steps="${STEPS:-24}"
n_gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())') || n_gpus=0
(( n_gpus > 0 )) || { echo "no CUDA device visible to torch" >&2; exit 1; }
if [[ -z "${STRATEGIES:-}" ]]; then
  STRATEGIES="auto ddp"
  (( n_gpus >= 2 )) && STRATEGIES+=" fsdp"
  python3 -c 'import deepspeed' 2>/dev/null && STRATEGIES+=" zero2 zero3"
fi
echo "# $n_gpus GPU(s): $(python3 -c 'import torch; print(torch.cuda.get_device_name(0))'); $model, batch $batch x $seq, $steps steps; runs: $STRATEGIES"

for strategy in $STRATEGIES; do
  timeout "${RUN_TIMEOUT:-300}" "${wirewise[@]}" launch --model "$model" --batch-size "$batch" --seq-len "$seq" \
    --strategy "$strategy" -- docs/examples/finetune.py --model "$model" --batch-size "$batch" --seq-len "$seq" \
    --steps "$steps" --lr 3e-4 --report "$work/$strategy.report.json" > "$work/$strategy.log" 2>&1
  echo "$?" > "$work/$strategy.rc"
  echo "# $strategy: exit $(cat "$work/$strategy.rc")"
done
"${wirewise[@]}" results --source job --json > "$work/results.json" 2> "$work/results.err"
"${wirewise[@]}" place --gpus "$n_gpus" --model "$model" --seq-len "$seq" --batch-size "$batch" --json \
  > "$work/place.json" 2> "$work/place.err"
"${wirewise[@]}" estimate --model "$model" --gpus "$n_gpus" --seq-len "$seq" --batch-size "$batch" --json \
  > "$work/estimate.json" 2> "$work/estimate.err"

python3 - "$work" "$out" "$n_gpus" "$STRATEGIES" "${wirewise[@]}" <<'PY' > "$out/launch_check.txt"
import json
import subprocess
import sys
from pathlib import Path

import yaml

work, out, n_gpus, asked, wirewise = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(), sys.argv[5:]
from wirewise.units import GB  # memory in GB of 10^9 bytes, as wirewise says it everywhere
ENGINE = {"ddp": ("MULTI_GPU", "NO"), "fsdp": ("FSDP",), "zero1": ("DEEPSPEED",), "zero2": ("DEEPSPEED",),
          "zero3": ("DEEPSPEED",)}
problems, runs = [], {}


def load(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


print(f"{'run':6} {'advised':8} {'ran':6} {'accelerate':22} {'tokens/s':>10} {'step ms':>8} {'peak GB/rank':>16} "
      f"{'loss':>13} stored")
for name in asked:
    rc = (work / f"{name}.rc").read_text().strip()
    report = load(work / f"{name}.report.json")
    log_tail = (work / f"{name}.log").read_text(errors="replace")[-1500:]
    if rc != "0" or report is None or not report.get("result_file"):
        problems.append(f"{name}: exit {rc}, report {'missing' if report is None else 'without a result file'}:\n{log_tail}")
        print(f"{name:6} FAILED (exit {rc})")
        continue
    result = load(Path(report["result_file"]))
    record = result["records"][0]
    seen = report["accelerate"]
    kind = seen["distributed_type"].removeprefix("DistributedType.")
    advice = report["advice"]
    run_dir = Path(report["result_file"]).parent
    ran_with = yaml.safe_load((run_dir / "accelerate.yaml").read_text())
    again = subprocess.run([*wirewise, "collect", str(run_dir), "--json"], capture_output=True, text=True)
    new = json.loads(again.stdout)["new_records"] if again.returncode == 0 else None
    runs[name] = {"report": report, "record": record}
    wanted = advice["advised"] if name == "auto" else name
    peaks = "/".join(f"{b / GB:.1f}" for b in record["peak_mem_bytes"])
    losses = report["losses"]
    print(f"{name:6} {advice['advised'] or '-':8} {record['strategy']:6} {kind + (' z' + str(seen['zero_stage']) if seen.get('zero_stage') else ''):22} "
          f"{record['tokens_per_s']:10.0f} {record['step_time_s'] * 1e3:8.1f} {peaks:>16} "
          f"{losses[0]:6.2f}>{losses[-1]:<6.2f} {'yes' if new == 0 else 'NO'}")
    if record["strategy"] != wanted or advice["strategy"] != wanted:
        problems.append(f"{name}: asked {wanted}, the advice in the job says {advice['strategy']}, recorded {record['strategy']}")
    if kind not in ENGINE.get(wanted, (kind,)):
        problems.append(f"{name}: accelerate built {kind} for {wanted}")
    if wanted.startswith("zero") and seen.get("zero_stage") != int(wanted[-1]):
        problems.append(f"{name}: DeepSpeed ran ZeRO stage {seen.get('zero_stage')} for {wanted}")
    if report["config_in_run_dir"] != ran_with:
        problems.append(f"{name}: the run folder's accelerate.yaml is not the configuration the script's advice names")
    if not losses or losses[-1] >= losses[0]:
        problems.append(f"{name}: the loss did not fall ({losses})")
    if new != 0:
        problems.append(f"{name}: the job did not store its own record (collect afterwards added {new}: {again.stderr[-300:]})")
    if record["source"] != "job" or record["gpu_count"] != n_gpus or not record["fingerprint"]:
        problems.append(f"{name}: record source {record['source']}, {record['gpu_count']} GPU(s), fingerprint {record['fingerprint']}")

listed = load(work / "results.json") or []
stored = sum(row["count"] for row in listed if row.get("status") == "ok")
print(f"\nwirewise results --source job: {stored} stored run(s) of {len(runs)}")
if stored != len(runs):
    problems.append(f"results --source job lists {stored} run(s), {len(runs)} ran")
placed = load(work / "place.json")
if placed:
    for row in placed["advice"]["strategies"]:
        tokens = row["predicted_tokens_per_s"]
        print(f"place: {row['strategy']:6} {row['basis']:8} {'-' if tokens is None else f'{tokens:,.0f}':>10} tokens/s "
              f"({row['results']} result(s) of {', '.join(row['sources']) or 'the model'})")
    ran = {r["record"]["strategy"] for r in runs.values()}
    measured = {row["strategy"] for row in placed["advice"]["strategies"] if row["basis"] == "measured" and "job" in row["sources"]}
    if n_gpus >= 2 and not ran <= measured:
        problems.append(f"place --model: {sorted(ran - measured)} ran but are not predicted from the jobs (measured, source job)")
    print(f"place: advises {placed['strategy']} ({'; '.join(placed['advice']['reasons'])})")
else:
    problems.append(f"place --model failed: {(work / 'place.err').read_text()[-300:]}")
estimated = load(work / "estimate.json")
if estimated:
    for row in estimated["strategies"]:
        cal = row["calibration"]
        print(f"estimate: {row['strategy']:6} {row['total_gb']:7.2f} GB" + (
            f" (x{cal['factor']} on {cal['results']} peak(s), median {cal['measured_peak_gb']} GB, source {', '.join(cal['sources'])})"
            if cal else " (model)"))
        if row["strategy"] in {r["record"]["strategy"] for r in runs.values()} and not (cal and "job" in cal["sources"]):
            problems.append(f"estimate: {row['strategy']} ran but its memory is not calibrated on the job's peaks")
else:
    problems.append(f"estimate failed: {(work / 'estimate.err').read_text()[-300:]}")

(out / "launch_check.json").write_text(json.dumps(runs, indent=1, default=str))
for problem in problems:
    print(f"FAILED: {problem}")
print("# OK: every check held" if not problems else f"# {len(problems)} check(s) FAILED")
sys.exit(1 if problems else 0)
PY
status=$?
cat "$out/launch_check.txt"
tar -czf "$out/launch_check_logs.tgz" -C "$work" . 2>/dev/null
(( status == 0 )) || fail "see $out/launch_check.txt"
finish
