#!/usr/bin/env bash
# `wirewise bench collectives` through NCCL on GPU 0, one rank: the default transport and
# --transport pcie, each a 1M..1G sweep of all_reduce, all_gather and reduce_scatter with
# --check. With one rank busbw is 0 by definition (no peer to send to) and algbw is not.
#
# Needs a CUDA build of torch and the repository importable: this script puts its own
# checkout first on PYTHONPATH; sqlalchemy, alembic, pydantic, typer, rich and nvidia-ml-py
# must be importable too (carry them as wheels where there is no registry).
# NCCL_NVLS_ENABLE is left exactly as the environment sets it.
#
# Prints nccl-tests-like tables; the JSON rows, the database and the run folders go to $OUT
# when it is set, else to a temporary folder. Exit status: 0 only when both sweeps ran,
# every size checked with 0 wrong elements, busbw was 0 and algbw positive everywhere.
# WIREWISE overrides the command (default: python3 -m orchestrator).
set -euo pipefail

source "$(dirname "$0")/common.sh"
export WIREWISE_RUNS="$out/runs" WIREWISE_DB="sqlite:///$out/collectives.db"

python3 - <<'EOF'
import torch
assert torch.cuda.is_available(), "no CUDA device visible to torch"
print(f"# torch {torch.__version__}, CUDA {torch.version.cuda}, NCCL {torch.cuda.nccl.version()}, {torch.cuda.get_device_name(0)}")
EOF
echo "# NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE-unset} (left as the environment sets it)"

for transport in default pcie; do
  rows="$out/collectives-$transport.json"
  "${wirewise[@]}" bench collectives --gpus 0 --backend nccl -b 1M -e 1G -f 2 --iters 20 --warmup 5 \
    --check --transport "$transport" --json > "$rows"
  python3 - "$rows" "$transport" <<'EOF'
import json
import sys

from wirewise.orchestrator.cli.bench_collectives import format_report

rows = json.load(open(sys.argv[1]))
transport = sys.argv[2]
print("\n".join(format_report(rows)))
problems = [f"{r['op']} {r['bytes']}: {r['status']} {r['error']}" for r in rows if r["status"] != "ok"]
problems += [f"{r['op']} {r['bytes']}: {r['wrong']} wrong" for r in rows if r["wrong"] != 0]
problems += [f"{r['op']} {r['bytes']}: busbw {r['busbw_gbs']} algbw {r['algbw_gbs']}" for r in rows
             if r["busbw_gbs"] != 0 or not r["algbw_gbs"] > 0]
want_p2p = "1" if transport == "pcie" else None
problems += [f"NCCL_P2P_DISABLE={r['env'].get('NCCL_P2P_DISABLE')} recorded" for r in rows[:1]
             if r["env"].get("NCCL_P2P_DISABLE") != want_p2p]
print(f"# {len(rows)} rows, NCCL env recorded: {rows[0]['env']}")
if problems:
    sys.exit("FAILED: " + "; ".join(problems))
EOF
done
echo "# OK: JSON rows in $out"
