#!/usr/bin/env bash
# `wirewise bench collectives` through NCCL with --check on every rank count the machine has
# (GPUs 0..k-1 for k = 1..N; GPUS=0,1,... chooses the GPUs): the default transport and
# --transport pcie, each a 1M..1G sweep of all_reduce, all_gather and reduce_scatter, out of
# place and in place where torch has both. With one rank busbw is 0 by definition (no peer
# to send to) and algbw is not; with two or more ranks both must be positive.
#
# Needs a CUDA build of torch and what tests/gpu/common.sh says (sqlalchemy, alembic,
# pydantic, typer, rich and nvidia-ml-py importable; carry them as wheels where there is no
# registry). NCCL_NVLS_ENABLE is left exactly as the environment sets it.
#
# Prints nccl-tests-like tables; the JSON rows, the database and the run folders go to $OUT
# when it is set, else to a temporary folder. Exit status: 0 only when every sweep ran,
# every size checked with 0 wrong elements, busbw/algbw were as above, both forms of
# all_gather and reduce_scatter were there, NCCL_P2P_DISABLE was recorded under pcie, and every
# row recorded the transport NCCL carried (transport_carried: local on one rank, peer-to-peer or
# NVLS on the default transport, no peer-to-peer under pcie), its INFO lines kept out of the
# ranks' own logs.
# WIREWISE overrides the command (default: python3 -m wirewise.orchestrator).
set -uo pipefail

source "$(dirname "$0")/common.sh"
export WIREWISE_RUNS="$out/runs" WIREWISE_DB="sqlite:///$out/collectives.db"

python3 - <<'PY' || exit 1
import torch
assert torch.cuda.is_available(), "no CUDA device visible to torch"
print(f"# torch {torch.__version__}, CUDA {torch.version.cuda}, NCCL {torch.cuda.nccl.version()}, {torch.cuda.get_device_name(0)}")
PY
echo "# NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE-unset} (left as the environment sets it)"
all_gpus="${GPUS:-$(python3 -c 'import torch; print(",".join(map(str, range(torch.cuda.device_count()))))')}"
IFS=, read -r -a gpu_list <<< "$all_gpus"

for ((k = 1; k <= ${#gpu_list[@]}; k++)); do
  gpus=$(IFS=,; echo "${gpu_list[*]:0:k}")
  for transport in default pcie; do
    rows="$out/collectives-$k-$transport.json"
    echo "## $k rank(s) on GPUs $gpus, transport $transport"
    if ! "${wirewise[@]}" bench collectives --gpus "$gpus" --backend nccl -b 1M -e 1G -f 2 --iters 20 --warmup 5 \
        --check --transport "$transport" --json > "$rows"; then
      fail "$k rank(s), $transport: the sweep failed"
      continue
    fi
    python3 - "$rows" "$transport" "$k" <<'PY' || fail "$k rank(s), $transport: the checks"
import json
import sys

from wirewise.orchestrator.report.collectives import format_report

rows = json.load(open(sys.argv[1]))
transport, ranks = sys.argv[2], int(sys.argv[3])
print("\n".join(format_report(rows)))
problems = [f"{r['op']} {r['bytes']}: {r['status']} {r['error']}" for r in rows if r["status"] != "ok"]
problems += [f"{r['op']} {r['bytes']}: {r['wrong']} wrong" for r in rows if r["wrong"] != 0]
problems += [f"{r['op']} {r['bytes']}: busbw {r['busbw_gbs']} algbw {r['algbw_gbs']}" for r in rows
             if not r["algbw_gbs"] > 0 or (r["busbw_gbs"] == 0) != (ranks == 1)]
for op in ("all_gather", "reduce_scatter"):
    forms = sorted({r["in_place"] for r in rows if r["op"] == op})
    if forms != [False, True]:
        problems.append(f"{op}: in_place values {forms}, want both forms")
want_p2p = "1" if transport == "pcie" else None
problems += [f"NCCL_P2P_DISABLE={r['env'].get('NCCL_P2P_DISABLE')} recorded" for r in rows[:1]
             if r["env"].get("NCCL_P2P_DISABLE") != want_p2p]
# What the wire carried (issue 30 item 6), read from each rank's NCCL INFO file: one rank connects
# nothing ("local"); two or more on the default transport go peer-to-peer or NVLS, never through
# host memory or a network on one node; --transport pcie (NCCL_P2P_DISABLE=1) never peer-to-peer.
carried = {r["transport_carried"] for r in rows}
print(f"# transport asked {transport}, carried {sorted(carried, key=str)}")
for value in carried:
    if value is None:
        problems.append("transport_carried is null: the ranks' NCCL INFO files were not read")
    elif ranks == 1 and value != "local":
        problems.append(f"one rank carried {value}, want local")
    elif ranks > 1 and transport == "default" and ("SHM" in value or "NET/" in value or not ("P2P/" in value or "NVLS" in value)):
        problems.append(f"default transport carried {value}: off NVLink")
    elif ranks > 1 and transport == "pcie" and "P2P/" in value:
        problems.append(f"--transport pcie carried {value}: peer-to-peer was on")
print(f"# {len(rows)} rows, NCCL env recorded: {rows[0]['env']}")
if problems:
    sys.exit("FAILED: " + "; ".join(problems))
PY
  done
done
# NCCL's INFO lines went to the run folders' nccl-rank<N>.log, not to the ranks' own logs (where
# the environment sets NCCL_DEBUG or NCCL_DEBUG_FILE, that setting holds and this is not checked)
if [[ -z ${NCCL_DEBUG-}${NCCL_DEBUG_FILE-} ]]; then
  if find "$out/runs" -name 'rank*.log' -exec grep -l "NCCL INFO" {} + | grep -q .; then
    fail "NCCL INFO lines in a rank's own log (they belong in nccl-rank<N>.log)"
  fi
  find "$out/runs" -name nccl-rank0.log | grep -q . || fail "no nccl-rank0.log in the run folders"
fi
finish
