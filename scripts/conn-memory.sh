#!/usr/bin/env bash
# scripts/conn-memory.sh - memory at scale: what an idle keep-alive connection costs a
# server, and whether a spike gives its memory back. steerd and nginx in the same run.
#
#   scripts/conn-memory.sh [STEERD] [N...]
#       STEERD  default ${CARGO_TARGET_DIR:-target}/release/steerd
#       N       connection counts, default: 1000 10000 max
#               (max: as many as the descriptor limit allows, about 2 x (hard limit - 500))
#
# For each server and each N: a fresh server with 2 workers; VmRSS and RssAnon of every
# process (master and workers, from /proc/PID/status) summed, read before any connection,
# while N idle keep-alive connections are open (each sent one request and read its
# response first), and SETTLE seconds (default 30) after they all closed. Printed per
# server and N: the three readings, and the bytes per connection (during - before) / N,
# RssAnon being the server's own memory (VmRSS adds the binary's shared pages).
#
# The client is python3 (standard library only), two processes, one pinned to each of
# CPUs 0 and 1 (with steerd's --steer cpu each worker gets one process's half), each
# spreading its connections over 16 source addresses 127.0.1.1-16 (so no address reaches
# --max-conns-per-addr). steerd runs with --max-conns sized to the descriptor limit; its
# start with the defaults is printed once first. nginx (Debian's nginx-light) runs from a
# config in a temporary directory: 2 workers, reuseport (the kernel spreads connections),
# worker_connections sized the same way, access log off, on a free port found by binding
# port 0 (nginx cannot listen on port 0 itself).
set -euo pipefail
cd "$(dirname "$0")/.."
steerd=${1:-${CARGO_TARGET_DIR:-target}/release/steerd}
shift $(($# > 0 ? 1 : 0))
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1000 10000 max)
settle=${SETTLE:-30}
nginx=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
[ -x "$steerd" ] || { echo "conn-memory: no $steerd (cargo build --release)" >&2; exit 2; }
[ -x "$nginx" ] || { echo "conn-memory: no nginx (apt-get install nginx-light)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "conn-memory: python3 is needed" >&2; exit 2; }
ulimit -n "$(ulimit -Hn)"
limit=$(ulimit -n)
per_worker=$((limit - 500))
max=$((2 * per_worker - 1000))

work=$(mktemp -d)
server=""
clients=()
cleanup() {
    [ ${#clients[@]} = 0 ] || kill "${clients[@]}" 2>/dev/null || true
    [ -z "$server" ] || kill "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/www"
echo ok >"$work/www/a"
chmod -R a+rX "$work" # nginx's workers run as nobody when started by root

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Summed kB of FIELD over the server's processes (the master and its children).
sum_kb() { # FIELD
    local total=0 pid
    for pid in "$server" $(ps -o pid= --ppid "$server"); do
        total=$((total + $(sed -n "s/^$1:\s*\([0-9]*\) kB/\1/p" "/proc/$pid/status")))
    done
    echo "$total"
}
reading() { echo "$(sum_kb VmRSS) $(sum_kb RssAnon)"; }

wait_for() { # FILE PATTERN
    for _ in $(seq 200); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "conn-memory: timed out waiting for '$2' in $1" >&2
    return 1
}

start_steerd() { # SERVE OPTIONS...
    : >"$work/steerd.log"
    "$steerd" serve --listen 127.0.0.1:0 --workers 2 "$@" "$work/www" 2>"$work/steerd.log" &
    server=$!
    wait_for "$work/steerd.log" 'running on cpu'
    for _ in $(seq 100); do
        [ "$(grep -c 'running on cpu' "$work/steerd.log")" -ge 2 ] && break
        sleep 0.1
    done
    addr=$(sed -n 's/.*listening on //p' "$work/steerd.log" | head -n 1)
}

start_nginx() {
    local port
    port=$(free_port)
    mkdir -p "$work/nginx"
    cat >"$work/nginx/nginx.conf" <<EOF
worker_processes 2;
worker_rlimit_nofile $limit;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections $per_worker; }
http {
    access_log off;
    keepalive_timeout 600s;
    keepalive_requests 1000000;
    client_body_temp_path $work/nginx/body;
    server { listen 127.0.0.1:$port reuseport; root $work/www; }
}
EOF
    "$nginx" -p "$work/nginx" -c "$work/nginx/nginx.conf" 2>>"$work/nginx/error.log" &
    server=$!
    addr=127.0.0.1:$port
    for _ in $(seq 100); do
        [ "$(ps -o pid= --ppid "$server" | wc -l)" -ge 2 ] && curl -fsS "http://$addr/a" >/dev/null 2>&1 && break
        sleep 0.1
    done
}

stop_server() {
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""
}

# One client process: COUNT connections to ADDR from 127.0.1.1-16, one request each, held
# until the file RELEASE exists, then closed.
client() { # CPU ADDR COUNT HELD RELEASE
    taskset -c "$1" python3 - "$2" "$3" "$4" "$5" <<'PY'
import os, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
n, held_flag, release = int(sys.argv[2]), sys.argv[3], sys.argv[4]
held = []
for i in range(n):
    s = socket.socket()
    s.bind((f"127.0.1.{i % 16 + 1}", 0))
    s.connect((host, int(port)))
    s.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
    got = b""
    while not got.endswith(b"\r\n\r\nok\n"):
        chunk = s.recv(4096)
        if not chunk or (len(got) < 12 <= len(got) + len(chunk) and b" 200 " not in got + chunk):
            sys.exit(f"connection {i}: {(got + chunk)[:40]!r}")
        got += chunk
    held.append(s)
open(held_flag, "w").close()
for _ in range(6000):
    if os.path.exists(release):
        break
    time.sleep(0.1)
for s in held:
    s.close()
PY
}

# Opens N connections in two client processes, reads, closes them, waits, reads.
measure() { # NAME N
    local n=$2 before during after half
    sleep 2
    before=$(reading)
    rm -f "$work"/held.* "$work/release"
    half=$((n / 2))
    client 0 "$addr" "$half" "$work/held.0" "$work/release" &
    clients=($!)
    client 1 "$addr" $((n - half)) "$work/held.1" "$work/release" &
    clients+=($!)
    for _ in $(seq 3000); do
        [ -e "$work/held.0" ] && [ -e "$work/held.1" ] && break
        kill -0 "${clients[0]}" 2>/dev/null || kill -0 "${clients[1]}" 2>/dev/null || break
        sleep 0.1
    done
    if ! [ -e "$work/held.0" ] || ! [ -e "$work/held.1" ]; then
        echo "conn-memory: $1 could not hold $n connections" >&2
        exit 1
    fi
    sleep 1
    during=$(reading)
    touch "$work/release"
    wait "${clients[@]}" 2>/dev/null || true
    clients=()
    sleep "$settle"
    after=$(reading)
    set -- "$1" "$n" $before $during $after
    awk -v name="$1" -v n="$2" -v r0="$3" -v a0="$4" -v r1="$5" -v a1="$6" -v r2="$7" -v a2="$8" 'BEGIN {
        printf "%-7s %6d  %7d / %-7d %7d / %-7d %7d / %-7d %7.0f  %7.0f  %+6.1f%%\n",
            name, n, r0, a0, r1, a1, r2, a2, (a1 - a0) * 1024 / n, (r1 - r0) * 1024 / n,
            (r2 - r0) * 100 / r0 }'
}

resolve() { [ "$1" = max ] && echo "$max" || echo "$1"; }

echo "conn-memory: $steerd ($("$steerd" --version 2>/dev/null | head -1)), $("$nginx" -v 2>&1),"
echo "  $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs," \
    "descriptor limit $limit, settle ${settle}s"
start_steerd
echo "steerd at start, defaults, 2 workers: VmRSS / RssAnon $(reading | sed 's| | / |') kB (summed)"
stop_server
echo
echo "kB summed over master and workers; B/conn = (during - before) / N"
printf '%-7s %6s  %-17s %-17s %-17s %7s  %7s  %7s\n' server N "before RSS/anon" \
    "during RSS/anon" "after RSS/anon" "anon B" "RSS B" "after"
for c in "${counts[@]}"; do
    n=$(resolve "$c")
    start_steerd --max-conns "$per_worker" --keepalive-timeout 600
    measure steerd "$n"
    stop_server
    start_nginx
    measure nginx "$n"
    stop_server
done
