#!/usr/bin/env bash
# The article's dial on several GPUs: ddp, zero1, zero2, zero3 and fsdp on the same model and
# GPUs, on the fast wire (NCCL as configured) and with NVLink peer-to-peer off
# (NCCL_P2P_DISABLE=1, traffic through host memory over PCIe): tokens/s, peak memory and
# model-state bytes per rank, side by side.
#
#   GPUS=0,1 MODEL=mistral-1b bash tests/gpu/train_dial.sh
#   (also BATCH, SEQ, STEPS, and TRANSPORTS / STRATEGIES to run a subset, e.g. TRANSPORTS=default)
#
# Records and the database go to $OUT when set. Exit status 1 when any run did not end ok, or
# when, on each transport where all five ran on 2+ GPUs, the memory does not fall along the
# dial (ZeRO paper, arXiv 1910.02054; model state per rank with Adam, N ranks: ddp 16P >
# zero1 4P+12P/N > zero2 2P+14P/N > zero3 16P/N, fsdp = zero3's 16P/N within 10%; peak memory
# in the same order, fsdp within 20% of zero3), or when a pcie run did not record
# NCCL_P2P_DISABLE=1 (or a default run did).
set -uo pipefail
source "$(dirname "$0")/common.sh"
gpus="${GPUS:-0,1}"
model="${MODEL:-mistral-1b}"
export WIREWISE_RUNS="$out/runs" WIREWISE_DB="sqlite:///$out/dial.db" HF_HUB_OFFLINE=1
failed=0
for transport in ${TRANSPORTS:-default pcie}; do
  p2p=(); [ "$transport" = pcie ] && p2p=(env NCCL_P2P_DISABLE=1)
  for strategy in ${STRATEGIES:-ddp zero1 zero2 zero3 fsdp}; do
    "${p2p[@]}" "${wirewise[@]}" bench train --model "$model" --strategy "$strategy" --gpus "$gpus" \
      --batch-size "${BATCH:-4}" --seq-len "${SEQ:-1024}" --steps "${STEPS:-6}" --warmup-steps 2 --timeout 300 \
      --json > "$out/dial-$transport-$strategy.json" 2> "$out/dial-$transport-$strategy.err" || failed=1
  done
done
python3 - "$out" "$model" "$gpus" <<'PY' || failed=1
import json, sys
from pathlib import Path
out, model, gpus = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
GB = 1e9
DIAL = ("ddp", "zero1", "zero2", "zero3")  # strictly less memory per rank at each step
problems, done = [], {}
print(f"## {model} on GPUs {gpus}")
print(f"{'transport':9} {'strategy':8} {'status':7} {'tokens/s':>9} {'vs ddp':>7} {'peak GB/rank':>13} {'state GB/rank':>14}")
for transport in ("default", "pcie"):
    base = None
    for strategy in ("ddp", "zero1", "zero2", "zero3", "fsdp"):
        path = out / f"dial-{transport}-{strategy}.json"
        if not path.exists():
            continue  # not asked for (TRANSPORTS / STRATEGIES)
        try:
            r = json.loads(path.read_text())
        except (OSError, ValueError):
            print(f"{transport:9} {strategy:8} missing  {(out / f'dial-{transport}-{strategy}.err').read_text()[-200:]!r}")
            continue
        if r["status"] != "ok":
            print(f"{transport:9} {strategy:8} {r['status']:7} {(r.get('error') or '').splitlines()[0][:100] if r.get('error') else ''}")
            continue
        base = base or (r["tokens_per_s"] if strategy == "ddp" else None)
        rel = f"{r['tokens_per_s'] / base:.2f}" if base else "-"
        peak = "/".join(f"{b / GB:.1f}" for b in r["peak_mem_bytes"])
        state = "/".join(f"{b / GB:.1f}" for b in r["model_state_bytes"])
        print(f"{transport:9} {strategy:8} ok      {r['tokens_per_s']:9.0f} {rel:>7} {peak:>13} {state:>14}")
        done[transport, strategy] = r
        if (r["env"].get("NCCL_P2P_DISABLE") == "1") != (transport == "pcie"):
            problems.append(f"{transport} {strategy}: NCCL_P2P_DISABLE={r['env'].get('NCCL_P2P_DISABLE')} recorded")


def check_order(transport, field, fsdp_within):
    per_rank = {s: max(done[transport, s][field]) for s in (*DIAL, "fsdp")}
    steps = [f"{s} {per_rank[s] / GB:.1f}" for s in (*DIAL, "fsdp")]
    if any(per_rank[a] <= per_rank[b] for a, b in zip(DIAL, DIAL[1:])):
        problems.append(f"{transport} {field} not falling along the dial: {', '.join(steps)} GB")
    if abs(per_rank["fsdp"] - per_rank["zero3"]) > fsdp_within * per_rank["zero3"]:
        problems.append(f"{transport} {field}: fsdp not within {fsdp_within:.0%} of zero3: {', '.join(steps)} GB")


for transport in ("default", "pcie"):
    if all((transport, s) in done for s in (*DIAL, "fsdp")) and len(gpus.split(",")) >= 2:
        check_order(transport, "model_state_bytes", 0.10)
        check_order(transport, "peak_mem_bytes", 0.20)
for problem in problems:
    print(f"FAILED: {problem}")
sys.exit(1 if problems else 0)
PY
exit $failed
