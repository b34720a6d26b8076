# scripts/vm/guest.sh - shell functions sourced inside the guest (busybox sh) by the VM
# tests. They print compact, line-oriented facts; the Rust tests (tests/vm/guests.rs) compare
# them with the layout they asked for. Serial output is slow: print only what is checked.

# One line per NUMA node and per online CPU, straight from /sys:
#   node N CPULIST DISTANCES...
#   cpu N pkg=P core=CORE_CPUS package=PACKAGE_CPUS cluster=CLUSTER_CPUS|-
sys_layout() {
    # one cat per node and per CPU (a process costs a lot under TCG); the shell's own
    # `read` cannot be used: it reads byte by byte, and the cpulist files are binary
    # sysfs attributes that then read as empty
    for n in /sys/devices/system/node/node[0-9]*; do
        set -- $(cat "$n/cpulist" "$n/distance")
        list=$1
        shift
        echo "node ${n##*node} $list $*"
    done
    for c in /sys/devices/system/cpu/cpu[0-9]*; do
        t=$c/topology
        [ -d "$t" ] || continue
        set -- $(cat "$t/physical_package_id" "$t/core_cpus_list" "$t/package_cpus_list" \
            "$t/cluster_cpus_list" 2>/dev/null)
        echo "cpu ${c##*cpu} pkg=$1 core=$2 package=$3 cluster=${4:--}"
    done
}

# children PID: the PIDs whose parent is PID (field 4 of /proc/N/stat; a command name
# with a space would shift the fields, and steerd's has none).
children() {
    cat /proc/[0-9]*/stat 2>/dev/null | awk -v p="$1" '$4 == p { print $1 }'
}

# allowed PID: the CPU list the process may run on.
allowed() {
    while read -r key value; do
        [ "$key" = Cpus_allowed_list: ] && echo "$value" && return 0
    done <"/proc/$1/status"
}

# procs MASTER_PID: "master CPULIST" and "worker PID CPULIST" lines.
procs() {
    echo "master $(allowed "$1")"
    for w in $(children "$1"); do echo "worker $w $(allowed "$w")"; done
}

# wait_http PORT: until something answers on 127.0.0.1:PORT (at most ~20 s).
wait_http() {
    i=0
    while [ $i -lt 200 ]; do
        wget -q -T 2 -O /dev/null "http://127.0.0.1:$1/" 2>/dev/null && return 0
        nc -z 127.0.0.1 "$1" 2>/dev/null && return 0
        i=$((i + 1))
        usleep 100000
    done
    echo "guest: nothing answers on port $1" >&2
    return 1
}

# wait_workers MASTER_PID COUNT: until the master has COUNT children (at most ~20 s).
wait_workers() {
    i=0
    while [ $i -lt 200 ]; do
        [ "$(children "$1" | wc -l)" -ge "$2" ] && return 0
        i=$((i + 1))
        usleep 100000
    done
    echo "guest: master $1 has $(children "$1" | wc -l) workers, expected $2" >&2
    return 1
}

# ---------------------------------------------------------------- steerd serve
PORT=8080
METRICS=9100

# serve_start ARGS...: `$SERVE_PREFIX steerd serve` on ${LISTEN:-127.0.0.1}:$PORT with metrics on
# $METRICS, serving /www; waits until every planned worker says it runs on its CPU, then
# prints the policy line, worker 0's line and the processes. Sets SERVE_PID.
serve_start() {
    mkdir -p /www && echo ok >/www/a
    # As a service manager would (LimitNOFILE): room for the default --max-conns, so the
    # open-files warning, whose numbers depend on the worker count, stays out of the logs.
    ulimit -n 65536 2>/dev/null
    $SERVE_PREFIX steerd serve --listen ${LISTEN:-127.0.0.1}:$PORT --metrics 127.0.0.1:$METRICS "$@" /www \
        2>/tmp/serve.log &
    SERVE_PID=$!
    i=0
    while [ $i -lt 600 ]; do
        want=$(sed -n 's/.*policy [a-z]*, \([0-9]*\) workers.*/\1/p' /tmp/serve.log)
        [ -n "$want" ] && [ "$(grep -c 'running on cpu' /tmp/serve.log)" -ge "$want" ] &&
            grep -q 'listening on' /tmp/serve.log && break
        kill -0 $SERVE_PID 2>/dev/null || break
        i=$((i + 1))
        usleep 200000
    done
    grep -E 'policy|worker 0 cpu' /tmp/serve.log
    procs $SERVE_PID
}

# serve_stop: TERM to the master, wait for it, then every line it wrote to stderr that is
# not a startup, respawn or exit line, as "complaint ...".
serve_stop() {
    kill -TERM $SERVE_PID
    wait $SERVE_PID
    echo "stopped $?"
    grep -vE 'policy|worker [0-9]+ (cpu|pid)|listening on|metrics on|killed by signal|stopping|stopped' /tmp/serve.log |
        sed 's/^/complaint /'
}

# Probing. Under TCG on a busy host every process start in the guest costs up to a
# second, so a probe is two: one pinned busybox wget fetching the file COUNT times (a
# new connection per URL), and one fetch of /metrics after it. One awk at the end turns
# the snapshots into deltas.

# snapshot N: the raw metrics text into /tmp/snap.N.
snapshot() { wget -q -O "/tmp/snap.$1" "http://127.0.0.1:$METRICS/metrics"; }

# probe CPU... : for each CPU, COUNT (default 2, or $PROBES) requests from a client
# pinned to it; then one "probe CPU COUNTER WORKER_CPU DELTA" line per accepted/local
# counter that moved during that CPU's turn, and "probe CPU failed" for a failed client.
probe() {
    n=${PROBES:-2} urls="" j=0
    while [ $j -lt "$n" ]; do urls="$urls http://127.0.0.1:$PORT/a"; j=$((j + 1)); done
    snapshot start
    for c in "$@"; do
        taskset -c "$c" wget -q -O /dev/null $urls || echo "probe $c failed"
        snapshot "$c"
    done
    files=/tmp/snap.start
    for c in "$@"; do files="$files /tmp/snap.$c"; done
    awk -v cpus="$*" '
        BEGIN { split("start " cpus, from, " ") }
        FNR == 1 { file++ }
        match($0, /^steerd_connections_(accepted|local)_total\{.*cpu="[0-9]+"/) {
            counter = ($0 ~ /^steerd_connections_accepted/) ? "accepted" : "local"
            match($0, /cpu="[0-9]+"/)
            key = counter " " substr($0, RSTART + 5, RLENGTH - 6)
            if (file > 1 && $NF > last[key]) print "probe", from[file], key, $NF - last[key]
            last[key] = $NF
        }' $files
}

# online_cpus: the online CPU ids, ascending, from the kernel's cpulist (shell only:
# no process per CPU).
online_cpus() {
    read -r list </sys/devices/system/cpu/online
    saved_ifs=$IFS
    IFS=,
    for range in $list; do
        lo=${range%-*} hi=${range#*-}
        while [ "$lo" -le "$hi" ]; do echo "$lo"; lo=$((lo + 1)); done
    done
    IFS=$saved_ifs
}

# probe_all: probe every online CPU.
probe_all() { probe $(online_cpus); }

# respawn CPU: SIGKILL the worker pinned to CPU, wait until the master has started its
# replacement, and print "respawned CPU OLD_PID NEW_PID NEW_CPULIST".
respawn() {
    old=$(procs $SERVE_PID | awk -v c="$1" '$1 == "worker" && $3 == c { print $2 }')
    kill -KILL "$old"
    i=0
    while [ $i -lt 300 ]; do
        new=$(procs $SERVE_PID | awk -v c="$1" '$1 == "worker" && $3 == c { print $2 }')
        [ -n "$new" ] && [ "$new" != "$old" ] && break
        i=$((i + 1))
        usleep 100000
    done
    echo "respawned $1 $old ${new:-none} $(allowed "${new:-$old}" 2>/dev/null)"
    # the replacement is listed before it has pinned itself: wait for its running line
    i=0
    while [ $i -lt 300 ] && ! grep -q "pid $new running" /tmp/serve.log; do
        i=$((i + 1))
        usleep 100000
    done
}

# ---------------------------------------------------------------- the NIC (tests/vm/nic.rs)
# A multi-queue virtio-net NIC (scripts/vm/run.sh --nic) whose traffic comes from the host.
# The host waits for a `ready NAME` line on stdout before each step it drives.
NIC_ADDR=10.77.0.2

# nic_up: loads the driver shipped in /lib/modules/nic (dependencies first), gives the
# first interface that is not lo the address $NIC_ADDR/24 and brings it up. Sets NIC (the
# interface), NIC_DEV (its virtio device name) and NIC_PCI (the PCI function's directory).
nic_up() {
    for m in $(cat /lib/modules/nic/order); do insmod "/lib/modules/nic/$m.ko" || return 1; done
    NIC=
    for n in /sys/class/net/*; do [ "${n##*/}" = lo ] || { NIC=${n##*/}; break; }; done
    [ -n "$NIC" ] || { echo "guest: no interface besides lo after loading virtio_net" >&2; return 1; }
    NIC_DEV=$(readlink -f "/sys/class/net/$NIC/device")
    NIC_PCI=${NIC_DEV%/*}
    NIC_DEV=${NIC_DEV##*/}
    ip addr add "$NIC_ADDR/24" dev "$NIC" && ip link set "$NIC" up
}

# nic_queue_irqs: "IRQ NAME" for each queue interrupt (virtioN-input.Q, virtioN-output.Q).
nic_queue_irqs() {
    awk -v dev="$NIC_DEV" '$NF ~ "^" dev "-(in|out)put[.]" { sub(":", "", $1); print $1, $NF }' /proc/interrupts
}

# nic_facts: "nic IF queues=RX node=N local=LIST" from the PCI function, then one
# "irq N NAME smp=LIST eff=LIST" per MSI vector of the device (queues and config).
nic_facts() {
    set -- /sys/class/net/$NIC/queues/rx-*
    set -- $# $(cat "$NIC_PCI/numa_node" "$NIC_PCI/local_cpulist")
    echo "nic $NIC queues=$1 node=$2 local=$3"
    awk -v dev="$NIC_DEV" '$NF ~ "^" dev "-" { sub(":", "", $1); print $1, $NF }' /proc/interrupts >/tmp/irq.names
    for i in $(ls "$NIC_PCI/msi_irqs"); do
        set -- $(cat /proc/irq/$i/smp_affinity_list /proc/irq/$i/effective_affinity_list)
        echo "irq $i $(awk -v i=$i '$1 == i { print $2 }' /tmp/irq.names) smp=$1 eff=$2"
    done
}

# nic_affine CPU: every queue interrupt of the NIC affine to CPU.
nic_affine() {
    nic_queue_irqs | while read -r irq name; do echo "$1" >"/proc/irq/$irq/smp_affinity_list"; done
}

# rx_packets: the NIC's received packet count.
rx_packets() { cat "/sys/class/net/$NIC/statistics/rx_packets"; }

# nic_prime NAME COUNT: asks the host (`ready NAME`) for COUNT datagrams from as many
# source ports, and waits until at least half have arrived (at most ~60 s). On x86 an
# MSI's new affinity takes effect at its next interrupt, so after an affinity change
# every receive queue must see a packet before effective_affinity_list is current.
nic_prime() {
    from=$(rx_packets)
    echo "ready $1"
    i=0
    while [ $i -lt 300 ] && [ $(($(rx_packets) - from)) -lt $(($2 / 2)) ]; do
        i=$((i + 1))
        usleep 200000
    done
    sleep 1
    echo "primed $1 $(($(rx_packets) - from))"
}

# accepted_total: connections accepted by all workers so far.
accepted_total() {
    wget -q -O - "http://127.0.0.1:$METRICS/metrics" |
        awk '/^steerd_connections_accepted_total\{.*cpu="/ { s += $NF } END { print s + 0 }'
}

# nic_round NAME COUNT: with steerd serving on the NIC, snapshots the metrics and
# /proc/interrupts, asks the host (`ready NAME`) for COUNT connections, waits until they
# have been accepted (at most ~240 s), snapshots again and prints the deltas:
#   conn CPU ACCEPTED LOCAL   per worker CPU whose counters moved
#   irq CPU COUNT             per CPU: increase of the NIC's receive-queue interrupts
nic_round() {
    snapshot before
    cp /proc/interrupts /tmp/irq.before
    want=$(($(accepted_total) + $2))
    echo "ready $1"
    i=0
    while [ $i -lt 480 ] && [ "$(accepted_total)" -lt $want ]; do
        i=$((i + 1))
        usleep 500000
    done
    snapshot after
    cp /proc/interrupts /tmp/irq.after
    awk '
        FNR == 1 { file++ }
        match($0, /^steerd_connections_(accepted|local)_total\{.*cpu="[0-9]+"/) {
            k = ($0 ~ /^steerd_connections_accepted/) ? 1 : 2
            match($0, /cpu="[0-9]+"/)
            c = substr($0, RSTART + 5, RLENGTH - 6)
            v[file, k, c] = $NF
            cpus[c] = 1
        }
        END {
            for (c in cpus) {
                a = v[2, 1, c] - v[1, 1, c]; l = v[2, 2, c] - v[1, 2, c]
                if (a > 0 || l > 0) print "conn", c, a, l
            }
        }' /tmp/snap.before /tmp/snap.after
    awk -v dev="$NIC_DEV" '
        FNR == 1 { file++; ncpu = NF; next }
        $NF ~ "^" dev "-input[.]" { for (c = 0; c < ncpu; c++) n[file, c] += $(c + 2) }
        END { for (c = 0; c < ncpu; c++) if (n[2, c] > n[1, c]) print "irq", c, n[2, c] - n[1, c] }
    ' /tmp/irq.before /tmp/irq.after
}

# ---------------------------------------------------------------- footprint
# huge_pages MASTER_PID: the kernel's transparent huge page mode ("thp always", "thp
# madvise", "thp never", or "thp none" on a kernel without them), then "PID KB" for the
# master and each worker: the huge pages among its anonymous memory (AnonHugePages of
# /proc/PID/smaps_rollup; 0 when the field is missing).
huge_pages() {
    mode=none
    [ -r /sys/kernel/mm/transparent_hugepage/enabled ] &&
        mode=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled)
    echo "thp $mode"
    for p in $1 $(children $1); do
        echo "$p $(awk '$1 == "AnonHugePages:" { k = $2 } END { print k + 0 }' /proc/$p/smaps_rollup)"
    done
}

# idle_rss: a 1-worker server (`steerd serve --workers 1`) after one request and a second
# idle, as scripts/idle-rss.sh measures it on the host: "master VMRSS RSSANON HUGE" and
# "worker VMRSS RSSANON HUGE" in kB, from /proc/PID/status (HUGE: the transparent huge
# pages among them, AnonHugePages of /proc/PID/smaps_rollup). In a guest these are steerd's own
# pages on that CPU's kernel, with no emulator in the process.
idle_rss() {
    mkdir -p /www && echo ok >/www/a
    steerd serve --listen 127.0.0.1:$PORT --workers 1 /www 2>/tmp/serve.log &
    SERVE_PID=$!
    i=0
    until grep -q 'running on cpu' /tmp/serve.log && grep -q 'listening on' /tmp/serve.log; do
        i=$((i + 1))
        [ $i -lt 200 ] && kill -0 $SERVE_PID 2>/dev/null || { cat /tmp/serve.log >&2; return 1; }
        usleep 100000
    done
    wget -q -O /dev/null "http://127.0.0.1:$PORT/a"
    sleep 1
    for p in $SERVE_PID $(children $SERVE_PID); do
        [ $p = $SERVE_PID ] && role=master || role=worker
        echo "$role $(awk '$1 == "VmRSS:" || $1 == "RssAnon:" { printf " %s", $2 }' /proc/$p/status)" \
            "$(awk '$1 == "AnonHugePages:" { print $2 }' /proc/$p/smaps_rollup)"
    done
    kill -TERM $SERVE_PID
    wait $SERVE_PID
}
