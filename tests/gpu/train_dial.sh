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
# when, on each transport where all five ran on 2+ GPUs, memory does not fall along the dial:
# model state per rank strictly as the ZeRO paper's formulas order it (arXiv 1910.02054; Adam,
# N ranks: ddp 16P > zero1 4P+12P/N > zero2 2P+14P/N > zero3 16P/N, fsdp within 10% of zero3's
# 16P/N), and peak memory below ddp's for every sharded strategy with fsdp within 20% of zero3.
# Peak memory is not held to the strict order: it adds activations and each engine's buffers
# (on 2x H200, DeepSpeed's ZeRO-2 peaked exactly where ZeRO-1 did, and ZeRO-3 above ZeRO-2 for
# mistral-1b: README). Also exit 1 when a pcie run did not record NCCL_P2P_DISABLE=1, or a
# default run did.
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


def check_dial(transport, field, strict, fsdp_within):
    """Each step of the dial below the one before (strict) or below ddp; fsdp near zero3."""
    per_rank = {s: max(done[transport, s][field]) for s in (*DIAL, "fsdp")}
    steps = ", ".join(f"{s} {per_rank[s] / GB:.1f}" for s in (*DIAL, "fsdp"))
    pairs = zip(DIAL, DIAL[1:]) if strict else (("ddp", s) for s in (*DIAL[1:], "fsdp"))
    if any(per_rank[a] <= per_rank[b] for a, b in pairs):
        problems.append(f"{transport} {field} not falling along the dial: {steps} GB")
    if abs(per_rank["fsdp"] - per_rank["zero3"]) > fsdp_within * per_rank["zero3"]:
        problems.append(f"{transport} {field}: fsdp not within {fsdp_within:.0%} of zero3: {steps} GB")


for transport in ("default", "pcie"):
    if all((transport, s) in done for s in (*DIAL, "fsdp")) and len(gpus.split(",")) >= 2:
        check_dial(transport, "model_state_bytes", strict=True, fsdp_within=0.10)
        check_dial(transport, "peak_mem_bytes", strict=False, fsdp_within=0.20)
for problem in problems:
    print(f"FAILED: {problem}")
sys.exit(1 if problems else 0)
PY
exit $failed
