#!/usr/bin/env bash
# `wirewise doctor` on a real GPU node: what NVML reports for PCIe (generation, width,
# performance state) with the GPUs idle and under a host-to-device copy load, and what the
# doctor's live checks make of each. The PCIe generation drops when a GPU idles; a check
# that reads it then must not call a healthy node degraded.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
db="sqlite:///$(mktemp -d)/doctor.db"
sample() {  # one line per GPU: what NVML says now
  python3 - "$1" <<'PY'
import sys, pynvml as n
n.nvmlInit()
for i in range(n.nvmlDeviceGetCount()):
    h = n.nvmlDeviceGetHandleByIndex(i)
    print(f"{sys.argv[1]}: GPU {i} pstate P{n.nvmlDeviceGetPerformanceState(h)} util {n.nvmlDeviceGetUtilizationRates(h).gpu}% "
          f"PCIe gen {n.nvmlDeviceGetCurrPcieLinkGeneration(h)}/{n.nvmlDeviceGetMaxPcieLinkGeneration(h)} "
          f"(GPU max {n.nvmlDeviceGetGpuMaxPcieLinkGeneration(h)}) x{n.nvmlDeviceGetCurrPcieLinkWidth(h)}/{n.nvmlDeviceGetMaxPcieLinkWidth(h)}")
PY
}
"${wirewise[@]}" topo save --db "$db" > /dev/null || fail "topo save"
sample idle | tee "$out/doctor_check.log"
"${wirewise[@]}" doctor --json --db "$db" > "$out/doctor_idle.json"; code=$?
echo "doctor at idle: exit $code" | tee -a "$out/doctor_check.log"; (( code <= 1 )) || fail "doctor at idle exited $code"
python3 - <<'PY' &
import time, torch
host = torch.empty(1 << 30, dtype=torch.uint8).pin_memory()
dev = torch.empty_like(host, device="cuda")
end = time.time() + 12
while time.time() < end:
    dev.copy_(host, non_blocking=True)
    host.copy_(dev, non_blocking=True)
torch.cuda.synchronize()
PY
load=$!
sleep 5
sample load | tee -a "$out/doctor_check.log"
"${wirewise[@]}" doctor --json --db "$db" > "$out/doctor_load.json"; code=$?
echo "doctor under load: exit $code" | tee -a "$out/doctor_check.log"; (( code <= 1 )) || fail "doctor under load exited $code"
wait "$load" || fail "copy load"
sample after | tee -a "$out/doctor_check.log"
# Whatever the hardware's state, doctor must answer: its JSON, healthy (0) or flagging (1).
python3 -c "
import json, sys
for name in ('idle', 'load'):
    found = json.load(open('$out/doctor_' + name + '.json'))
    print(name, 'healthy' if found['healthy'] else 'flags', [(f['check'], f['evidence']) for f in found['findings']], found['notes'])
" | tee -a "$out/doctor_check.log" || fail "doctor did not print its JSON"
finish
