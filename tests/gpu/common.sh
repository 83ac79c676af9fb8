# Sourced by every tests/gpu/*.sh script: run from the checkout, with it importable.
#   repo      the checkout (the current folder from here on)
#   out       $OUT when set (the device tool's folder that comes back), else a temporary one
#   wirewise  the command as an array (WIREWISE overrides; default: python3 -m orchestrator)
# A TORCH_CUDA_ARCH_LIST like 9.0a, which DeepSpeed's op builder cannot parse, becomes 9.0.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
out="${OUT:-$(mktemp -d)}"
read -r -a wirewise <<< "${WIREWISE:-python3 -m orchestrator}"
if [[ "${TORCH_CUDA_ARCH_LIST:-}" =~ [0-9]a ]]; then
  export TORCH_CUDA_ARCH_LIST="$(sed -E 's/([0-9]+\.[0-9]+)[a-z]+/\1/g' <<< "$TORCH_CUDA_ARCH_LIST")"
fi
