#!/usr/bin/env bash
# A one-node Slurm 22.05 test cluster with accounting and 8 fake GPUs, without systemd:
# munged + MariaDB + slurmdbd + slurmctld + slurmd, all started by hand from a state folder.
#
#   cluster.sh start [--gres-conf FILE]   start what is missing (or restart what the new config needs)
#                                         and wait until the node is usable; a running cluster with the
#                                         same config is left alone ("already running")
#   cluster.sh restart [--gres-conf FILE] restart slurmctld and slurmd (the rest stays up)
#   cluster.sh stop                       cancel the jobs still queued, stop the daemons this script
#                                         started (by recorded pid), kill job steps a dead slurmd left
#   cluster.sh status                     print what runs; exit 0 when the node is usable, 3 when
#                                         nothing runs, 1 otherwise
#   cluster.sh env                        print `export` lines (SLURM_CONF, ...) for a shell or a test
#   cluster.sh clean                      stop, then delete the state folder
#
# Environment: WIREWISE_SLURM_DIR (state folder, default /tmp/wirewise-slurm),
# WIREWISE_SLURM_GPUS (fake GPUs in the default gres.conf, default 8),
# WIREWISE_SLURM_PORT (first of four TCP ports to try, default 16817),
# WIREWISE_SLURM_TIMEOUT (seconds to wait for each daemon, default 60).
# Progress and errors go to stderr; stdout carries only what `env` and `status` print.
set -euo pipefail

# Daemons live in sbin; a caller's PATH (an IDE, a venv shell) may not have it.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
# Stable output to parse (sinfo, date) and a '.' in $EPOCHREALTIME whatever the caller's locale.
export LC_ALL=C

PROG=wirewise-slurm
DIR=$(realpath -m "${WIREWISE_SLURM_DIR:-/tmp/wirewise-slurm}")
NGPUS=${WIREWISE_SLURM_GPUS:-8}
PORT_BASE=${WIREWISE_SLURM_PORT:-16817}
TIMEOUT=${WIREWISE_SLURM_TIMEOUT:-60}
PARTITION=debug
CLUSTER_NAME=wirewise
NODE=$(hostname -s)
# The daemons start in this order (each needs the ones before it) and stop in reverse.
DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)

ETC=$DIR/etc
RUN=$DIR/run
LOG=$DIR/log
DEV=$DIR/dev
MUNGE_DIR=$DIR/munge
MYSQL_DIR=$DIR/mysql
CONF=$ETC/slurm.conf
MUNGE_SOCKET=$MUNGE_DIR/munge.socket
MYSQL_SOCKET=$MYSQL_DIR/mysqld.sock
MARKER=$DIR/.wirewise-slurm

T0=$EPOCHREALTIME

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }
elapsed() { awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1fs", b - a }'; }

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

# ---------------------------------------------------------------- processes
# A pid counts as one of our daemons only when /proc says it is alive (zombies linger on this
# kind of machine: nobody reaps re-parented daemons, so `kill -0` succeeds on dead ones) and it
# is the program we launched (pid reuse).
# (`read` from /proc, no $(cat): forks are slow here and these run in polling loops.)
is_dead() {  # PID: gone, or a zombie; the state letter follows the last ')' (comm may hold any)
    local stat
    { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
    stat=${stat##*) }
    [[ ${stat:0:1} == [ZX] ]]
}
comm_of() {  # PID -> sets COMM ("" when gone)
    COMM=""
    { read -r COMM <"/proc/$1/comm"; } 2>/dev/null || true
}
recorded_pid() {  # NAME -> pid from run/NAME.pid, empty when none
    local f=$RUN/$1.pid
    [[ -f $f ]] && tr -dc '0-9' <"$f" || true
}
running() {  # NAME: our recorded daemon is alive and is that program
    local pid=""
    [[ -f $RUN/$1.pid ]] && read -r pid <"$RUN/$1.pid"
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    is_dead "$pid" && return 1
    comm_of "$pid"
    [[ $COMM == "$1" ]]
}

launch() {  # NAME COMMAND... : start in the background, record the pid
    local name=$1
    shift
    # setsid: its own session, so a Ctrl-C aimed at the caller (pytest) does not kill it mid-run.
    # No inherited descriptors: a caller reading our output through a pipe would otherwise wait for
    # the daemon to exit, and fd 9 is the state-folder lock.
    env SLURM_CONF="$CONF" setsid "$@" \
        </dev/null >>"$LOG/$name.out" 2>&1 9>&- &
    echo $! >"$RUN/$name.pid"
}

log_file() {  # NAME -> the daemon's own log
    case $1 in
        munged) echo "$MUNGE_DIR/munged.log" ;;
        mariadbd) echo "$MYSQL_DIR/mariadbd.log" ;;
        *) echo "$LOG/$1.log" ;;
    esac
}

show_logs() {  # NAME: the tail of what the daemon wrote, for the error message
    local f
    f=$(log_file "$1")
    # Its own log; what it printed before opening that log (or instead of it) otherwise.
    [[ -s $f ]] || f=$LOG/$1.out
    [[ -s $f ]] || return 0
    say "---- last lines of $f"
    # Debian's Slurm loads every MPI plugin and complains about PMIx on each start: noise here.
    grep -v -e 'pmix' -e 'MPI: Cannot create context' "$f" | tail -n 25 >&2 || true
}

reasons() { SLURM_CONF=$CONF sinfo -R -h -o '%n: %E' >&2 2>/dev/null || true; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() {  # NAME WHAT TEST-COMMAND... : poll until the test passes; fail when the daemon dies
    local name=$1 what=$2 pid deadline
    shift 2
    pid=$(recorded_pid "$name")
    deadline=$((SECONDS + TIMEOUT))
    until "$@"; do
        if [[ -n $pid ]] && is_dead "$pid"; then
            show_logs "$name"
            die "$name exited before $what"
        fi
        if ((SECONDS >= deadline)); then
            show_logs "$name"
            die "$name: no $what after ${TIMEOUT}s"
        fi
        sleep 0.05
    done
}

stop_pids() {  # NAME... : SIGTERM the recorded daemons together, wait, SIGKILL what is left
    local name pid pids=() i
    for name in "$@"; do
        if running "$name"; then
            pid=$(recorded_pid "$name")
            kill -TERM "$pid" 2>/dev/null || true
            pids+=("$pid")
            say "stopping $name (pid $pid)"
        fi
        rm -f "$RUN/$name.pid"
    done
    ((${#pids[@]})) || return 0
    for ((i = 0; i < 200; i++)); do  # up to 10 s
        local alive=0
        for pid in "${pids[@]}"; do is_dead "$pid" || alive=1; done
        ((alive)) || return 0
        sleep 0.05
    done
    for pid in "${pids[@]}"; do
        is_dead "$pid" || { say "pid $pid ignored SIGTERM, killing it"; kill -KILL "$pid" 2>/dev/null || true; }
    done
}

our_stepds() {
    # slurmstepd processes of this cluster: they keep our slurmd.log open (they log there), which
    # tells them from another cluster's.
    local p fd
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        comm_of "$p"
        [[ $COMM == slurmstepd ]] || continue
        is_dead "$p" && continue
        for fd in /proc/"$p"/fd/*; do
            if [[ $(readlink "$fd" 2>/dev/null) == "$LOG/slurmd.log" ]]; then
                echo "$p"
                break
            fi
        done
    done
    return 0
}

leftover_pids() {
    # Job steps whose slurmd is gone, with every descendant (the job's processes).
    local stepds p line pid ppid rest
    stepds=$(our_stepds)
    [[ -n $stepds ]] || return 0
    # Walk the process tree down from them (ppid is the 2nd field after the comm).
    local -A parent=() mine=()
    for p in /proc/[0-9]*/stat; do
        { read -r line <"$p"; } 2>/dev/null || continue
        pid=${line%% *}
        rest=${line##*) }
        read -r _ ppid _ <<<"$rest"
        parent[$pid]=$ppid
    done
    for p in $stepds; do mine[$p]=1; done
    local grew=1
    while ((grew)); do
        grew=0
        for pid in "${!parent[@]}"; do
            if [[ -z ${mine[$pid]:-} && -n ${mine[${parent[$pid]}]:-} ]]; then
                mine[$pid]=1
                grew=1
            fi
        done
    done
    for pid in "${!mine[@]}"; do is_dead "$pid" || echo "$pid"; done
}

# ---------------------------------------------------------------- packages
ensure_packages() {
    # binary:package; apt only when a binary is missing (a fresh CI machine), `update` once.
    local pair missing=()
    for pair in munged:munge mariadbd:mariadb-server mariadb-install-db:mariadb-server \
        slurmdbd:slurmdbd slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client \
        sacct:slurm-client sacctmgr:slurm-client; do
        command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
    done
    ((${#missing[@]})) || return 0
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
    say "installing ${missing[*]} (apt-get)"
    # Keep the packages' init scripts from starting system-wide instances (their own munged on
    # /run/munge, mariadb on 3306): policy-rc.d exit 101 = "do not start", removed afterwards.
    local policy=/usr/sbin/policy-rc.d own_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && own_policy=1
    fi
    local out=$DIR/apt.log rc=0
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends "${missing[@]}"; } >"$out" 2>&1 || rc=$?
    ((own_policy)) && rm -f "$policy"
    if ((rc)); then
        tail -n 25 "$out" >&2
        die "apt-get install ${missing[*]} failed (exit $rc, full log: $out)"
    fi
    say "installed ${missing[*]} ($(elapsed))"
}

# ---------------------------------------------------------------- configuration
pick_ports() {
    # Four consecutive free ports (slurmctld, slurmd, slurmdbd, mariadb), chosen once per state
    # folder; chosen again only on a cold start where one is taken by someone else.
    if [[ -f $ETC/ports ]]; then
        # shellcheck source=/dev/null
        source "$ETC/ports"
        local anyup=0 n
        for n in "${DAEMONS[@]}"; do running "$n" && anyup=1; done
        if ((anyup)) || ! { port_open "$CTLD_PORT" || port_open "$SLURMD_PORT" ||
            port_open "$DBD_PORT" || port_open "$MYSQL_PORT"; }; then
            return 0
        fi
        say "a port of $ETC/ports is taken by another program; choosing new ones"
    fi
    local base=$PORT_BASE tries
    for ((tries = 0; tries < 50; tries++)); do
        if ! { port_open "$base" || port_open $((base + 1)) || port_open $((base + 2)) ||
            port_open $((base + 3)); }; then
            printf 'CTLD_PORT=%d\nSLURMD_PORT=%d\nDBD_PORT=%d\nMYSQL_PORT=%d\n' \
                "$base" $((base + 1)) $((base + 2)) $((base + 3)) >"$ETC/ports"
            source "$ETC/ports"
            return 0
        fi
        base=$((base + 10))
    done
    die "no four free TCP ports from $PORT_BASE on"
}

default_gres() {
    local i
    echo "# $PROG default: $NGPUS fake GPUs (character devices 195:N, like /dev/nvidiaN)"
    echo "AutoDetect=off"
    for ((i = 0; i < NGPUS; i++)); do echo "Name=gpu File=$DEV/nvidia$i"; done
}

gres_scan() {
    # Reads a gres.conf on stdin; prints "gres TYPE COUNT" per GPU line (TYPE "-" when untyped)
    # and "file PATH" per device file (File= ranges such as /dev/nvidia[0-3,5] expanded), so the
    # node's Gres= in slurm.conf can match it (a node with fewer GRES than configured drains) and
    # fake devices can be created. Lines for another NodeName are skipped, as slurmd does.
    # POSIX awk: on a fresh machine awk is mawk.
    awk -v node="$NODE" '
    function expand(spec,   pre, post, inner, n, parts, i, a, b, w, j, out) {
        if (index(spec, "[") == 0) return spec
        pre = substr(spec, 1, index(spec, "[") - 1)
        inner = substr(spec, index(spec, "[") + 1)
        post = substr(inner, index(inner, "]") + 1)
        inner = substr(inner, 1, index(inner, "]") - 1)
        n = split(inner, parts, ",")
        out = ""
        for (i = 1; i <= n; i++) {
            if (index(parts[i], "-")) {
                a = substr(parts[i], 1, index(parts[i], "-") - 1)
                b = substr(parts[i], index(parts[i], "-") + 1)
            } else { a = parts[i]; b = parts[i] }
            w = length(a)
            for (j = a + 0; j <= b + 0; j++) out = out " " pre sprintf("%0" w "d", j) post
        }
        return substr(out, 2)
    }
    {
        sub(/#.*/, "")
        name = ""; type = "-"; count = ""; files = ""; other = ""
        for (f = 1; f <= NF; f++) {
            eq = index($f, "=")
            if (eq == 0) continue
            k = tolower(substr($f, 1, eq - 1)); v = substr($f, eq + 1)
            if (k == "name") name = v
            else if (k == "type") type = v
            else if (k == "count") count = v
            else if (k == "file" || k == "files") files = v
            else if (k == "nodename") other = (v != node)
        }
        if (name != "gpu" || other) next
        n = 0
        if (files != "") {
            # split on commas outside brackets
            depth = 0; cur = ""
            for (i = 1; i <= length(files); i++) {
                c = substr(files, i, 1)
                if (c == "[") depth++
                if (c == "]") depth--
                if (c == "," && depth == 0) { list = list " " expand(cur); cur = "" } else cur = cur c
            }
            list = list " " expand(cur)
            m = split(list, paths, " ")
            for (i = 1; i <= m; i++) { print "file " paths[i]; n++ }
            list = ""
        }
        if (count != "") n = count + 0
        print "gres " type " " n
    }'
}

node_gres() {  # gres.conf path -> the Gres= value for the node line ("" when no GPUs)
    # Types in order of first appearance: `for (t in c)` order varies, and a different slurm.conf
    # text would mean a needless restart.
    gres_scan <"$1" | awk '$1 == "gres" { if (!($2 in c)) order[++n] = $2; c[$2] += $3 }
        END { s = ""; for (i = 1; i <= n; i++) { t = order[i]; if (c[t] > 0) s = s "," (t == "-" ? "gpu:" c[t] : "gpu:" t ":" c[t]) }; print substr(s, 2) }'
}

make_devices() {  # gres.conf path: create the fake devices it names under $DEV; check the rest exist
    local path minor
    while read -r path; do
        if [[ $path == "$DEV"/* ]]; then
            if [[ ! -c $path ]]; then
                minor=${path##*[!0-9]}
                [[ -n $minor ]] || die "gres.conf names $path: a fake device under $DEV needs a number at the end"
                rm -f "$path"
                mknod "$path" c 195 "$((10#$minor))" || die "mknod $path failed (needs root and a filesystem that allows device nodes)"
            fi
        elif [[ ! -e $path ]]; then
            die "gres.conf names $path, which does not exist here (map /dev/nvidiaN to $DEV/nvidiaN, e.g. with tests.slurm.fixture.fake_gres)"
        fi
    done < <(gres_scan <"$1" | awk '$1 == "file" { print $2 }')
}

write_if_changed() {  # TARGET MODE : stdin -> TARGET when different; exit status 0 = changed
    local tmp
    tmp=$(mktemp "$1.XXXXXX")
    cat >"$tmp"
    chmod "$2" "$tmp"
    if [[ -f $1 ]] && cmp -s "$tmp" "$1"; then
        rm -f "$tmp"
        return 1
    fi
    mv -f "$tmp" "$1"
}

write_slurm_conf() {  # GRES_VALUE ; exit status 0 = changed
    local gres_line=""
    [[ -n $1 ]] && gres_line="Gres=$1"
    write_if_changed "$CONF" 644 <<EOF
# Written by $PROG (tests/slurm/cluster.sh) on every start; edits are overwritten.
ClusterName=$CLUSTER_NAME
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
# Everything runs as root on one machine without systemd or cgroups.
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire=10: a requeued job (preemption) may start again after ~20 s instead of ~130 s.
AuthInfo=socket=$MUNGE_SOCKET,cred_expire=10
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$RUN/slurmctld.daemon.pid
SlurmdPidFile=$RUN/slurmd.daemon.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# The node may claim more CPUs (16) than the machine has.
SlurmdParameters=config_overrides
ReturnToService=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Without a default, a job without --mem takes the whole node's memory and array tasks queue.
DefMemPerCPU=512
# Schedule at once (a 4-task array then runs in about a second) ...
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
# ... and free a cancelled job's resources fast (default 30 s blocks the node ~25 s).
KillWait=2
# Small on purpose: campaigns must split longer arrays into chunks numbered from 0.
MaxArraySize=4
InactiveLimit=0
MinJobAge=300
# Accounting through slurmdbd: sacct must answer (submitit reads job states from it).
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
# Messages to slurmdbd (from slurmctld, sacct, sacctmgr) take their munge socket from here, not AuthInfo.
AccountingStoragePass=socket=$MUNGE_SOCKET
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none
# Nothing to mail; the Debian default (/bin/mail) is not installed.
MailProg=/bin/true
GresTypes=gpu
NodeName=$NODE NodeAddr=127.0.0.1 Sockets=2 CoresPerSocket=8 ThreadsPerCore=1 CPUs=16 RealMemory=65536 $gres_line State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

write_slurmdbd_conf() {  # exit status 0 = changed
    # slurmdbd refuses a config readable by others (it holds the database password).
    write_if_changed "$ETC/slurmdbd.conf" 600 <<EOF
# Written by $PROG (tests/slurm/cluster.sh).
AuthType=auth/munge
# cred_expire=10: a requeued job (preemption) may start again after ~20 s instead of ~130 s.
AuthInfo=socket=$MUNGE_SOCKET,cred_expire=10
DbdHost=$NODE
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$LOG/slurmdbd.log
PidFile=$RUN/slurmdbd.daemon.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$MYSQL_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
}

write_mysql_conf() {
    # Its own datadir, socket and loopback port, so a system MariaDB (if any) is never touched.
    # Durability is traded for speed: this database lives as long as the test cluster.
    write_if_changed "$MYSQL_DIR/my.cnf" 644 <<EOF || true
[mariadbd]
user=mysql
datadir=$MYSQL_DIR/data
socket=$MYSQL_SOCKET
port=$MYSQL_PORT
bind-address=127.0.0.1
pid-file=$MYSQL_DIR/mariadbd.pid
log-error=$MYSQL_DIR/mariadbd.log
skip-name-resolve
skip-log-bin
innodb_buffer_pool_size=64M
innodb_log_file_size=16M
innodb_flush_log_at_trx_commit=0
innodb_doublewrite=0
innodb_use_native_aio=0
innodb_lock_wait_timeout=900
performance_schema=OFF
EOF
    # The account slurmdbd logs in with; run at every start (idempotent).
    write_if_changed "$MYSQL_DIR/init.sql" 600 <<EOF || true
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
EOF
    chown mysql:mysql "$MYSQL_DIR/init.sql"
}

prepare_dirs() {
    mkdir -p "$ETC" "$RUN" "$LOG" "$DEV" "$DIR/state" "$DIR/spool" "$MUNGE_DIR" "$MYSQL_DIR"
    touch "$MARKER"
    # munged insists on owning its folder, on a private key, and on clients being able to reach the socket.
    chown munge:munge "$MUNGE_DIR"
    chmod 711 "$MUNGE_DIR"  # clients need x on the socket folder; the key itself stays 600
    if [[ ! -s $MUNGE_DIR/munge.key ]]; then
        dd if=/dev/urandom of="$MUNGE_DIR/munge.key" bs=1024 count=1 status=none
    fi
    chown munge:munge "$MUNGE_DIR/munge.key"
    chmod 600 "$MUNGE_DIR/munge.key"
    chown mysql:mysql "$MYSQL_DIR"
    chmod 750 "$MYSQL_DIR"
    if [[ ! -s $ETC/dbpass ]]; then
        # (finite input: `tr </dev/urandom | head` dies of SIGPIPE under pipefail)
        (umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=\n' >"$ETC/dbpass")
    fi
    DB_PASS=$(cat "$ETC/dbpass")
    local sock
    for sock in "$MUNGE_SOCKET" "$MYSQL_SOCKET"; do
        ((${#sock} < 100)) || die "socket path $sock is too long for a unix socket; use a shorter WIREWISE_SLURM_DIR"
    done
}

# ---------------------------------------------------------------- daemons
start_munged() {
    running munged && return 0
    rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
    # munged must run as user munge; setpriv execs it in place, so the recorded pid is munged's.
    launch munged setpriv --reuid=munge --regid=munge --init-groups \
        munged --foreground --socket="$MUNGE_SOCKET" --key-file="$MUNGE_DIR/munge.key" \
        --pid-file="$MUNGE_DIR/munged.pid" --log-file="$MUNGE_DIR/munged.log" \
        --seed-file="$MUNGE_DIR/munged.seed"
    wait_for munged "socket $MUNGE_SOCKET" test -S "$MUNGE_SOCKET"
    say "munged up ($(elapsed))"
}

start_mariadbd() {
    running mariadbd && return 0
    if [[ ! -d $MYSQL_DIR/data/mysql ]]; then
        say "creating the MariaDB data folder (once per state folder)"
        rm -rf "$MYSQL_DIR/data"
        if ! mariadb-install-db --defaults-file="$MYSQL_DIR/my.cnf" --user=mysql \
            --auth-root-authentication-method=socket --skip-test-db \
            >"$LOG/mariadb-install-db.out" 2>&1; then
            tail -n 25 "$LOG/mariadb-install-db.out" >&2
            rm -rf "$MYSQL_DIR/data"
            die "mariadb-install-db failed"
        fi
    fi
    rm -f "$MYSQL_SOCKET"
    # mariadbd itself drops to user mysql (user= in my.cnf) and does not fork.
    launch mariadbd mariadbd --defaults-file="$MYSQL_DIR/my.cnf" --init-file="$MYSQL_DIR/init.sql"
    wait_for mariadbd "port $MYSQL_PORT" port_open "$MYSQL_PORT"
    say "mariadbd up on 127.0.0.1:$MYSQL_PORT ($(elapsed))"
}

start_slurmdbd() {
    running slurmdbd && return 0
    launch slurmdbd slurmdbd -D
    wait_for slurmdbd "port $DBD_PORT" port_open "$DBD_PORT"
    say "slurmdbd up on 127.0.0.1:$DBD_PORT ($(elapsed))"
}

start_slurmctld() {
    running slurmctld && return 0
    launch slurmctld slurmctld -D
    wait_for slurmctld "port $CTLD_PORT" port_open "$CTLD_PORT"
    say "slurmctld up on 127.0.0.1:$CTLD_PORT ($(elapsed))"
}

start_slurmd() { launch slurmd slurmd -D; }

node_state() { SLURM_CONF=$CONF sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n 1; }
usable() { [[ $1 == idle || $1 == mixed || $1 == allocated || $1 == completing ]]; }

slurmd_registered_since() {  # EPOCH: slurmctld has heard from a slurmd started at/after EPOCH
    local t
    t=$(SLURM_CONF=$CONF scontrol -o show node "$NODE" 2>/dev/null | grep -o 'SlurmdStartTime=[^ ]*' | cut -d= -f2)
    t=$(date -d "$t" +%s 2>/dev/null) || return 1
    ((t >= $1))
}

resume_if_drained() {
    # A drain left by an earlier config (e.g. a gres.conf that did not match) would outlive the
    # fix; clear it before slurmd registers, so that a drain seen afterwards is the new config's.
    local state
    state=$(node_state || true)
    if [[ $state == drain* || $state == *drain || $state == down* || $state == inval* ]]; then
        say "node $NODE was '$state'; resuming it"
        SLURM_CONF=$CONF scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true
    fi
}

wait_node_usable() {  # [EPOCH]: with EPOCH, first wait for the slurmd launched then to register
    local since=${1:-} deadline=$((SECONDS + TIMEOUT)) state="" n pid registered=0
    [[ -z $since ]] && registered=1
    while :; do
        if ((!registered)) && slurmd_registered_since "$since"; then registered=1; fi
        if ((registered)); then
            state=$(node_state || true)
            usable "$state" && return 0
            if [[ $state == drain* || $state == *drain || $state == inval* ]]; then
                show_logs slurmd
                reasons
                die "node $NODE is '$state' after slurmd registered: the node line or gres.conf does not match what slurmd found (see the reason above)"
            fi
        fi
        for n in slurmctld slurmd; do
            pid=$(recorded_pid $n)
            if [[ -z $pid ]] || is_dead "$pid"; then
                show_logs $n
                die "$n exited before the node came up"
            fi
        done
        if ((SECONDS >= deadline)); then
            show_logs slurmd
            show_logs slurmctld
            reasons
            ((registered)) || die "slurmd did not register with slurmctld within ${TIMEOUT}s"
            die "node $NODE is '${state:-unknown}', not idle, after ${TIMEOUT}s"
        fi
        sleep 0.05
    done
}

live_step_jobs() {  # job ids that have a live slurmstepd of ours ("slurmstepd: [JOBID.STEP]")
    local p cmd
    for p in $(our_stepds); do
        cmd=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
        [[ $cmd =~ \[([0-9]+)\. ]] && echo "${BASH_REMATCH[1]}"
    done
    return 0
}

cancel_stale_jobs() {
    # slurmctld brings back the jobs of its saved state. One it believes running whose job step is
    # gone (the cluster went down hard) would hold CPUs and GPUs until its time limit: cancel it.
    # Pending jobs are left alone, and so is anything submitted since this start.
    local start_epoch=${T0%.*} id submitted stale=() live
    live=" $(live_step_jobs | tr '\n' ' ') "
    while read -r id submitted; do
        [[ -n $id ]] || continue
        submitted=$(date -d "$submitted" +%s 2>/dev/null) || continue
        ((submitted < start_epoch)) || continue
        [[ $live == *" $id "* ]] || stale+=("$id")
    done < <(SLURM_CONF=$CONF squeue -h -t RUNNING,COMPLETING -o '%A %V' 2>/dev/null || true)
    ((${#stale[@]})) || return 0
    say "cancelling jobs whose processes are gone: ${stale[*]}"
    SLURM_CONF=$CONF scancel "${stale[@]}" 2>/dev/null || true
    local i
    for ((i = 0; i < 100; i++)); do
        [[ -z $(SLURM_CONF=$CONF squeue -h -t RUNNING,COMPLETING -o %A -j "$(IFS=,; echo "${stale[*]}")" 2>/dev/null) ]] && return 0
        sleep 0.1
    done
}

register_accounting() {
    # slurmctld adds its cluster to slurmdbd itself; an account and root's association make
    # sacct/sacctmgr output complete. Once per state folder.
    [[ -f $DIR/.accounting ]] && return 0
    local deadline=$((SECONDS + TIMEOUT))
    until SLURM_CONF=$CONF sacctmgr -n -P list cluster format=cluster 2>/dev/null | grep -qx "$CLUSTER_NAME"; do
        ((SECONDS < deadline)) || { show_logs slurmdbd; show_logs slurmctld; die "cluster $CLUSTER_NAME never appeared in slurmdbd"; }
        sleep 0.1
    done
    SLURM_CONF=$CONF sacctmgr -i add account wirewise Cluster="$CLUSTER_NAME" Description=tests Organization=wirewise >/dev/null 2>&1 || true
    SLURM_CONF=$CONF sacctmgr -i add user root Account=wirewise Cluster="$CLUSTER_NAME" >/dev/null 2>&1 || true
    touch "$DIR/.accounting"
}

# ---------------------------------------------------------------- commands
lock() {
    mkdir -p "$DIR" 2>/dev/null || die "cannot create the state folder $DIR"
    exec 9>"$DIR/lock"
    flock -w 300 9 || die "another $PROG holds $DIR/lock"
}

cmd_start() {  # [--gres-conf FILE] [restart]
    local gres_file="" force_restart=${FORCE_RESTART:-0}
    while (($#)); do
        case $1 in
            --gres-conf) gres_file=${2:?--gres-conf needs a file}; shift 2 ;;
            --gres-conf=*) gres_file=${1#*=}; shift ;;
            *) usage ;;
        esac
    done
    [[ -z $gres_file || -r $gres_file ]] || die "cannot read gres.conf $gres_file"
    ((EUID == 0)) || die "must run as root (munged runs as user munge, mariadbd as mysql, mknod for the fake GPUs)"
    lock
    ensure_packages
    prepare_dirs
    pick_ports

    gres_tmp=$(mktemp "$ETC/gres.conf.XXXXXX")  # global: the EXIT trap removes it on failure
    trap 'rm -f "$gres_tmp"' EXIT
    if [[ -n $gres_file ]]; then cat "$gres_file" >"$gres_tmp"; else default_gres >"$gres_tmp"; fi
    make_devices "$gres_tmp"
    local gres
    gres=$(node_gres "$gres_tmp")
    local changed=0
    write_if_changed "$ETC/gres.conf" 644 <"$gres_tmp" && changed=1
    rm -f "$gres_tmp"
    write_slurm_conf "$gres" && changed=1
    local dbd_changed=0
    write_slurmdbd_conf && dbd_changed=1
    write_mysql_conf

    local n all_up=1
    for n in "${DAEMONS[@]}"; do running "$n" || all_up=0; done
    if ((all_up && !changed && !dbd_changed && !force_restart)); then
        local state
        state=$(node_state || true)
        if usable "$state"; then
            say "already running: node $NODE $state, partition $PARTITION ($(elapsed))"
            return 0
        fi
        # Up but the node is not usable (drained, not responding): restart the Slurm daemons.
        say "running, but node $NODE is '${state:-unknown}': restarting slurmctld and slurmd"
        force_restart=1
    fi
    # A new slurm.conf/gres.conf (GRES) needs both slurm daemons restarted, not a reconfigure.
    if ((changed || force_restart)); then stop_pids slurmd slurmctld; fi
    ((dbd_changed)) && stop_pids slurmdbd

    start_munged
    start_mariadbd
    start_slurmdbd
    local ctld_started=0
    running slurmctld || ctld_started=1
    start_slurmctld
    local since=""
    if ! running slurmd; then
        resume_if_drained
        since=$(date +%s)
        start_slurmd
    fi
    wait_node_usable "$since"
    ((ctld_started)) && cancel_stale_jobs
    register_accounting
    say "ready: node $NODE $(node_state), partition $PARTITION, GRES ${gres:-none} ($(elapsed))"
}

cmd_stop() {
    [[ -d $DIR ]] || { say "not running (no $DIR)"; return 0; }
    lock
    local jobs
    if running slurmctld && [[ -f $CONF ]]; then
        # Cancel what still runs, so no job outlives the cluster (KillWait is 2 s).
        jobs=$(SLURM_CONF=$CONF squeue -h -o %A 2>/dev/null | tr '\n' ' ' || true)
        if [[ -n ${jobs// /} ]]; then
            say "cancelling jobs $jobs"
            # shellcheck disable=SC2086
            SLURM_CONF=$CONF scancel $jobs 2>/dev/null || true
            local i
            for ((i = 0; i < 100; i++)); do
                [[ -z $(SLURM_CONF=$CONF squeue -h -o %A 2>/dev/null) ]] && break
                sleep 0.1
            done
        fi
    fi
    # slurmctld takes ~2 s to save its state; the others stop at once, so stop in two waves:
    # the Slurm daemons together, then what they need (the database, munge).
    stop_pids slurmd slurmctld slurmdbd
    stop_pids mariadbd munged
    # Job steps that outlived slurmd (jobs that could not be cancelled above).
    local p left
    left=$(leftover_pids)
    for p in $left; do
        comm_of "$p"
        say "killing leftover job process $COMM (pid $p)"
        kill -KILL "$p" 2>/dev/null || true
    done
    say "stopped ($(elapsed))"
}

cmd_status() {
    [[ -d $DIR ]] || { echo "not running (no $DIR)"; return 3; }
    local n up=0 total=0 pid
    for n in "${DAEMONS[@]}"; do
        total=$((total + 1))
        pid=$(recorded_pid "$n")
        if running "$n"; then
            up=$((up + 1))
            printf '%-10s running  pid %s\n' "$n" "$pid"
        else
            printf '%-10s stopped%s\n' "$n" "${pid:+ (stale pid $pid)}"
        fi
    done
    ((up)) || { echo "not running"; return 3; }
    local state
    state=$(node_state || true)
    printf 'node       %s %s, partition %s\n' "$NODE" "${state:-unknown}" "$PARTITION"
    printf 'SLURM_CONF %s\n' "$CONF"
    case $state in idle | mixed | allocated | completing) ((up == total)) && return 0 ;; esac
    return 1
}

cmd_env() {
    printf 'export SLURM_CONF=%q\n' "$CONF"
    printf 'export WIREWISE_SLURM_DIR=%q\n' "$DIR"
    printf 'export WIREWISE_SLURM_PARTITION=%q\n' "$PARTITION"
    printf 'export WIREWISE_SLURM_NODE=%q\n' "$NODE"
    printf 'export WIREWISE_SLURM_DEV=%q\n' "$DEV"
}

cmd_clean() {
    cmd_stop
    # Only a folder this script made (it has the marker) is deleted.
    if [[ -f $MARKER ]]; then
        rm -rf "$DIR"
        say "removed $DIR"
    fi
}

case ${1:-} in
    start) shift; cmd_start "$@" ;;
    restart) shift; FORCE_RESTART=1 cmd_start "$@" ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    env) cmd_env ;;
    clean) cmd_clean ;;
    -h | --help | help) usage ;;
    *) usage ;;
esac
