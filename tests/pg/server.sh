#!/usr/bin/env bash
# A throw-away PostgreSQL 15 server for the test suite, without systemd or the Debian cluster tools.
#
#   server.sh start    initdb once, start the server (no-op when it already runs), create the
#                      database wirewise_test, print its SQLAlchemy URL on stdout
#   server.sh url      print the URL (exit 1 when the server does not run)
#   server.sh status   say whether it runs (exit 0) or not (exit 3)
#   server.sh stop     stop the server of this folder (the postmaster whose pid it recorded)
#   server.sh clean    stop, then delete the folder
#
# Environment: WIREWISE_PG_DIR (folder, default /tmp/wirewise-pg), WIREWISE_PG_PORT (first port
# to try, default 15432), WIREWISE_PG_TIMEOUT (seconds to wait for the server, default 60).
# Progress and errors go to stderr; stdout carries only the URL (start, url) or status lines.
set -euo pipefail

export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
# Stable output to parse (sinfo, date) and a '.' in $EPOCHREALTIME whatever the caller's locale.
export LC_ALL=C

PROG=wirewise-pg
DIR=${WIREWISE_PG_DIR:-/tmp/wirewise-pg}
PORT_BASE=${WIREWISE_PG_PORT:-15432}
TIMEOUT=${WIREWISE_PG_TIMEOUT:-60}
DB=wirewise_test
DATA=$DIR/data
MARKER=$DIR/.wirewise-pg

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# Debian keeps the server binaries out of PATH, one folder per major version: take the newest.
pg_bindir() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [[ -n $d && -x $d/initdb && -x $d/pg_ctl ]] && echo "$d"
}

ensure_packages() {
    pg_bindir >/dev/null && return 0
    command -v apt-get >/dev/null || die "PostgreSQL is not installed and there is no apt-get to install it"
    say "installing postgresql (apt-get)"
    # policy-rc.d exit 101: keep the package from starting its own system cluster on port 5432.
    local policy=/usr/sbin/policy-rc.d own_policy=0 out=$DIR/apt.log rc=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && own_policy=1
    fi
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends postgresql; } >"$out" 2>&1 || rc=$?
    ((own_policy)) && rm -f "$policy"
    if ((rc)); then
        tail -n 25 "$out" >&2
        die "apt-get install postgresql failed (exit $rc, full log: $out)"
    fi
    pg_bindir >/dev/null || die "postgresql installed but no /usr/lib/postgresql/*/bin/initdb"
}

as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

# The postmaster of this folder, when it is alive (not a zombie: nobody reaps re-parented
# processes on this kind of machine, so `kill -0` is not proof of life) and really a postgres.
postmaster_pid() {
    local pid stat comm
    [[ -f $DATA/postmaster.pid ]] || return 1
    pid=$(head -n 1 "$DATA/postmaster.pid" | tr -dc '0-9')
    [[ -n $pid ]] || return 1
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [[ ${stat%% *} != [ZX] ]] || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [[ $comm == postgres || $comm == postmaster ]] || return 1
    echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

url() { echo "postgresql+psycopg://postgres@127.0.0.1:$(cat "$DIR/port")/$DB"; }

ensure_database() {  # BINDIR PORT: create wirewise_test unless it exists
    if ! as_postgres "$1/psql" -h "$DIR" -p "$2" -U postgres -d postgres -Atqc \
        "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
        as_postgres "$1/createdb" -h "$DIR" -p "$2" -U postgres "$DB" || die "createdb $DB failed"
    fi
}

cmd_start() {
    ((EUID == 0)) || die "must run as root (the server runs as user postgres)"
    mkdir -p "$DIR" 2>/dev/null || die "cannot create the state folder $DIR"
    exec 9>"$DIR/lock"
    flock -w 120 9 || die "another $PROG holds $DIR/lock"
    ensure_packages
    local bin
    bin=$(pg_bindir)
    touch "$MARKER"
    # initdb and the socket folder (-k) both must belong to postgres.
    chown postgres:postgres "$DIR"
    if postmaster_pid >/dev/null && [[ -f $DIR/port ]]; then
        ensure_database "$bin" "$(cat "$DIR/port")"
        say "already running on 127.0.0.1:$(cat "$DIR/port")"
        url
        return 0
    fi
    if [[ ! -f $DATA/PG_VERSION ]]; then
        rm -rf "$DATA"
        # trust: only reachable on 127.0.0.1 and through a socket in this folder.
        if ! as_postgres "$bin/initdb" -D "$DATA" -U postgres --auth=trust --no-sync \
            -E UTF8 --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1; then
            tail -n 25 "$DIR/initdb.log" >&2
            die "initdb failed"
        fi
    fi
    # A port nobody listens on, from WIREWISE_PG_PORT upwards.
    local port=$PORT_BASE tries
    for ((tries = 0; tries < 100; tries++)); do
        port_open "$port" || break
        port=$((port + 1))
    done
    port_open "$port" && die "no free TCP port from $PORT_BASE on"
    echo "$port" >"$DIR/port"
    # The server outlives this script: its output goes to the log, never to our caller's pipes
    # (fd 9 is the lock). fsync off: a test database needs speed, not durability.
    rm -f "$DATA/postmaster.pid"
    if ! as_postgres "$bin/pg_ctl" -D "$DATA" -l "$DIR/server.log" -w -t "$TIMEOUT" \
        -o "-k $DIR -p $port -h 127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
        start </dev/null >"$DIR/pg_ctl.out" 2>&1 9>&-; then
        tail -n 25 "$DIR/pg_ctl.out" "$DIR/server.log" >&2 || true
        die "the server did not start"
    fi
    ensure_database "$bin" "$port"
    say "running on 127.0.0.1:$port (pid $(postmaster_pid))"
    url
}

cmd_stop() {
    [[ -d $DATA ]] || { say "not running (no $DATA)"; return 0; }
    local pid bin i
    if ! pid=$(postmaster_pid); then
        say "not running"
        return 0
    fi
    bin=$(pg_bindir) || die "no PostgreSQL binaries"
    say "stopping the server (pid $pid)"
    # pg_ctl stop -w waits on postmaster.pid; a zombie postmaster would not vanish, so wait on
    # /proc instead and let pg_ctl only send the signal.
    as_postgres "$bin/pg_ctl" -D "$DATA" -m fast -W stop >/dev/null 2>&1 || kill -INT "$pid" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do
        postmaster_pid >/dev/null || { say "stopped"; return 0; }
        sleep 0.05
    done
    say "pid $pid ignored the fast shutdown, killing it"
    kill -KILL "$pid" 2>/dev/null || true
}

cmd_status() {
    local pid
    if pid=$(postmaster_pid) && [[ -f $DIR/port ]]; then
        echo "running pid $pid on 127.0.0.1:$(cat "$DIR/port")"
        return 0
    fi
    echo "not running"
    return 3
}

cmd_url() {
    postmaster_pid >/dev/null && [[ -f $DIR/port ]] || die "not running (run: $0 start)"
    url
}

cmd_clean() {
    cmd_stop
    if [[ -f $MARKER ]]; then
        rm -rf "$DIR"
        say "removed $DIR"
    fi
}

case ${1:-} in
    start) cmd_start ;;
    stop) cmd_stop ;;
    url) cmd_url ;;
    status) cmd_status ;;
    clean) cmd_clean ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
