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

# ---------------------------------------------------------------- steerd serve
PORT=8080
METRICS=9100

# serve_start ARGS...: `$SERVE_PREFIX steerd serve` on 127.0.0.1:$PORT with metrics on
# $METRICS, serving /www; waits until every planned worker says it runs on its CPU, then
# prints the policy line, worker 0's line and the processes. Sets SERVE_PID.
serve_start() {
    mkdir -p /www && echo ok >/www/a
    $SERVE_PREFIX steerd serve --listen 127.0.0.1:$PORT --metrics 127.0.0.1:$METRICS "$@" /www \
        2>/tmp/serve.log &
    SERVE_PID=$!
    i=0
    while [ $i -lt 600 ]; do
        want=$(sed -n 's/.*policy [a-z]*, \([0-9]*\) workers.*/\1/p' /tmp/serve.log)
        [ -n "$want" ] && [ "$(grep -c 'running on cpu' /tmp/serve.log)" -ge "$want" ] &&
            grep -q 'listening on' /tmp/serve.log && break
        kill -0 $SERVE_PID 2>/dev/null || break
        i=$((i + 1))
        usleep 100000
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
    grep -vE 'policy|worker [0-9]+ (cpu|pid)|listening on|metrics on|killed by signal' /tmp/serve.log |
        sed 's/^/complaint /'
}

# metrics: the accepted and local counters, one "NAME CPU VALUE" line per worker.
metrics() {
    wget -q -O - "http://127.0.0.1:$METRICS/metrics" |
        sed -nE 's/^steerd_connections_(accepted|local)_total\{.*cpu="([0-9]+)".*\} ([0-9]+)$/\1 \2 \3/p'
}

# probe CPU COUNT: COUNT requests, each on a new connection, from a client pinned to CPU;
# then one "probe CPU COUNTER WORKER_CPU DELTA" line per counter that moved.
probe() {
    metrics >/tmp/before
    i=0
    while [ $i -lt "$2" ]; do
        taskset -c "$1" wget -q -O /dev/null "http://127.0.0.1:$PORT/a" ||
            echo "probe $1 failed"
        i=$((i + 1))
    done
    metrics >/tmp/after
    awk -v from="$1" 'FNR == NR { seen[$1 " " $2] = $3; next }
        $3 > seen[$1 " " $2] { print "probe", from, $1, $2, $3 - seen[$1 " " $2] }' /tmp/before /tmp/after
}

# probe_all COUNT: probe every online CPU.
probe_all() {
    for c in $(cd /sys/devices/system/cpu && ls -d cpu[0-9]* | sed 's/cpu//' | sort -n); do
        [ "$(cat /sys/devices/system/cpu/cpu$c/online 2>/dev/null || echo 1)" = 1 ] && probe "$c" "$1"
    done
}

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
