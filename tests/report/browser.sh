#!/usr/bin/env bash
# A real headless browser for the HTML report's test: Debian's chromium-headless-shell.
#
#   browser.sh path    install the package when missing (apt-get), print the binary's path on stdout
#
# Progress and errors go to stderr. playwright drives the binary (executable_path): its own
# browser download cannot reach its host from the CI and development machines.
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

PROG=wirewise-browser
LOG=${TMPDIR:-/tmp}/wirewise-browser-apt.log
say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

binary() {
    local candidate
    for candidate in /usr/bin/chromium-headless-shell /usr/lib/chromium/headless_shell \
        /usr/lib/chromium-headless-shell/chromium-headless-shell; do
        [[ -x $candidate ]] && { echo "$candidate"; return 0; }
    done
    return 1
}

install() {
    command -v apt-get >/dev/null || die "chromium-headless-shell is missing and there is no apt-get to install it"
    say "installing chromium-headless-shell (apt-get)"
    # Other test sessions may run apt at the same time: wait for dpkg's lock instead of failing.
    { apt-get -o DPkg::Lock::Timeout=600 update -q && DEBIAN_FRONTEND=noninteractive apt-get \
        -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends chromium-headless-shell; } >"$LOG" 2>&1 \
        || { tail -n 25 "$LOG" >&2; die "apt-get install chromium-headless-shell failed (full log: $LOG)"; }
}

case ${1:-} in
    path)
        binary && exit 0
        install
        binary || die "chromium-headless-shell installed but no binary found (dpkg -L chromium-headless-shell)"
        ;;
    *) say "usage: $0 path"; exit 2 ;;
esac
