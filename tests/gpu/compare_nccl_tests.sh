#!/usr/bin/env bash
# wirewise next to nccl-tests on the same GPUs, same sizes, same definitions, per transport.
#
#   GPUS=0,1 NCCL_TESTS=path/to/build bash tests/gpu/compare_nccl_tests.sh
#
# For each transport (default, pcie = NCCL_P2P_DISABLE=1): `wirewise bench collectives` and
# nccl-tests' all_reduce/all_gather/reduce_scatter_perf with -b 1M -e 1G -f 2 -n 20 -w 5,
# both stored in one database per transport (the nccl-tests logs through `wirewise import
# nccl-tests`), then tests/gpu/compare_busbw.py prints them side by side.
# Outputs (databases, logs, JSON) go to $OUT when set. NCCL_NVLS_ENABLE is left alone.
set -euo pipefail

source "$(dirname "$0")/common.sh"
gpus="${GPUS:-0,1}"
n=$(awk -F, '{print NF}' <<< "$gpus")
nccl_tests="${NCCL_TESTS:?set NCCL_TESTS to the folder holding all_reduce_perf}"
sweep=(-b 1M -e 1G -f 2)
topo="$out/topo.txt"
{ nvidia-smi -L; nvidia-smi topo -m; } > "$topo"  # with the GPU names: the same fingerprint as a live probe

for transport in default pcie; do
  db="sqlite:///$out/compare-$transport.db"
  p2p=(); [ "$transport" = pcie ] && p2p=(env NCCL_P2P_DISABLE=1)
  WIREWISE_RUNS="$out/runs" "${wirewise[@]}" bench collectives --gpus "$gpus" "${sweep[@]}" --iters 20 --warmup 5 \
    --transport "$transport" --topology-file "$topo" --db "$db" | tee "$out/wirewise-$transport.txt"
  for op in all_reduce all_gather reduce_scatter; do
    log="$out/nccl-tests-$op-$transport.txt"
    CUDA_VISIBLE_DEVICES="$gpus" CUDA_DEVICE_ORDER=PCI_BUS_ID "${p2p[@]}" \
      "$nccl_tests/${op}_perf" "${sweep[@]}" -n 20 -w 5 -g "$n" > "$log"
    "${wirewise[@]}" import nccl-tests "$log" --op "$op" --topology-file "$topo" --db "$db" > /dev/null
  done
  echo "## transport $transport: busbw GB/s, $n GPUs ($gpus)"
  python3 tests/gpu/compare_busbw.py "$db" || true
done
