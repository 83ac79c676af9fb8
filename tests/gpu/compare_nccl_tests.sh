#!/usr/bin/env bash
# wirewise next to nccl-tests on the same GPUs, sizes, definitions, transport and timing mode.
#
#   GPUS=0,1 NCCL_TESTS=path/to/build bash tests/gpu/compare_nccl_tests.sh
#   GPUS=0,1 NCCL_TESTS_SRC=path/to/nccl-tests bash tests/gpu/compare_nccl_tests.sh   (builds it first)
#
# For each transport (default; pcie = NCCL_P2P_DISABLE=1) and each timing mode (eager; graph =
# wirewise --cuda-graph beside nccl-tests -G 1), over -b 8 -e 1G -f 2, 20 iterations after 5
# warm-ups, with correctness checks on both sides (wirewise --check, nccl-tests -c 1):
#   `wirewise bench collectives`, and all_reduce/all_gather/reduce_scatter_perf imported with
#   `wirewise import nccl-tests --transport T --env ...` (every NCCL_* variable of this shell,
#   which both tools ran with) into one database per transport; then tests/gpu/compare_busbw.py
#   judges them per size (busbw >= 0.95x from 1 MB up, time per call <= 1.3x from 8 B to
#   512 KB), only rows of this fingerprint, GPU count, transport, mode and environment.
# NCCL_TESTS_SRC: an nccl-tests source tree, built against the NCCL that torch loads (the
# nvidia-nccl wheel's headers and library) for sm_90 with CUDA's nvcc.
# Outputs (databases, logs, JSON, per-size tables as compare-<transport>-<mode>.md) go to $OUT
# when set. NCCL_NVLS_ENABLE is left alone. Exit status 0 only when every run ended ok with
# no wrong element and every judged size met its target.
set -uo pipefail

source "$(dirname "$0")/common.sh"
gpus="${GPUS:-0,1}"
n=$(awk -F, '{print NF}' <<< "$gpus")
sweep=(-b 8 -e 1G -f 2)
topo="$out/topo.txt"
{ nvidia-smi -L; nvidia-smi topo -m; } > "$topo"  # with the GPU names: the same fingerprint as a live probe
fingerprint=$(python3 -c 'import sys; from wirewise.topology import read_topology; print(read_topology(sys.argv[1]).fingerprint)' "$topo")
nccl_env=(); while IFS= read -r pair; do nccl_env+=(--env "$pair"); done < <(env | grep '^NCCL_' | sort)

build_nccl_tests() {  # NCCL_TESTS_SRC -> $out/nccl-tests-build with the NCCL torch loads
  local nccl_lib nccl_home="$out/nccl-home"
  nccl_lib=$(python3 -c 'from wirewise.versions import _nccl_libraries as l; print(next(p for p in l() if "/" in p))') || return 1
  mkdir -p "$nccl_home/lib" && ln -sf "$nccl_lib" "$nccl_home/lib/libnccl.so" && ln -sf "$nccl_lib" "$nccl_home/lib/libnccl.so.2"
  ln -sfn "$(dirname "$(dirname "$nccl_lib")")/include" "$nccl_home/include"
  make -C "$NCCL_TESTS_SRC" -j 16 MPI=0 NCCL_HOME="$nccl_home" CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR="$out/nccl-tests-build" > "$out/nccl-tests-build.log" 2>&1 || return 1
  export LD_LIBRARY_PATH="$nccl_home/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "$out/nccl-tests-build"
}
if [[ -z ${NCCL_TESTS:-} ]]; then
  [[ -n ${NCCL_TESTS_SRC:-} ]] || { echo "set NCCL_TESTS (a build folder) or NCCL_TESTS_SRC (a source tree)" >&2; exit 2; }
  NCCL_TESTS=$(build_nccl_tests) || { echo "FAILED: building nccl-tests: $(tail -n 20 "$out/nccl-tests-build.log")" >&2; exit 1; }
fi

for transport in default pcie; do
  db="sqlite:///$out/compare-$transport.db"
  p2p=(); [ "$transport" = pcie ] && p2p=(env NCCL_P2P_DISABLE=1)
  for mode in eager graph; do
    ours=(); theirs=(-G 0); [ "$mode" = graph ] && ours=(--cuda-graph) && theirs=(-G 1)
    WIREWISE_RUNS="$out/runs" "${wirewise[@]}" bench collectives --gpus "$gpus" "${sweep[@]}" --iters 20 --warmup 5 --check \
      --transport "$transport" "${ours[@]}" --topology-file "$topo" --db "$db" > "$out/wirewise-$transport-$mode.txt" \
      || fail "wirewise $transport $mode"
    for op in all_reduce all_gather reduce_scatter; do
      log="$out/nccl-tests-$op-$transport-$mode.txt"
      CUDA_VISIBLE_DEVICES="$gpus" CUDA_DEVICE_ORDER=PCI_BUS_ID "${p2p[@]}" \
        "$NCCL_TESTS/${op}_perf" "${sweep[@]}" -n 20 -w 5 -c 1 "${theirs[@]}" -g "$n" > "$log" || fail "nccl-tests $op $transport $mode"
      grep -q "Out of bounds values : 0 OK" "$log" || fail "nccl-tests $op $transport $mode: wrong values"
      "${wirewise[@]}" import nccl-tests "$log" --op "$op" --transport "$transport" "${nccl_env[@]}" \
        --topology-file "$topo" --db "$db" > /dev/null || fail "importing $log"
    done
    echo "## transport $transport, $mode: $n GPUs ($gpus)"
    graph=(); [ "$mode" = graph ] && graph=(--cuda-graph)
    python3 tests/gpu/compare_busbw.py "$db" --fingerprint "$fingerprint" --gpus "$n" --transport "$transport" "${graph[@]}" \
      --markdown "$out/compare-$transport-$mode.md" || fail "targets: transport $transport, $mode"
  done
done
finish
