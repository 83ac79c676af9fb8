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

T0=$EPOCHREALTIME
ACCOUNT=wirewise
DBD_ADDR=127.0.0.1
# shellcheck source=tests/slurm/daemons.sh
source "$(dirname "${BASH_SOURCE[0]}")/daemons.sh"
daemon_paths
MARKER=$DIR/.wirewise-slurm

# ---------------------------------------------------------------- processes
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

write_slurm_conf() {  # GRES_VALUE ; exit status 0 = changed
    local gres_line=""
    [[ -n $1 ]] && gres_line="Gres=$1"
    write_if_changed "$CONF" 644 <<EOF
# Written by $PROG (tests/slurm/cluster.sh) on every start; edits are overwritten.
ClusterName=$CLUSTER_NAME
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmdSpoolDir=$DIR/spool
SlurmdPidFile=$RUN/slurmd.daemon.pid
SlurmdLogFile=$LOG/slurmd.log
# Small on purpose: campaigns must split longer arrays into chunks numbered from 0.
MaxArraySize=4
$(slurm_conf_common)
NodeName=$NODE NodeAddr=127.0.0.1 Sockets=2 CoresPerSocket=8 ThreadsPerCore=1 CPUs=16 RealMemory=65536 $gres_line State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

prepare_dirs() {
    prepare_daemon_dirs
    touch "$MARKER"
}

# ---------------------------------------------------------------- daemons

start_slurmd() { launch slurmd slurmd -D; }

node_state() { SLURM_CONF=$CONF sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n 1; }

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

# ---------------------------------------------------------------- commands

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
    ensure_packages "${SLURM_PACKAGES[@]}"
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
    # Cancel what still runs, so no job outlives the cluster (KillWait is 2 s).
    if running slurmctld && [[ -f $CONF ]]; then cancel_jobs_and_wait; fi
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
    print_daemons 10 "${DAEMONS[@]}"
    local up=$UP total=${#DAEMONS[@]}
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
