#!/usr/bin/env bash
# scripts/conn-memory.sh - memory at scale: what an idle keep-alive connection costs a
# server, and whether a spike gives its memory back. steerd and nginx in the same run.
#
#   scripts/conn-memory.sh [STEERD] [N...]
#       STEERD  default ${CARGO_TARGET_DIR:-target}/release/steerd
#       N       connection counts, default: 1000 10000 max
#               (max: as many as the descriptor limit allows, about 2 x (hard limit - 500))
#               busy:N  N BUSY connections instead (busy:max allowed), see below
#               proxy:N N idle connections after a proxied answer, see below
#               held:N  N requests in flight held at a silent upstream, see below
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
#
# busy:N (for example `scripts/conn-memory.sh STEERD busy:30000`): N keep-alive connections
# from four python3 clients (two pinned to each CPU, each under the descriptor limit), all
# opened first, then each sending requests back to back (one in flight) for BUSY seconds
# (default 10) while VmRSS and RssAnon summed over the server's processes are read every
# 0.2 s. Printed per server: the reading before, with the N connections open, the peak
# while busy, and the responses per second the clients counted. These rows come after the
# idle ones, under their own header.
#
# proxy:N and held:N measure the app path: both servers forward /p/ to one upstream on a
# unix socket (a python3 process, standard library only: steerd `--proxy '/p/** unix:SOCK'`,
# nginx `proxy_pass http://unix:SOCK`, each with its defaults otherwise: a connection per
# exchange, no upstream keep-alive). proxy:N is the idle measurement above with each
# connection's one request forwarded (the upstream answers `ok` at once): what an idle
# keep-alive connection costs after a proxied answer. held:N sends each connection's
# request to an upstream that reads it and never answers, and reads once the upstream holds
# all N (steerd with `--proxy-max-conns N --proxy-timeout 600`, nginx with
# `proxy_read_timeout 600s`): what a request in flight costs, its client connection and its
# upstream connection included. Their rows come under the idle header, named `proxy` and
# `held` after the server.
set -euo pipefail
cd "$(dirname "$0")/.."
steerd=${1:-${CARGO_TARGET_DIR:-target}/release/steerd}
shift $(($# > 0 ? 1 : 0))
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1000 10000 max)
settle=${SETTLE:-30}
busy=${BUSY:-10}
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
upstream=""
clients=()
cleanup() {
    [ ${#clients[@]} = 0 ] || kill "${clients[@]}" 2>/dev/null || true
    [ -z "$server" ] || kill "$server" 2>/dev/null || true
    [ -z "$upstream" ] || kill "$upstream" 2>/dev/null || true
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

start_nginx() { # [LOCATION]
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
    server { listen 127.0.0.1:$port reuseport; root $work/www; ${1:-} }
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

# One client process: COUNT connections to ADDR from 127.0.1.1-16, one request each for
# $path (its answer read unless $answered is 0), held until the file RELEASE exists, then
# closed.
path=/a answered=1
client() { # CPU ADDR COUNT HELD RELEASE
    taskset -c "$1" python3 - "$2" "$3" "$4" "$5" "$path" "$answered" <<'PY'
import os, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
n, held_flag, release = int(sys.argv[2]), sys.argv[3], sys.argv[4]
path, answered = sys.argv[5], sys.argv[6] == "1"
held = []
for i in range(n):
    s = socket.socket()
    s.bind((f"127.0.1.{i % 16 + 1}", 0))
    s.connect((host, int(port)))
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    # Not answered (held:N): the loop below has nothing to wait for.
    got = b"" if answered else b"\r\n\r\nok\n"
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
    if [ "$answered" = 0 ]; then
        for _ in $(seq 3000); do
            [ "$(cat "$work/up.count" 2>/dev/null || echo 0)" -ge "$n" ] && break
            sleep 0.1
        done
        [ "$(cat "$work/up.count" 2>/dev/null || echo 0)" -ge "$n" ] || {
            echo "conn-memory: $1: the upstream holds $(cat "$work/up.count") of $n requests" >&2
            exit 1
        }
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
        printf "%-12s %6d  %7d / %-7d %7d / %-7d %7d / %-7d %7.0f  %7.0f  %+6.1f%%\n",
            name, n, r0, a0, r1, a1, r2, a2, (a1 - a0) * 1024 / n, (r1 - r0) * 1024 / n,
            (r2 - r0) * 100 / r0 }'
}

# One busy client process: COUNT connections to ADDR from 127.0.1.1-16; once all are open
# (the file HELD made), requests back to back on each for SECONDS; the answers counted are
# written to the file DONE.
busy_client() { # CPU ADDR COUNT HELD SECONDS DONE
    taskset -c "$1" python3 - "$2" "$3" "$4" "$5" "$6" <<'PY'
import select, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
n, held_flag, seconds, done_file = int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5]
request, tail = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", b"\r\n\r\nok\n"
by_fd = {}
for i in range(n):
    s = socket.socket()
    s.bind((f"127.0.1.{i % 16 + 1}", 0))
    s.connect((host, int(port)))
    s.setblocking(False)
    by_fd[s.fileno()] = s
open(held_flag, "w").close()
poll, got, answers = select.epoll(), {}, 0
for fd, s in by_fd.items():
    poll.register(fd, select.EPOLLIN)
    got[fd] = b""
    s.send(request)
end = time.monotonic() + seconds
while time.monotonic() < end:
    for fd, _ in poll.poll(0.1):
        chunk = by_fd[fd].recv(65536)
        if not chunk:
            sys.exit(f"connection {fd} closed by the server")
        got[fd] += chunk
        if got[fd].endswith(tail):
            if not got[fd].startswith(b"HTTP/1.1 200 "):
                sys.exit(f"connection {fd}: {got[fd][:40]!r}")
            answers, got[fd] = answers + 1, b""
            by_fd[fd].send(request)
open(done_file, "w").write(f"{answers}\n")
PY
}

# Opens N connections in four client processes, reads, keeps them busy BUSY seconds while
# reading every 0.2 s, prints the peak.
measure_busy() { # NAME N
    local n=$2 before open peak_rss=0 peak_anon=0 i r a answers
    sleep 2
    before=$(reading)
    rm -f "$work"/held.* "$work"/done.*
    for i in 0 1 2 3; do
        busy_client $((i % 2)) "$addr" $(((n + i) / 4)) "$work/held.$i" "$busy" "$work/done.$i" &
        clients+=($!)
    done
    for _ in $(seq 3000); do
        [ "$(ls "$work"/held.* 2>/dev/null | wc -l)" = 4 ] && break
        sleep 0.1
    done
    open=$(reading)
    while kill -0 "${clients[@]}" 2>/dev/null; do
        read -r r a <<<"$(reading)"
        [ "$r" -le "$peak_rss" ] || peak_rss=$r
        [ "$a" -le "$peak_anon" ] || peak_anon=$a
        sleep 0.2
    done
    wait "${clients[@]}" 2>/dev/null || true
    clients=()
    if [ "$(ls "$work"/done.* 2>/dev/null | wc -l)" != 4 ]; then
        echo "conn-memory: $1 could not keep $n connections busy" >&2
        exit 1
    fi
    answers=$(cat "$work"/done.* | awk '{ t += $1 } END { print t }')
    printf '%-7s %6d  %7d / %-7d %7d / %-7d %7d / %-7d %9.0f\n' "$1" "$n" $before $open \
        "$peak_rss" "$peak_anon" "$((answers / busy))"
}

# The upstream on $work/up.sock: MODE answer (`ok` to each request at once) or silent
# (reads, never answers); the count of connections it accepted kept in $work/up.count.
start_upstream() { # MODE
    rm -f "$work/up.sock" "$work/up.count"
    python3 - "$1" "$work/up.sock" "$work/up.count" <<'PY' &
import os, selectors, socket, sys
mode, path, count_file = sys.argv[1:4]
listener = socket.socket(socket.AF_UNIX)
listener.bind(path)
os.chmod(path, 0o777) # nginx's workers run as nobody when started by root
listener.listen(4096)
listener.setblocking(False)
sel, accepted = selectors.DefaultSelector(), 0
sel.register(listener, selectors.EVENT_READ)
answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n"
got = {}
while True:
    for key, _ in sel.select():
        if key.fileobj is listener:
            while True:
                try:
                    conn, _ = listener.accept()
                except BlockingIOError:
                    break
                conn.setblocking(False)
                sel.register(conn, selectors.EVENT_READ)
                got[conn] = b""
                accepted += 1
            with open(count_file + ".new", "w") as f:
                f.write(f"{accepted}\n")
            os.replace(count_file + ".new", count_file)
            continue
        conn = key.fileobj
        try:
            chunk = conn.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            sel.unregister(conn)
            del got[conn]
            conn.close()
            continue
        got[conn] += chunk
        if mode == "answer" and b"\r\n\r\n" in got[conn]:
            got[conn] = b""
            conn.sendall(answer)
PY
    upstream=$!
    for _ in $(seq 100); do
        [ -S "$work/up.sock" ] && return 0
        sleep 0.1
    done
    echo "conn-memory: the upstream did not start" >&2
    exit 1
}

stop_upstream() {
    kill "$upstream" 2>/dev/null || true
    wait "$upstream" 2>/dev/null || true
    upstream=""
}

# MEASURE (measure or measure_busy) with N connections against a fresh steerd, then nginx;
# with KIND proxy or held, both forward /p/ to the upstream.
both() { # MEASURE N [KIND]
    local kind=${3:-}
    local steerd_proxy=() nginx_proxy=""
    if [ -n "$kind" ]; then
        start_upstream "$([ "$kind" = held ] && echo silent || echo answer)"
        steerd_proxy=(--proxy "/p/** unix:$work/up.sock" --proxy-max-conns "$2"
            --proxy-timeout 600)
        nginx_proxy="location /p/ { proxy_pass http://unix:$work/up.sock; proxy_read_timeout 600s; }"
        path=/p/a
        answered=$([ "$kind" = held ] && echo 0 || echo 1)
    fi
    start_steerd --max-conns "$per_worker" --keepalive-timeout 600 "${steerd_proxy[@]}"
    "$1" "steerd${kind:+ $kind}" "$2"
    stop_server
    start_nginx "$nginx_proxy"
    "$1" "nginx${kind:+ $kind}" "$2"
    stop_server
    [ -z "$kind" ] || stop_upstream
    path=/a answered=1
}

resolve() { [ "$1" = max ] && echo "$max" || echo "$1"; }

echo "conn-memory: $steerd ($("$steerd" --version 2>/dev/null | head -1)), $("$nginx" -v 2>&1),"
echo "  $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs," \
    "descriptor limit $limit, settle ${settle}s"
start_steerd
echo "steerd at start, defaults, 2 workers: VmRSS / RssAnon $(reading | sed 's| | / |') kB (summed)"
stop_server
idle=() busy_counts=()
for c in "${counts[@]}"; do
    case $c in
    busy:*) busy_counts+=("$(resolve "${c#busy:}")") ;;
    proxy:* | held:*) idle+=("${c%%:*}:$(resolve "${c#*:}")") ;;
    *) idle+=("$(resolve "$c")") ;;
    esac
done
if [ ${#idle[@]} -gt 0 ]; then
    echo
    echo "kB summed over master and workers; B/conn = (during - before) / N"
    printf '%-12s %6s  %-17s %-17s %-17s %7s  %7s  %7s\n' server N "before RSS/anon" \
        "during RSS/anon" "after RSS/anon" "anon B" "RSS B" "after"
fi
for n in "${idle[@]}"; do
    case $n in
    *:*) both measure "${n#*:}" "${n%%:*}" ;;
    *) both measure "$n" ;;
    esac
done
[ ${#busy_counts[@]} = 0 ] && exit 0
echo
echo "busy: kB summed over master and workers, peak read every 0.2 s for ${busy}s of requests"
printf '%-7s %6s  %-17s %-17s %-17s %9s\n' server N "before RSS/anon" "open RSS/anon" \
    "peak RSS/anon" "answers/s"
for n in "${busy_counts[@]}"; do both measure_busy "$n"; done
