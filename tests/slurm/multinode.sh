#!/usr/bin/env bash
# A real multi-node Slurm 25.11 test cluster on one machine, without systemd: munged, MariaDB,
# slurmdbd and slurmctld on the host (tests/slurm/daemons.sh, shared with cluster.sh); each
# compute node a slurmd in its own network, UTS and mount namespaces, with its own hostname,
# its own eth0 (a veth on a host bridge), its own /etc/hosts, and its own fake GPUs and wiring.
# Job steps and their processes run inside their node's namespaces, so `srun -N2 hostname`
# prints two names and torch.distributed rendezvous crosses a (virtual) network. It runs Slurm
# 25.11.7 from ../shared/slurm/ beside the repository (unpacked once, daemons.sh use_slurm25),
# while the one-node cluster (cluster.sh) runs Debian's 22.05: every suite run sees both.
#
#   multinode.sh start          start what is missing (a crashed node alone; everything when the
#                               settings changed) and wait until every node is usable; a healthy
#                               cluster is left alone ("already running")
#   multinode.sh stop           cancel the jobs, stop the daemons this script started (by recorded
#                               pid), kill what is left inside the nodes' namespaces, delete the
#                               veths and the bridge; files in the state folder stay
#   multinode.sh status         print what runs; exit 0 when every node is usable, 3 when nothing
#                               runs, 1 otherwise
#   multinode.sh env            print `export` lines (SLURM_CONF, PATH with Slurm 25.11's commands
#                               first, ...) for a shell or a test
#   multinode.sh exec NODE CMD  run CMD (default: bash) inside NODE's namespaces, with the node's
#                               fake nvidia-smi on PATH, e.g. `exec wwn2 tc qdisc add dev eth0 root tbf
#                               rate 80mbit burst 64kbit latency 400ms`
#   multinode.sh crash NODE     SIGKILL every process in NODE's namespaces (slurmd, job steps, job
#                               processes): the node is lost, as in a power cut; `start` brings it back
#   multinode.sh clean          stop, then delete the state folder
#
# Environment (defaults):
#   WIREWISE_MULTINODE_PORT (17817): slurmctld's port; +1 slurmd (inside the nodes), +2 slurmdbd,
#       +3 MariaDB. It also names the rest, so one number keeps two clusters apart:
#   WIREWISE_MULTINODE_DIR (/tmp/ww-multinode-PORT), WIREWISE_MULTINODE_NET (10.77.(PORT mod 256):
#       a private /24 that must not exist here; .1 = the host, .11.. = the nodes),
#       WIREWISE_MULTINODE_BRIDGE (wwmnPORT);
#   WIREWISE_MULTINODE_NODES ("wwn1=a100x4 wwn2=a100x4 wwn3=v100x3"): NAME=TYPE per node. A type
#       is its Slurm feature and says what `nvidia-smi topo -m` and NVML report on the node:
#       a100x4 (4 GPUs, NV4 all-to-all), v100x3 (3 GPUs: an NV6 pair and one on PCIe), cpu (no
#       GPU), or the path of any `nvidia-smi topo -m` file (one fake GPU per row). The nodes of one
#       type share one multi-node NVLink domain in their fake NVML (fabric_of);
#   WIREWISE_MULTINODE_CPUS (4 per node), WIREWISE_MULTINODE_MEM_MB (4096 per node),
#   WIREWISE_MULTINODE_SLURMD_TIMEOUT (30 s: a node that stops answering is down 30-40 s later;
#       Slurm's default is 300 s, and wirewise's own supervisors give up on a silent peer after 20 s),
#   WIREWISE_MULTINODE_HEALTH_INTERVAL (5 s: how often slurmd runs its HealthCheckProgram),
#   WIREWISE_MULTINODE_TIMEOUT (60 s per wait),
#   WIREWISE_MULTINODE_TOPOLOGY (none): a topology.conf or topology.yaml file (by its name's end,
#       e.g. what `wirewise topo slurm --blocks` writes) the cluster loads: a .conf one with
#       TopologyPlugin=topology/block; unset, Slurm's default flat topology. Must run as root.
#
# Hooks: slurmd's HealthCheckProgram and Prolog run STATE/hooks/health-check and STATE/hooks/prolog
# when a test puts an executable there (and do nothing otherwise), inside the node, as slurmd runs
# them on a real cluster: as root, without arguments, with only SLURMD_NODENAME (and for the
# prolog SLURM_JOB_ID, SLURM_JOB_GPUS, ...) in the environment.
# Progress and errors go to stderr; stdout carries only what `env` and `status` print.
set -euo pipefail

CALLER_PATH=$PATH  # what `env` puts Slurm 25.11's commands in front of
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROG=wirewise-multinode
PORT=${WIREWISE_MULTINODE_PORT:-17817}
DIR=$(realpath -m "${WIREWISE_MULTINODE_DIR:-/tmp/ww-multinode-$PORT}")
NODE_SPEC=${WIREWISE_MULTINODE_NODES:-wwn1=a100x4 wwn2=a100x4 wwn3=v100x3}
NET=${WIREWISE_MULTINODE_NET:-10.77.$((PORT % 256))}
BRIDGE=${WIREWISE_MULTINODE_BRIDGE:-wwmn$PORT}
NCPUS=${WIREWISE_MULTINODE_CPUS:-4}
MEM_MB=${WIREWISE_MULTINODE_MEM_MB:-4096}
SLURMD_TIMEOUT=${WIREWISE_MULTINODE_SLURMD_TIMEOUT:-30}
HEALTH_INTERVAL=${WIREWISE_MULTINODE_HEALTH_INTERVAL:-5}
TIMEOUT=${WIREWISE_MULTINODE_TIMEOUT:-60}
TOPOLOGY=${WIREWISE_MULTINODE_TOPOLOGY:-}
PARTITION=debug
CLUSTER_NAME=wwmulti
ACCOUNT=wirewise
CTL_NAME=$(hostname -s)
FIXTURES=$HERE/../fixtures/topo

T0=$EPOCHREALTIME
# shellcheck source=tests/slurm/daemons.sh
source "$HERE/daemons.sh"
daemon_paths
NODE_ROOT=$DIR/node    # what each node sees as its own folder (empty on the host)
MARKER=$DIR/.wirewise-multinode
HOST_DAEMONS=(munged mariadbd slurmdbd slurmctld)

# ---------------------------------------------------------------- settings
declare -a NODES=()
declare -A TYPE_OF=()

validate() {
    [[ $PORT =~ ^[0-9]+$ ]] && ((PORT >= 1024 && PORT <= 65000)) || die "WIREWISE_MULTINODE_PORT must be 1024..65000"
    [[ $NET =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || die "WIREWISE_MULTINODE_NET must be the first three octets of a /24, e.g. 10.77.0"
    local a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]} c=${BASH_REMATCH[3]}
    # Private ranges only: the addresses exist only on our bridge and veths.
    ((a <= 255 && b <= 255 && c <= 255)) && ((a == 10 || (a == 172 && b >= 16 && b <= 31) || (a == 192 && b == 168))) ||
        die "WIREWISE_MULTINODE_NET $NET is not in a private range (10/8, 172.16/12, 192.168/16)"
    [[ $BRIDGE =~ ^[a-zA-Z][a-zA-Z0-9_-]{0,11}$ ]] || die "WIREWISE_MULTINODE_BRIDGE must be an interface name of at most 12 characters"
    [[ $NCPUS =~ ^[1-9][0-9]*$ && $MEM_MB =~ ^[1-9][0-9]*$ ]] || die "WIREWISE_MULTINODE_CPUS and _MEM_MB must be positive numbers"
    [[ $SLURMD_TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "WIREWISE_MULTINODE_SLURMD_TIMEOUT must be a number of seconds"
    [[ $HEALTH_INTERVAL =~ ^[1-9][0-9]*$ ]] || die "WIREWISE_MULTINODE_HEALTH_INTERVAL must be a number of seconds"
    CTLD_PORT=$PORT SLURMD_PORT=$((PORT + 1)) DBD_PORT=$((PORT + 2)) MYSQL_PORT=$((PORT + 3))
    HOST_ADDR=$NET.1
    DBD_ADDR=$HOST_ADDR  # jobs on the nodes run sacct too: 127.0.0.1 is their own loopback
    NODES=()
    TYPE_OF=()
    local entry name type
    for entry in $NODE_SPEC; do
        name=${entry%%=*}
        type=${entry#*=}
        [[ $entry == *=* && -n $type ]] || die "WIREWISE_MULTINODE_NODES: '$entry' is not NAME=TYPE (e.g. wwn1=a100x4)"
        [[ $name =~ ^[a-z][a-z0-9-]{0,30}$ ]] || die "WIREWISE_MULTINODE_NODES: '$name' is not a host name (lower-case letters, digits, '-')"
        [[ $name != "$CTL_NAME" ]] || die "node name $name is this machine's host name"
        [[ -z ${TYPE_OF[$name]:-} ]] || die "WIREWISE_MULTINODE_NODES names $name twice"
        wiring_of "$type" >/dev/null
        NODES+=("$name")
        TYPE_OF[$name]=$type
    done
    ((${#NODES[@]} >= 1 && ${#NODES[@]} <= 16)) || die "WIREWISE_MULTINODE_NODES must name 1 to 16 nodes"
    case $TOPOLOGY in
        "" | *.conf | *.yaml) [[ -z $TOPOLOGY || -r $TOPOLOGY ]] || die "WIREWISE_MULTINODE_TOPOLOGY: cannot read $TOPOLOGY" ;;
        *) die "WIREWISE_MULTINODE_TOPOLOGY must name a topology.conf or topology.yaml file (ending .conf or .yaml)" ;;
    esac
}

wiring_of() {  # TYPE -> the `nvidia-smi topo -m` file its nodes report ("" for cpu)
    case $1 in
        a100x4) echo "$FIXTURES/a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt" ;;
        v100x3) echo "$FIXTURES/v100-sxm2-2gpu-nv6-plus-rtx3090-pcie-ansi.txt" ;;
        cpu) echo "" ;;
        */*) [[ -r $1 ]] || die "node type $1: no such wiring file"; realpath "$1" ;;
        *) die "unknown node type '$1' (a100x4, v100x3, cpu, or the path of an \`nvidia-smi topo -m\` file)" ;;
    esac
}
feature_of() { local t=${1##*/}; echo "${t%.txt}"; }
fabric_of() {  # TYPE -> "CLUSTER-UUID CLIQUE-ID" its fake NVML reports: one NVLink domain per node type
    [[ $1 != cpu ]] || return 0
    local h
    h=$(printf '%s' "wirewise-test-domain-$(feature_of "$1")" | md5sum)
    echo "${h:0:8}-${h:8:4}-${h:12:4}-${h:16:4}-${h:20:12} 1"
}
gpus_in() {  # WIRING-FILE -> its GPU rows: GPUn followed by its own X (ANSI colour codes aside)
    [[ -n $1 ]] || { echo 0; return; }
    sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '$1 ~ /^GPU[0-9]+$/ { for (i = 2; i <= NF; i++) if ($i == "X") { n++; break } } END { print n + 0 }'
}
gpu_name_of() {  # TYPE -> the model its fake NVML reports
    case $1 in
        a100x4) echo "NVIDIA A100-SXM4-40GB (fake)" ;;
        v100x3) echo "Tesla V100-SXM2-16GB (fake)" ;;
        *) echo "Fake GPU ($(feature_of "$1"))" ;;
    esac
}

settings_text() {  # what a running cluster must match to be kept
    printf 'nodes=%s net=%s bridge=%s port=%s cpus=%s mem=%s slurmd_timeout=%s health_interval=%s dir=%s\n' \
        "$NODE_SPEC" "$NET" "$BRIDGE" "$PORT" "$NCPUS" "$MEM_MB" "$SLURMD_TIMEOUT" "$HEALTH_INTERVAL" "$DIR"
}

use_recorded_settings() {  # stop/status/env/exec act on the cluster as it was started
    [[ -f $RUN/settings.env ]] || return 0
    # shellcheck source=/dev/null
    source "$RUN/settings.env"
    validate
}

node_addr() { echo "$NET.$((10 + $1))"; }  # node index 1.. -> address
veth_of() { echo "${BRIDGE}v$1"; }  # host end of node i's veth pair (<= 15 characters)
index_of() {
    local i
    for i in "${!NODES[@]}"; do [[ ${NODES[$i]} == "$1" ]] && { echo $((i + 1)); return 0; }; done
    die "no node $1 in this cluster (${NODES[*]})"
}

# ---------------------------------------------------------------- namespaces
# A node is the pair (net namespace inode, uts namespace inode) recorded when it was made. Every
# live process with both is inside a namespace this script created: slurmd, job steps (which
# double-fork to ppid 1), job processes. Nothing else is ever signalled.
ns_ids() { stat -L -c '%i' "/proc/$1/ns/net" "/proc/$1/ns/uts" 2>/dev/null | tr '\n' ' ' | sed 's/ $//'; }
HOST_NS=$(ns_ids $$)

pids_in_ns() {  # NODE -> the live pids inside its recorded namespaces
    local f=$RUN/$1.ns net uts
    [[ -s $f ]] || return 0
    read -r net uts <"$f"
    [[ -n $net && -n $uts && "$net $uts" != "$HOST_NS" ]] || return 0
    local -A in_net=()
    local p ino
    while read -r p ino; do
        [[ $ino == "$net" ]] && { p=${p#/proc/}; in_net[${p%%/*}]=1; }
    done < <(stat -L -c '%n %i' /proc/[0-9]*/ns/net 2>/dev/null || true)
    ((${#in_net[@]})) || return 0
    while read -r p ino; do
        p=${p#/proc/}
        p=${p%%/*}
        [[ $ino == "$uts" && -n ${in_net[$p]:-} ]] && ! is_dead "$p" && echo "$p"
    done < <(stat -L -c '%n %i' /proc/[0-9]*/ns/uts 2>/dev/null || true)
    return 0
}

node_pid() {  # NODE -> its first process (node-init, then slurmd: one pid) when alive in its namespaces
    local pid
    pid=$(recorded_pid "slurmd-$1")
    [[ -n $pid && -s $RUN/$1.ns ]] || return 1
    is_dead "$pid" && return 1
    [[ $(ns_ids "$pid") == "$(cat "$RUN/$1.ns")" ]] || return 1
    echo "$pid"
}
slurmd_up() {  # NODE: node-init has exec'ed slurmd
    local pid
    pid=$(node_pid "$1") || return 1
    comm_of "$pid"
    [[ $COMM == slurmd ]]
}

kill_node() {  # NODE SIGNAL: signal every process of the node; wait for them to go
    # shellcheck disable=SC2046
    kill_and_wait "-$2" $(pids_in_ns "$1")
}

stop_nodes() {  # NODE...: their slurmds together (SIGTERM), then whatever is left in their namespaces
    local node pid pids=()
    for node in "$@"; do
        pid=$(node_pid "$node") && { say "stopping node $node (slurmd pid $pid)"; pids+=("$pid"); }
    done
    kill_and_wait "${pids[@]}"
    for node in "$@"; do
        kill_node "$node" TERM
        rm -f "$RUN/slurmd-$node.pid" "$RUN/$node.ns" "$RUN/$node".netready.*
    done
}

# ---------------------------------------------------------------- network
link_exists() { ip link show dev "$1" >/dev/null 2>&1; }

check_network_free() {  # the subnet must not exist here already (someone else's interface or route)
    local a
    a=$(ip -4 -o addr show | awk -v net="$NET." -v br="$BRIDGE" '$2 != br && index($4, net) == 1 { print $2 " " $4 }')
    [[ -z $a ]] || die "addresses of $NET.0/24 already exist on this machine ($a); choose another WIREWISE_MULTINODE_NET"
    a=$(ip -4 route show | awk -v net="$NET." -v br="$BRIDGE" 'index($1, net) == 1 && $0 !~ (" dev " br " ") { print }')
    [[ -z $a ]] || die "a route for $NET.0/24 already exists ($a); choose another WIREWISE_MULTINODE_NET"
}

setup_bridge() {
    if link_exists "$BRIDGE"; then
        [[ -f $RUN/bridge.ours ]] || die "interface $BRIDGE exists but was not made by this script; set WIREWISE_MULTINODE_BRIDGE"
    else
        check_network_free
        ip link add "$BRIDGE" type bridge || die "cannot create bridge $BRIDGE (a kernel without bridge support?)"
        echo "$BRIDGE" >"$RUN/bridge.ours"
    fi
    # No IPv6 on our links: nothing but the IPv4 /24 ever appears on them.
    [[ -w /proc/sys/net/ipv6/conf/$BRIDGE/disable_ipv6 ]] && echo 1 >"/proc/sys/net/ipv6/conf/$BRIDGE/disable_ipv6"
    ip -4 addr show dev "$BRIDGE" | grep -q " $HOST_ADDR/24 " || ip addr add "$HOST_ADDR/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
}

delete_links() {
    local i v
    for ((i = 1; i <= ${#NODES[@]}; i++)); do
        v=$(veth_of "$i")
        if [[ -f $RUN/veth$i.ours ]]; then
            # (It vanishes with its node's namespace: only complain if it stays.)
            link_exists "$v" && { ip link del "$v" 2>/dev/null || ! link_exists "$v" || say "could not delete $v"; }
            rm -f "$RUN/veth$i.ours"
        fi
    done
    if [[ -f $RUN/bridge.ours ]]; then
        link_exists "$BRIDGE" && { ip link del "$BRIDGE" || die "could not delete bridge $BRIDGE"; }
        rm -f "$RUN/bridge.ours"
    fi
}

# ---------------------------------------------------------------- nodes
# What runs first in a node's new namespaces (unshare execs it): the hostname, the node's own
# /etc/hosts, /etc/resolv.conf, node folder and munge folder (bind mounts in its mount namespace
# only; mount -n leaves no /run/mount/utab entry on the host), the node's own munged, a wait for
# the host to plug in eth0, then `exec slurmd` (one pid all along).
# One munged per node, as on a real cluster: a munge credential decodes once per munged (replay
# protection), and Slurm 25.11, built without --enable-multiple-slurmd, refuses the replay that a
# shared munged reports when a job step's credential reaches the second node ("_verify_signature:
# failed decode", srun: "Header lengths are longer than data received"). The node's munged has the
# host's key and sits where slurm.conf's AuthInfo=socket= says, in the node's view.
NODE_INIT='set -eu
node=$1 etc=$2 ready=$3.$$ timeout=$4 own=$5 mountpoint=$6 stepd=$7 munge_own=$8 munge_dir=$9
echo "$node" >/proc/sys/kernel/hostname
mount -n --bind "$etc/hosts" /etc/hosts
mount -n --bind "$etc/resolv.conf" /etc/resolv.conf
mount -n --bind "$own" "$mountpoint"
mount -n --bind "$munge_own" "$munge_dir"
setpriv --reuid=munge --regid=munge --init-groups munged --socket="$munge_dir/munge.socket" \
    --key-file="$munge_dir/munge.key" --pid-file="$munge_dir/munged.pid" \
    --log-file="$munge_dir/munged.log" --seed-file="$munge_dir/munged.seed"
deadline=$((SECONDS + timeout))
until [[ -e $ready && -S $munge_dir/munge.socket ]]; do
    ((SECONDS < deadline)) || { echo "$node: network or munged not set up within ${timeout}s" >&2; exit 1; }
    sleep 0.05
done
exec slurmd -D -d "$stepd"'

node_munge_dir() {  # NODE: the folder its munged sees as $MUNGE_DIR: the cluster's key, no socket yet
    local own=$DIR/node-munge/$1
    rm -rf "$own"
    mkdir -p "$own"
    cp "$MUNGE_DIR/munge.key" "$own/munge.key"
    chown -R munge:munge "$own"
    chmod 711 "$own"
    chmod 600 "$own/munge.key"
}

start_node() {  # INDEX
    local i=$1 node=${NODES[$(($1 - 1))]} addr v pid ids net uts deadline
    addr=$(node_addr "$i")
    v=$(veth_of "$i")
    mkdir -p "$DIR/spool/$node"
    node_munge_dir "$node"
    launch "slurmd-$node" unshare --net --uts --mount --propagation private -- \
        bash -c "$NODE_INIT" node-init "$node" "$ETC/node" "$RUN/$node.netready" "$TIMEOUT" \
        "$DIR/nodes/$node" "$NODE_ROOT" "$SLURMSTEPD" "$DIR/node-munge/$node" "$MUNGE_DIR"
    pid=$(recorded_pid "slurmd-$node")
    # unshare() changes the namespaces in one call, but the two ids are read one after the other.
    deadline=$((SECONDS + TIMEOUT))
    while :; do
        ids=$(ns_ids "$pid")
        read -r net uts <<<"$ids"
        [[ -n $net && -n $uts && $net != "${HOST_NS% *}" && $uts != "${HOST_NS#* }" ]] && break
        is_dead "$pid" && { show_logs "slurmd-$node"; die "node $node: unshare failed"; }
        ((SECONDS < deadline)) || die "node $node: no new namespaces after ${TIMEOUT}s"
        sleep 0.02
    done
    echo "$ids" >"$RUN/$node.ns"
    if link_exists "$v"; then
        [[ -f $RUN/veth$i.ours ]] || die "interface $v exists but was not made by this script; set WIREWISE_MULTINODE_BRIDGE"
        ip link del "$v"
    fi
    ip link add "$v" type veth peer name eth0 netns "$pid" || die "cannot create veth $v for $node"
    echo "$v" >"$RUN/veth$i.ours"
    [[ -w /proc/sys/net/ipv6/conf/$v/disable_ipv6 ]] && echo 1 >"/proc/sys/net/ipv6/conf/$v/disable_ipv6"
    ip link set "$v" master "$BRIDGE"
    ip link set "$v" up
    # No default route: nothing from a node reaches anything but the /24.
    nsenter --target "$pid" --net sh -c "
        set -e
        sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
        ip link set lo up
        ip addr add $addr/24 dev eth0
        ip link set eth0 up" || die "cannot configure eth0 in node $node"
    # Named after the pid: only this launch's node-init goes on (it waits for "$3.$$").
    touch "$RUN/$node.netready.$pid"
}

check_links() {  # NODE...: each reaches the controller and the next node over the bridge
    local node next pid
    for node in "$@"; do
        next=$(node_addr $(($(index_of "$node") % ${#NODES[@]} + 1)))
        pid=$(node_pid "$node") || die "node $node is not running"
        nsenter --target "$pid" --net bash -c "(exec 3<>/dev/tcp/$HOST_ADDR/$CTLD_PORT) && (exec 3<>/dev/tcp/$next/$SLURMD_PORT)" 2>/dev/null ||
            die "node $node cannot open TCP to $HOST_ADDR:$CTLD_PORT or $next:$SLURMD_PORT (a firewall on bridged traffic, e.g. Docker's FORWARD DROP?)"
    done
}

node_states() { SLURM_CONF=$CONF sinfo -h -N -p "$PARTITION" -o '%N %T' 2>/dev/null | sort -u; }

forget_jobs_of() {  # NODE (stopped): jobs slurmctld still runs there end as on a node failure
    # A real node that crashed comes back with a new boot time, and slurmctld ends the jobs it
    # lost; these nodes share the host's boot time, so say it: DOWN requeues or ends them
    # (NODE_FAIL), and ReturnToService=2 brings the node back once its slurmd registers.
    [[ -n $(SLURM_CONF=$CONF squeue -h -w "$1" -t RUNNING,COMPLETING,CONFIGURING -o %A 2>/dev/null) ]] || return 0
    say "node $1 restarts under jobs slurmctld still runs there: setting it DOWN first"
    SLURM_CONF=$CONF scontrol update NodeName="$1" State=DOWN Reason="restarted by $PROG" >/dev/null 2>&1 || true
}

resume_nodes() {  # NODE...: a drain/down left by an earlier run outlives its cause: clear it
    local n s
    while read -r n s; do
        [[ " $* " == *" $n "* ]] || continue
        case $s in drain* | *drain | down* | inval* | fail*)
            say "node $n was '$s'; resuming it"
            SLURM_CONF=$CONF scontrol update NodeName="$n" State=RESUME >/dev/null 2>&1 || true ;;
        esac
    done < <(node_states)
}

wait_nodes_usable() {
    local deadline=$((SECONDS + TIMEOUT)) states n s up bad node
    while :; do
        states=$(node_states || true)
        up=0 bad=""
        while read -r n s; do
            [[ -n $n ]] || continue
            usable "$s" && up=$((up + 1))
            case $s in drain* | *drain | inval*) bad+=" $n:$s" ;; esac
        done <<<"$states"
        ((up == ${#NODES[@]})) && return 0
        if [[ -n $bad ]]; then
            reasons
            for node in "${NODES[@]}"; do show_logs "slurmd-$node"; done
            die "nodes unusable:$bad (the reason is above)"
        fi
        running slurmctld || { show_logs slurmctld; die "slurmctld exited while the nodes came up"; }
        for node in "${NODES[@]}"; do
            node_pid "$node" >/dev/null || { show_logs "slurmd-$node"; die "slurmd of $node exited"; }
        done
        if ((SECONDS >= deadline)); then
            echo "$states" >&2
            for node in "${NODES[@]}"; do show_logs "slurmd-$node"; done
            show_logs slurmctld
            die "not every node usable after ${TIMEOUT}s"
        fi
        sleep 0.05
    done
}

live_step_jobs() {  # job ids with a live slurmstepd in one of our nodes ("slurmstepd: [JOBID.STEP]")
    local node p cmd
    for node in "${NODES[@]}"; do
        for p in $(pids_in_ns "$node"); do
            comm_of "$p"
            [[ $COMM == slurmstepd ]] || continue
            cmd=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
            [[ $cmd =~ \[([0-9]+)\. ]] && echo "${BASH_REMATCH[1]}"
        done
    done
    return 0
}

# ---------------------------------------------------------------- configuration
node_files() {  # NODE -> "TARGET SOURCE" lines: what its folder holds beside its fake devices
    local own=$DIR/nodes/$1 wiring
    wiring=$(wiring_of "${TYPE_OF[$1]}")
    [[ -n $wiring ]] || return 0
    echo "$own/topo.txt $wiring"
    echo "$own/bin/nvidia-smi $HERE/fake_node/nvidia-smi"
    echo "$own/python/pynvml.py $HERE/fake_node/pynvml.py"
}

node_folder_current() {  # NODE: its folder is what the settings and fake_node/ say
    local own=$DIR/nodes/$1 target source
    [[ -f $own/gpu-count && $(cat "$own/gpu-count") == "$(node_gpus "$1")" ]] || return 1
    [[ -f $own/gpu-name && $(cat "$own/gpu-name") == "$(gpu_name_of "${TYPE_OF[$1]}")" ]] || return 1
    [[ $(cat "$own/fabric" 2>/dev/null) == "$(fabric_of "${TYPE_OF[$1]}")" ]] || return 1
    while read -r target source; do
        cmp -s "$target" "$source" || return 1
    done < <(node_files "$1")
    return 0
}

write_node_folder() {  # NODE (not running): its wiring, fake GPUs (c 195 N), nvidia-smi and NVML
    local node=$1 own=$DIR/nodes/$1 n i target source
    n=$(node_gpus "$node")
    rm -rf "$own"
    mkdir -p "$own/dev" "$own/bin" "$own/python" "$NODE_ROOT"
    echo "$n" >"$own/gpu-count"
    gpu_name_of "${TYPE_OF[$node]}" >"$own/gpu-name"
    [[ ${TYPE_OF[$node]} == cpu ]] || fabric_of "${TYPE_OF[$node]}" >"$own/fabric"
    while read -r target source; do cp "$source" "$target"; done < <(node_files "$node")
    for ((i = 0; i < n; i++)); do
        mknod "$own/dev/nvidia$i" c 195 "$i" || die "mknod $own/dev/nvidia$i failed (needs root and a filesystem that allows device nodes)"
    done
}

node_gpus() { gpus_in "$(wiring_of "${TYPE_OF[$1]}")"; }

write_configs() {  # exit status 0 = slurm.conf or gres.conf changed
    local i node n gres changed=1 nodelist
    mkdir -p "$ETC/node"
    # What the nodes see as /etc/hosts and /etc/resolv.conf. No nameserver: a name that is not
    # listed fails at once inside a node, and no DNS query can leave it.
    {
        echo "127.0.0.1 localhost"
        echo "::1 localhost ip6-localhost ip6-loopback"
        echo "$HOST_ADDR $CTL_NAME"
        for ((i = 1; i <= ${#NODES[@]}; i++)); do echo "$(node_addr "$i") ${NODES[$((i - 1))]}"; done
    } | write_if_changed "$ETC/node/hosts" 644 || true
    printf '# %s nodes: no DNS\noptions timeout:1 attempts:1\n' "$PROG" | write_if_changed "$ETC/node/resolv.conf" 644 || true
    # Runs before every task (slurmstepd, inside the node): the node's fake GPU tools come first.
    write_if_changed "$ETC/task-prolog" 755 <<EOF || true
#!/bin/sh
# Written by $PROG: a node with fake GPUs puts its own nvidia-smi and NVML first on the paths.
[ -f "$NODE_ROOT/topo.txt" ] || exit 0
echo "export PATH=$NODE_ROOT/bin:\$PATH"
echo "export PYTHONPATH=$NODE_ROOT/python\${PYTHONPATH:+:\$PYTHONPATH}"
EOF
    # slurmd's HealthCheckProgram and Prolog: a test's hook when there is one (the header says how).
    local hook
    for hook in health-check prolog; do
        write_if_changed "$ETC/$hook" 755 <<EOF || true
#!/bin/sh
# Written by $PROG: slurmd runs this as its $hook; it runs $DIR/hooks/$hook when a test put one there.
[ -x "$DIR/hooks/$hook" ] || exit 0
exec "$DIR/hooks/$hook"
EOF
    done
    {
        echo "# Written by $PROG on every start: each node's fake GPUs, in the node's own folder."
        echo "AutoDetect=off"
        for node in "${NODES[@]}"; do
            n=$(node_gpus "$node")
            ((n == 0)) && continue
            ((n == 1)) && echo "NodeName=$node Name=gpu File=$NODE_ROOT/dev/nvidia0"
            ((n > 1)) && echo "NodeName=$node Name=gpu File=$NODE_ROOT/dev/nvidia[0-$((n - 1))]"
        done
        true
    } | write_if_changed "$ETC/gres.conf" 644 && changed=0
    nodelist=$(IFS=,; echo "${NODES[*]}")
    # The topology a test asked for (Slurm reads topology.yaml first, topology.conf otherwise).
    local topology_line=""
    case $TOPOLOGY in
        *.conf) topology_line="TopologyPlugin=topology/block"
            write_if_changed "$ETC/topology.conf" 644 <"$TOPOLOGY" && changed=0
            [[ -e $ETC/topology.yaml ]] && { rm -f "$ETC/topology.yaml"; changed=0; } ;;
        *.yaml) write_if_changed "$ETC/topology.yaml" 644 <"$TOPOLOGY" && changed=0
            [[ -e $ETC/topology.conf ]] && { rm -f "$ETC/topology.conf"; changed=0; } ;;
        *) [[ -e $ETC/topology.conf || -e $ETC/topology.yaml ]] && { rm -f "$ETC/topology.conf" "$ETC/topology.yaml"; changed=0; } ;;
    esac
    {
        cat <<EOF
# Written by $PROG (tests/slurm/multinode.sh) on every start; edits are overwritten.
ClusterName=$CLUSTER_NAME
# slurmctld runs on the host, reached at the host end of the bridge (a node's 127.0.0.1 is its own).
SlurmctldHost=$CTL_NAME($HOST_ADDR)
SlurmctldPort=$CTLD_PORT
# Every slurmd has its own network namespace, so they all use the same port.
SlurmdPort=$SLURMD_PORT
# Before every task: the node's fake nvidia-smi and NVML first on its paths.
TaskProlog=$ETC/task-prolog
# A test's health check (every HealthCheckInterval s, any node state) and prolog (STATE/hooks/).
HealthCheckProgram=$ETC/health-check
HealthCheckInterval=$HEALTH_INTERVAL
Prolog=$ETC/prolog
# %n = the node name: one spool folder, pid file and log per slurmd.
SlurmdSpoolDir=$DIR/spool/%n
SlurmdPidFile=$RUN/slurmd.%n.daemon.pid
SlurmdLogFile=$LOG/slurmd.%n.log
# A node that stops answering is down after this many seconds (default 300; longer than the
# 20 s after which a task's supervisors give up on a silent peer, as on a real cluster), and
# one whose slurmd comes back returns to service by itself (ReturnToService=2).
SlurmdTimeout=$SLURMD_TIMEOUT
$(slurm_conf_common)
EOF
        for ((i = 1; i <= ${#NODES[@]}; i++)); do
            node=${NODES[$((i - 1))]}
            n=$(node_gpus "$node")
            gres=""
            ((n)) && gres=" Gres=gpu:$n"
            printf 'NodeName=%s NodeHostname=%s NodeAddr=%s CPUs=%s Sockets=1 CoresPerSocket=%s ThreadsPerCore=1 RealMemory=%s Feature=%s%s State=UNKNOWN\n' \
                "$node" "$node" "$(node_addr "$i")" "$NCPUS" "$NCPUS" "$MEM_MB" "$(feature_of "${TYPE_OF[$node]}")" "$gres"
        done
        [[ -z $topology_line ]] || echo "$topology_line"
        echo "PartitionName=$PARTITION Nodes=$nodelist Default=YES MaxTime=INFINITE State=UP"
    } | write_if_changed "$CONF" 644 && changed=0
    return $changed
}

check_ports() {  # PORT...: free on this machine
    local p
    for p in "$@"; do
        port_open "$p" && die "TCP port $p is taken on this machine; set WIREWISE_MULTINODE_PORT (it uses that port and the next three)"
    done
    return 0
}

# ---------------------------------------------------------------- commands
any_ours() {  # pid files we wrote (not the daemons' own *.daemon.pid), namespaces and links we made
    local f
    for f in "$RUN"/munged.pid "$RUN"/mariadbd.pid "$RUN"/slurmdbd.pid "$RUN"/slurmctld.pid \
        "$RUN"/slurmd-*.pid "$RUN"/*.ns "$RUN"/bridge.ours "$RUN"/veth*.ours; do
        [[ -e $f ]] && return 0
    done
    return 1
}

do_stop() {  # with the lock held, under the settings the cluster was started with
    local node
    if running slurmctld && [[ -f $CONF ]]; then cancel_jobs_and_wait; fi
    stop_nodes "${NODES[@]}"
    stop_pids slurmctld slurmdbd
    stop_pids mariadbd munged
    delete_links
    rm -f "$RUN/settings"
}

start_failed() {  # EXIT trap of a start
    trap - EXIT
    (($1)) || return 0
    say "start failed; stopping what it started (logs stay in $LOG)"
    do_stop || true
    exit "$1"
}

forget_other_slurm() {  # a state folder of another Slurm build (22.05, before): its saved state goes
    # slurmctld and slurmdbd read only the state and database of recent releases (a 22.05 one makes
    # them exit: "Database schema is too old"), and the test cluster keeps nothing worth converting:
    # stop it and start afresh. Every start of ours rewrites slurm-build after run/settings, so
    # settings newer than it mean an older script (Slurm 22.05) started the cluster since.
    if [[ $(cat "$DIR/slurm-build" 2>/dev/null) == "$SLURM25_SHA256" ]] && ! [[ $RUN/settings -nt $DIR/slurm-build ]]; then
        return 0
    fi
    if [[ -d $DIR/state ]]; then
        say "the state folder is of another Slurm build: stopping its cluster, starting with a clean state and database"
        any_ours && { (use_recorded_settings && do_stop) || true; }
        rm -rf "$DIR/state" "$DIR/spool" "$MYSQL_DIR/data" "$DIR/.accounting"
    fi
    mkdir -p "$DIR"
    echo "$SLURM25_SHA256" >"$DIR/slurm-build"
}

cmd_start() {
    ((EUID == 0)) || die "must run as root (namespaces, veths, mknod, munged as user munge)"
    validate
    lock
    ensure_packages "${DAEMON_PACKAGES[@]}" "${SLURM25_PACKAGES[@]}" ip:iproute2 \
        unshare:util-linux nsenter:util-linux setpriv:util-linux
    use_slurm25
    mkdir -p "$RUN"
    if [[ -f $RUN/settings ]] && [[ $(cat "$RUN/settings") != "$(settings_text)" ]] && any_ours; then
        say "the settings changed: stopping the cluster started with the old ones"
        (use_recorded_settings && do_stop) || true
    fi
    forget_other_slurm
    trap 'start_failed $?' EXIT
    prepare_daemon_dirs
    touch "$MARKER"
    settings_text >"$RUN/settings"
    echo "$SLURM25_SHA256" >"$DIR/slurm-build"  # after the settings: see forget_other_slurm
    printf 'NODE_SPEC=%q NET=%q BRIDGE=%q PORT=%q\n' "$NODE_SPEC" "$NET" "$BRIDGE" "$PORT" >"$RUN/settings.env"

    local restart=() node name all_up=1
    for node in "${NODES[@]}"; do
        slurmd_up "$node" && node_folder_current "$node" || restart+=("$node")
    done
    local conf_changed=0 dbd_changed=0
    write_configs && conf_changed=1
    write_slurmdbd_conf && dbd_changed=1
    write_mysql_conf
    if ((conf_changed)); then
        # New nodes or GRES: slurmctld and every slurmd restart (a reconfigure does not pick them up).
        stop_nodes "${NODES[@]}"
        stop_pids slurmctld
        restart=("${NODES[@]}")
    fi
    ((dbd_changed)) && stop_pids slurmdbd
    for name in "${HOST_DAEMONS[@]}"; do running "$name" || all_up=0; done
    link_exists "$BRIDGE" || all_up=0
    if ((all_up && ${#restart[@]} == 0)); then
        local n s usable_nodes=0
        while read -r n s; do usable "$s" && usable_nodes=$((usable_nodes + 1)); done < <(node_states)
        if ((usable_nodes == ${#NODES[@]})); then
            trap - EXIT
            say "already running: ${NODES[*]} usable, partition $PARTITION ($(elapsed))"
            return 0
        fi
        # Up, but a node is down or drained (its slurmd hung, or it was drained by a test).
        say "running, but not every node is usable: resuming them"
    fi
    running mariadbd || check_ports "$MYSQL_PORT"
    running slurmdbd || check_ports "$DBD_PORT"
    running slurmctld || check_ports "$CTLD_PORT"
    local ctld_started=0
    running slurmctld || ctld_started=1
    setup_bridge
    start_munged
    start_mariadbd
    start_slurmdbd
    start_slurmctld
    resume_nodes "${NODES[@]}"
    local i
    for i in "${!NODES[@]}"; do
        [[ " ${restart[*]} " == *" ${NODES[$i]} "* ]] || continue
        stop_nodes "${NODES[$i]}"
        forget_jobs_of "${NODES[$i]}"
        write_node_folder "${NODES[$i]}"
        start_node $((i + 1))
    done
    ((${#restart[@]})) && say "nodes ${restart[*]} launched in their namespaces ($(elapsed))"
    wait_nodes_usable
    ((ctld_started)) && cancel_stale_jobs
    ((${#restart[@]})) && check_links "${restart[@]}"
    register_accounting
    trap - EXIT
    say "ready: ${NODES[*]} usable, partition $PARTITION, SLURM_CONF=$CONF ($(elapsed))"
}

cmd_stop() {
    validate
    [[ -d $DIR ]] || { say "not running (no $DIR)"; return 0; }
    lock
    use_recorded_settings
    do_stop
    say "stopped ($(elapsed))"
}

cmd_status() {
    validate
    [[ -d $RUN ]] || { echo "not running (no $RUN)"; return 3; }
    use_recorded_settings
    print_daemons 12 "${HOST_DAEMONS[@]}"
    local n up=$UP total=${#HOST_DAEMONS[@]} left=0 node
    local states
    states=$(node_states || true)
    for node in "${NODES[@]}"; do
        total=$((total + 1))
        n=$(pids_in_ns "$node" | wc -l)
        ((n)) && left=1
        if slurmd_up "$node"; then
            up=$((up + 1))
            printf '%-12s running  pid %s, %s processes, %s, %s GPUs, slurm: %s\n' "$node" "$(node_pid "$node")" "$n" \
                "${TYPE_OF[$node]}" "$(node_gpus "$node")" "$(awk -v n="$node" '$1 == n { print $2 }' <<<"$states")"
        else
            printf '%-12s stopped%s\n' "$node" "$( ((n)) && echo ", $n processes left in its namespaces")"
        fi
    done
    if link_exists "$BRIDGE"; then
        printf '%-12s up (%s/24)\n' "$BRIDGE" "$HOST_ADDR"
        left=1
    fi
    if ((up == 0)); then
        ((left)) && { echo "not running, but leftovers remain: run stop"; return 1; }
        echo "not running"
        return 3
    fi
    printf 'SLURM_CONF   %s\n' "$CONF"
    local ok
    ok=$(awk '$2 ~ /^(idle|mixed|allocated|completing)$/' <<<"$states" | wc -l)
    ((up == total && ok == ${#NODES[@]})) && return 0
    return 1
}

cmd_env() {
    validate
    use_recorded_settings
    printf 'export SLURM_CONF=%q\n' "$CONF"
    printf 'export PATH=%q\n' "$SLURM_BIN:$CALLER_PATH"
    printf 'export WIREWISE_MULTINODE_SLURM_BIN=%q\n' "$SLURM_BIN"
    printf 'export WIREWISE_MULTINODE_DIR=%q\n' "$DIR"
    printf 'export WIREWISE_MULTINODE_PORT=%q\n' "$PORT"
    printf 'export WIREWISE_MULTINODE_PARTITION=%q\n' "$PARTITION"
    printf 'export WIREWISE_MULTINODE_NODES=%q\n' "$NODE_SPEC"
    printf 'export WIREWISE_MULTINODE_NET=%q\n' "$NET"
    printf 'export WIREWISE_MULTINODE_BRIDGE=%q\n' "$BRIDGE"
}

cmd_exec() {  # NODE CMD...
    validate
    use_recorded_settings
    local node=${1:?exec needs a node name} pid
    shift
    [[ ${1:-} == -- ]] && shift
    (($#)) || set -- bash
    index_of "$node" >/dev/null
    pid=$(node_pid "$node") || die "node $node is not running (start it with: $0 start)"
    # As a login on the node: its fake nvidia-smi and NVML first on the paths, as in its jobs.
    exec nsenter --target "$pid" --net --uts --mount -- env SLURM_CONF="$CONF" \
        PATH="$NODE_ROOT/bin:$PATH" PYTHONPATH="$NODE_ROOT/python${PYTHONPATH:+:$PYTHONPATH}" "$@"
}

cmd_crash() {  # NODE
    validate
    use_recorded_settings
    local node=${1:?crash needs a node name}
    index_of "$node" >/dev/null
    lock
    [[ -n $(pids_in_ns "$node") ]] || die "node $node is not running"
    say "crashing node $node: SIGKILL to its $(pids_in_ns "$node" | wc -l) processes"
    kill_node "$node" KILL
    say "node $node is gone; slurmctld marks it down within ${SLURMD_TIMEOUT}s-$((SLURMD_TIMEOUT * 2))s ($(elapsed))"
}

case ${1:-} in
    stop | status | env | exec | crash | clean) use_slurm25 ;;
esac
case ${1:-} in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    env) cmd_env ;;
    exec) shift; cmd_exec "$@" ;;
    crash) shift; cmd_crash "$@" ;;
    clean)
        cmd_stop
        if [[ -f $MARKER ]]; then rm -rf "$DIR"; say "removed $DIR"; fi ;;
    -h | --help | help) usage ;;
    *) usage ;;
esac
