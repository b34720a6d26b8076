# scripts/vm/guest.sh - shell functions sourced inside the guest (busybox sh) by the VM
# tests. They print compact, line-oriented facts; the Rust tests (tests/vm.rs) compare
# them with the layout they asked for. Serial output is slow: print only what is checked.

# One line per NUMA node and per online CPU, straight from /sys:
#   node N CPULIST DISTANCES...
#   cpu N pkg=P core=CORE_CPUS package=PACKAGE_CPUS cluster=CLUSTER_CPUS|-
sys_layout() {
    for n in /sys/devices/system/node/node[0-9]*; do
        echo "node ${n##*node} $(cat "$n/cpulist") $(cat "$n/distance")"
    done
    for c in /sys/devices/system/cpu/cpu[0-9]*; do
        t=$c/topology
        [ -d "$t" ] || continue
        echo "cpu ${c##*cpu} pkg=$(cat "$t/physical_package_id") core=$(cat "$t/core_cpus_list")" \
            "package=$(cat "$t/package_cpus_list") cluster=$(cat "$t/cluster_cpus_list" 2>/dev/null || echo -)"
    done
}

# children PID: the PIDs whose parent is PID (field 4 of /proc/N/stat; a command name
# with a space would shift the fields, and steerd's has none).
children() {
    cat /proc/[0-9]*/stat 2>/dev/null | awk -v p="$1" '$4 == p { print $1 }'
}

# allowed PID: the CPU list the process may run on.
allowed() { sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$1/status"; }

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
