# Sourced by every tests/gpu/*.sh script: run from the checkout, with it importable.
#   repo      the checkout (the current folder from here on)
#   out       $OUT when set (the device tool's folder that comes back), else a temporary one
#   wirewise  the command as an array (WIREWISE overrides; default: python3 -m wirewise.orchestrator)
#   fail      record a failed check: `fail "why"` prints it and makes `finish` exit 1
#   finish    end the script: exit 1 when any check failed, else 0
#
# The checkout runs as it is, not installed: the folders are laid out under the one package
# name they install as (contract/ is `wirewise`, orchestrator/ is `wirewise.orchestrator`,
# and so on, as pyproject.toml maps them) through symbolic links in a temporary folder that
# goes first on PYTHONPATH, so an installed wirewise elsewhere is not what runs.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
source_tree="$(mktemp -d)"
mkdir "$source_tree/wirewise"
ln -s "$repo"/contract/* "$source_tree/wirewise/"
for part in orchestrator jobs db templates; do ln -s "$repo/$part" "$source_tree/wirewise/$part"; done
export PYTHONPATH="$source_tree${PYTHONPATH:+:$PYTHONPATH}"
out="${OUT:-$(mktemp -d)}"
read -r -a wirewise <<< "${WIREWISE:-python3 -m wirewise.orchestrator}"
failures=0
fail() { echo "FAILED: $*" >&2; failures=$((failures + 1)); }
finish() {
  if (( failures )); then echo "# $failures check(s) FAILED" >&2; exit 1; fi
  echo "# OK: every check held"
}
