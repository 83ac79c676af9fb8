# Sourced by the two test clusters (cluster.sh: one node; multinode.sh: three nodes in their own
# namespaces): what both run on the host, started by hand from a state folder without systemd:
# munged, MariaDB, slurmdbd and slurmctld, and the bookkeeping of the processes they started.
#
# Before sourcing, set PROG (the name in messages), DIR (the state folder, absolute), TIMEOUT
# (seconds per wait) and T0=$EPOCHREALTIME; after it, call daemon_paths. Before starting
# daemons set CTLD_PORT, DBD_PORT, MYSQL_PORT, CLUSTER_NAME, ACCOUNT and DBD_ADDR (the address
# slurmdbd is reached at; it binds every address either way).

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }
elapsed() { awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1fs", b - a }'; }

usage() {  # the script's header comment, from line 2 to `set -euo`
    sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

daemon_paths() {
    ETC=$DIR/etc
    RUN=$DIR/run
    LOG=$DIR/log
    DEV=$DIR/dev
    MUNGE_DIR=$DIR/munge
    MYSQL_DIR=$DIR/mysql
    CONF=$ETC/slurm.conf
    MUNGE_SOCKET=$MUNGE_DIR/munge.socket
    MYSQL_SOCKET=$MYSQL_DIR/mysqld.sock
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
    local pid=""
    [[ -f $RUN/$1.pid ]] && { read -r pid <"$RUN/$1.pid" || true; }
    [[ $pid =~ ^[0-9]+$ ]] && echo "$pid"
    return 0
}
running() {  # NAME: our recorded daemon is alive and is that program (slurmd-X runs slurmd)
    local pid
    pid=$(recorded_pid "$1")
    [[ -n $pid ]] || return 1
    is_dead "$pid" && return 1
    comm_of "$pid"
    [[ $COMM == "${1%%-*}" ]]
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
        slurmd-*) echo "$LOG/slurmd.${1#slurmd-}.log" ;;
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

usable() { [[ $1 == idle || $1 == mixed || $1 == allocated || $1 == completing ]]; }  # a node state

reasons() { SLURM_CONF=$CONF sinfo -R -h -o '%n: %E' >&2 2>/dev/null || true; }

port_open() { (exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1") 2>/dev/null; }  # PORT [HOST]

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

kill_and_wait() {  # [-SIGNAL] PID... : signal them together (TERM), wait up to 10 s, SIGKILL what is left
    local sig=TERM pid i alive
    [[ ${1:-} == -* ]] && { sig=${1#-}; shift; }
    (($#)) || return 0
    kill "-$sig" "$@" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do
        alive=0
        for pid in "$@"; do is_dead "$pid" || alive=1; done
        ((alive)) || return 0
        sleep 0.05
    done
    for pid in "$@"; do
        is_dead "$pid" || { say "pid $pid ignored SIG$sig, killing it"; kill -KILL "$pid" 2>/dev/null || true; }
    done
}

stop_pids() {  # NAME... : stop the recorded daemons together
    local name pid pids=()
    for name in "$@"; do
        if running "$name"; then
            pid=$(recorded_pid "$name")
            pids+=("$pid")
            say "stopping $name (pid $pid)"
        fi
        rm -f "$RUN/$name.pid"
    done
    kill_and_wait "${pids[@]}"
}

print_daemons() {  # WIDTH NAME... : a status line per daemon; sets UP to how many of them run
    local width=$1 name pid
    shift
    UP=0
    for name in "$@"; do
        pid=$(recorded_pid "$name")
        if running "$name"; then
            UP=$((UP + 1))
            printf "%-${width}s running  pid %s\n" "$name" "$pid"
        else
            printf "%-${width}s stopped%s\n" "$name" "${pid:+ (stale pid $pid)}"
        fi
    done
}

lock() {
    mkdir -p "$DIR" 2>/dev/null || die "cannot create the state folder $DIR"
    exec 9>"$DIR/lock"
    flock -w 300 9 || die "another $PROG holds $DIR/lock"
}

# ---------------------------------------------------------------- packages
ensure_packages() {  # BINARY:PACKAGE or LIBRARY.so.N:PACKAGE... ; apt only when one is missing (a fresh CI machine)
    local pair missing=() libraries
    libraries=$(ldconfig -p 2>/dev/null || true)
    for pair in "$@"; do
        case ${pair%%:*} in
            *.so.*) [[ $libraries == *"${pair%%:*} "* ]] || missing+=("${pair#*:}") ;;
            *) command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}") ;;
        esac
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
    # Other work on the machine may run apt at the same time: wait for its lock.
    local out=$DIR/apt.log rc=0 apt=(apt-get -o DPkg::Lock::Timeout=300)
    { "${apt[@]}" update -q && DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -q \
        --no-install-recommends "${missing[@]}"; } >"$out" 2>&1 || rc=$?
    ((own_policy)) && rm -f "$policy"
    if ((rc)); then
        tail -n 25 "$out" >&2
        die "apt-get install ${missing[*]} failed (exit $rc, full log: $out)"
    fi
    say "installed ${missing[*]} ($(elapsed))"
}

# What both clusters run from Debian: munge and MariaDB; Debian's Slurm 22.05 runs the one-node cluster.
DAEMON_PACKAGES=(munged:munge mariadbd:mariadb-server mariadb-install-db:mariadb-server)
SLURM_PACKAGES=("${DAEMON_PACKAGES[@]}" slurmdbd:slurmdbd slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client
    sacct:slurm-client sacctmgr:slurm-client)

# ---------------------------------------------------------------- Slurm 25.11
# Slurm 25.11.7 built for Debian 12 (../shared/slurm/, beside the repository), unpacked once into a
# folder shared by every state folder and kept there: a start then costs nothing for it. The build
# looks for libslurmfull.so, its plugins and slurmstepd under /opt/slurm-25.11, so here its
# programs' run path becomes $ORIGIN/../lib/slurm (patchelf, once: it holds when slurmd re-runs
# itself with an empty environment for its health check, where LD_LIBRARY_PATH would not), and
# PluginDir (slurm.conf, slurmdbd.conf) and `slurmd -d` point into the unpacked tree.
SLURM25_TARBALL=${WIREWISE_SLURM25_TARBALL:-$(dirname "${BASH_SOURCE[0]}")/../../../shared/slurm/slurm-25.11.7-debian12-amd64.tar.xz}
SLURM25_SHA256=b2916e2573a7ae4f0b78fb4f2097b91d6f4e345467bdc16f5843d4c62f740a48
SLURM25_CACHE=${WIREWISE_SLURM25_CACHE:-/tmp/wirewise-slurm-25.11.7}
SLURM25_PACKAGES=(libmunge.so.2:libmunge2 libmariadb.so.3:libmariadb3 libyaml-0.so.2:libyaml-0-2
    libjson-c.so.5:libjson-c5 libhwloc.so.15:libhwloc15 libnuma.so.1:libnuma1 xz:xz-utils patchelf:patchelf)

use_slurm25() {  # unpack (once) and put Slurm 25.11's commands first on PATH; sets SLURM_PLUGIN_DIR, SLURMSTEPD
    local tree=$SLURM25_CACHE/slurm-25.11 ready=$SLURM25_CACHE/.unpacked-$SLURM25_SHA256
    if [[ ! -f $ready ]]; then
        [[ -r $SLURM25_TARBALL ]] || die "no Slurm 25.11 tarball at $SLURM25_TARBALL (../shared/slurm/ beside the repository; or set WIREWISE_SLURM25_TARBALL)"
        [[ $(sha256sum <"$SLURM25_TARBALL") == "$SLURM25_SHA256 "* ]] || die "$SLURM25_TARBALL is not the Slurm 25.11.7 build this script expects (sha256 differs)"
        local tmp
        mkdir -p "$(dirname "$SLURM25_CACHE")"
        tmp=$(mktemp -d "$SLURM25_CACHE.XXXXXX")
        chmod 755 "$tmp"
        if ! tar -xJf "$SLURM25_TARBALL" -C "$tmp" ||
            ! patchelf --set-rpath '$ORIGIN/../lib/slurm' "$tmp"/slurm-25.11/bin/* "$tmp"/slurm-25.11/sbin/*; then
            rm -rf "$tmp"
            die "cannot unpack $SLURM25_TARBALL into $tmp"
        fi
        touch "$tmp/.unpacked-$SLURM25_SHA256"
        # Another start may have unpacked it meanwhile: the first rename wins, the other tree goes.
        if [[ -e $SLURM25_CACHE && ! -f $ready ]]; then rm -rf "$SLURM25_CACHE"; fi
        mv -T "$tmp" "$SLURM25_CACHE" 2>/dev/null || rm -rf "$tmp"
        [[ -f $ready ]] || die "could not unpack Slurm 25.11 into $SLURM25_CACHE"
        say "Slurm 25.11.7 unpacked into $SLURM25_CACHE ($(elapsed))"
    fi
    SLURM_BIN=$tree/bin:$tree/sbin
    SLURM_PLUGIN_DIR=$tree/lib/slurm
    SLURMSTEPD=$tree/sbin/slurmstepd
    [[ $PATH == "$SLURM_BIN":* ]] || PATH=$SLURM_BIN:$PATH
}

# ---------------------------------------------------------------- configuration
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

prepare_daemon_dirs() {
    mkdir -p "$ETC" "$RUN" "$LOG" "$DEV" "$DIR/state" "$DIR/spool" "$MUNGE_DIR" "$MYSQL_DIR"
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
        ((${#sock} < 100)) || die "socket path $sock is too long for a unix socket; use a shorter state folder"
    done
}

plugin_dir_line() {  # PluginDir= when the Slurm in use is not where it was built for (use_slurm25)
    [[ -z ${SLURM_PLUGIN_DIR:-} ]] || echo "PluginDir=$SLURM_PLUGIN_DIR"
}

slurm_conf_common() {  # the slurm.conf lines both clusters share: daemons, scheduling, accounting
    plugin_dir_line
    cat <<EOF
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
SlurmctldPidFile=$RUN/slurmctld.daemon.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmctldDebug=info
SlurmdDebug=info
# The nodes may claim more CPUs than the machine has.
SlurmdParameters=config_overrides
ReturnToService=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Without a default, a job without --mem takes the whole node's memory and array tasks queue.
DefMemPerCPU=512
# Schedule at once (a 4-task array then runs in about a second), and pass over the pending jobs
# every 2 s, not 60 (sched_interval) and 30 (bf_interval): seen on 22.05, a job requeued by
# submitit waited up to 60 s after it was eligible again, and a job of a FLEX reservation that
# also uses nodes outside it (a fleet retest's pair test), which only backfill starts, 30 s ...
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,sched_interval=2,bf_interval=2
# ... and free a cancelled job's resources fast (default 30 s blocks the node ~25 s).
KillWait=2
InactiveLimit=0
MinJobAge=300
EOF
    accounting_conf
    cat <<EOF
# Nothing to mail; the Debian default (/bin/mail) is not installed.
MailProg=/bin/true
GresTypes=gpu
EOF
}

accounting_conf() {  # the slurm.conf lines for accounting through our slurmdbd
    cat <<EOF
# Accounting through slurmdbd: sacct must answer (submitit reads job states from it).
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$DBD_ADDR
AccountingStoragePort=$DBD_PORT
# Messages to slurmdbd (from slurmctld, sacct, sacctmgr) take their munge socket from here, not AuthInfo.
AccountingStoragePass=socket=$MUNGE_SOCKET
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none
EOF
}

write_slurmdbd_conf() {  # exit status 0 = changed
    # slurmdbd refuses a config readable by others (it holds the database password).
    write_if_changed "$ETC/slurmdbd.conf" 600 <<EOF
# Written by $PROG on every start.
$(plugin_dir_line)
AuthType=auth/munge
# cred_expire=10: a requeued job (preemption) may start again after ~20 s instead of ~130 s.
AuthInfo=socket=$MUNGE_SOCKET,cred_expire=10
DbdHost=$(hostname -s)
DbdAddr=$DBD_ADDR
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
    say "slurmdbd up on $DBD_ADDR:$DBD_PORT ($(elapsed))"
}

start_slurmctld() {
    running slurmctld && return 0
    launch slurmctld slurmctld -D
    wait_for slurmctld "port $CTLD_PORT" port_open "$CTLD_PORT"
    say "slurmctld up on port $CTLD_PORT ($(elapsed))"
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
    SLURM_CONF=$CONF sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER_NAME" Description=tests Organization=wirewise >/dev/null 2>&1 || true
    SLURM_CONF=$CONF sacctmgr -i add user root Account="$ACCOUNT" Cluster="$CLUSTER_NAME" >/dev/null 2>&1 || true
    touch "$DIR/.accounting"
}

cancel_jobs_and_wait() {  # cancel every job of the cluster; wait up to 10 s for the queue to empty
    local jobs i
    jobs=$(SLURM_CONF=$CONF squeue -h -o %A 2>/dev/null | tr '\n' ' ' || true)
    [[ -n ${jobs// /} ]] || return 0
    say "cancelling jobs $jobs"
    # shellcheck disable=SC2086
    SLURM_CONF=$CONF scancel $jobs 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        [[ -z $(SLURM_CONF=$CONF squeue -h -o %A 2>/dev/null) ]] && return 0
        sleep 0.1
    done
}

cancel_stale_jobs() {  # (the script defines live_step_jobs: job ids with a live slurmstepd of its own)
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
    done < <(SLURM_CONF=$CONF squeue -h -t RUNNING,COMPLETING,CONFIGURING -o '%A %V' 2>/dev/null || true)
    ((${#stale[@]})) || return 0
    say "cancelling jobs whose processes are gone: ${stale[*]}"
    SLURM_CONF=$CONF scancel "${stale[@]}" 2>/dev/null || true
    local i
    for ((i = 0; i < 100; i++)); do
        [[ -z $(SLURM_CONF=$CONF squeue -h -t RUNNING,COMPLETING -o %A -j "$(IFS=,; echo "${stale[*]}")" 2>/dev/null) ]] && return 0
        sleep 0.1
    done
}
