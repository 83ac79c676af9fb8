# Sourced by every tests/gpu/*.sh script: run from the checkout, with it importable.
#   repo      the checkout (the current folder from here on)
#   out       $OUT when set (the device tool's folder that comes back), else a temporary one
#   wirewise  the command as an array (WIREWISE overrides; default: python3 -m orchestrator)
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
out="${OUT:-$(mktemp -d)}"
read -r -a wirewise <<< "${WIREWISE:-python3 -m orchestrator}"
