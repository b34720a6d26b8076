#!/usr/bin/env bash
# What one request costs a server, from the kernel's own counters, while
# `steerd bench load` drives it: system calls per request by tracepoint (perf stat -e
# syscalls:sys_enter_*, which does not slow the server as strace does: under strace the
# server falls behind, queues build up and calls such as an accept4 that finds the queue
# empty disappear from the count), context switches (voluntary, and involuntary: the
# server preempted, by the load generator on its CPU) and task-clock per request, and the
# user / system split from /proc/PID/task/TID/stat (clock ticks, so run long enough).
# Not part of the test suite: figures depend on the machine. See docs/benchmarks.md.
#
#   scripts/per-request.sh [--close] PORT -- SERVER COMMAND...
#   scripts/per-request.sh 18080 -- target/release/steerd serve site --listen 127.0.0.1:18080
#   scripts/per-request.sh --close 18081 -- target/release/steerd bench responder \
#       --listen 127.0.0.1:18081 --cpus 0,1 --steer --close
#
# Environment: DUR (load seconds, default 8), CONNS (default 50), PATH_ (default /f.txt,
# which must exist under the server's root), PIN (default 0,1), LOAD (the steerd binary
# that generates load, default target/release/steerd). Needs perf (Debian: linux-perf).
set -euo pipefail
MODE=()
if [ "${1:-}" = --close ]; then
    MODE=(--close)
    shift
fi
PORT=$1
shift
[ "${1:-}" = -- ] && shift
DUR=${DUR:-8}
CONNS=${CONNS:-50}
URLPATH=${PATH_:-/f.txt}
PIN=${PIN:-0,1}
LOAD=${LOAD:-target/release/steerd}
OUT=$(mktemp -d)
"$@" >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true; rm -rf "$OUT"' EXIT
for _ in $(seq 50); do
    curl -sf -o /dev/null "http://127.0.0.1:$PORT$URLPATH" && break
    sleep 0.1
done
# Every thread of the server and of its children (steerd's workers), by path.
tasks() {
    for p in $SERVER $(pgrep -P $SERVER || true); do
        ls -d /proc/$p/task/* 2>/dev/null
    done
}
TASKS=$(tasks)
TIDS=$(for t in $TASKS; do basename "$t"; done | paste -sd,)
ticks() { # user and system ticks of every task, summed
    for t in $TASKS; do awk '{print $14, $15}' "$t/stat"; done | awk '{u += $1; s += $2} END {print u, s}'
}
EVENTS=task-clock,context-switches
for call in epoll_pwait accept4 read recvfrom write sendto sendmsg sendfile64 writev close getsockopt openat2; do
    EVENTS="$EVENTS,syscalls:sys_enter_$call"
done
switches() { # voluntary and involuntary context switches of every task, summed
    for t in $TASKS; do
        awk '/^voluntary_ctxt_switches/ {v = $2} /^nonvoluntary_ctxt_switches/ {n = $2}
            END {print v, n}' "$t/status"
    done | awk '{v += $1; n += $2} END {print v, n}'
}
read -r v0 n0 < <(switches)
read -r u0 s0 < <(ticks)
perf stat -x, -e "$EVENTS" -t "$TIDS" -o "$OUT/stat" -- \
    "$LOAD" bench load -c "$CONNS" -d "$DUR" --pin "$PIN" "${MODE[@]}" \
    "http://127.0.0.1:$PORT$URLPATH" >"$OUT/load" 2>&1
read -r u1 s1 < <(ticks)
read -r v1 n1 < <(switches)
REQS=$(sed -n 's/^requests: \([0-9]*\) .*/\1/p' "$OUT/load")
HZ=$(getconf CLK_TCK)
echo "requests: $REQS in ${DUR}s ($(sed -n 's/^requests\/s: //p' "$OUT/load") req/s)"
awk -v r="$REQS" -v hz="$HZ" -v du=$((u1 - u0)) -v ds=$((s1 - s0)) 'BEGIN {
    printf "user %.2f us/request, system %.2f us/request (ticks)\n", du * 1e6 / hz / r, ds * 1e6 / hz / r }'
awk -v r="$REQS" -v v=$((v1 - v0)) -v n=$((n1 - n0)) 'BEGIN {
    printf "context switches: voluntary %.3f/request, involuntary (preempted) %.3f/request\n", v / r, n / r }'
awk -F, -v r="$REQS" '$1 ~ /^[0-9.]+$/ {
    name = $3; sub("syscalls:sys_enter_", "", name)
    if (name == "task-clock") printf "task-clock %.2f us/request\n", $1 * 1000 / r
    else if ($1 > 0) printf "%s %.3f/request\n", name, $1 / r }' "$OUT/stat"
